#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in conformance/mcp-suite.package.json) against plugboard: it builds
# the fixture plugin conformance/mcpfixture, starts `plugboard serve --http`
# on a free loopback port with only that plugin, and runs the suite's ACTIVE
# server scenarios for spec version 2025-11-25. It exits non-zero when any
# check fails. `make conformance-mcp` runs it.
#
# The suite needs Node.js >= 22; it and its Node come from the npm registry
# into .cache/mcp-conformance (npm ci against the committed lockfile), once
# per change of the pinned versions. Nothing is installed globally.
#
# Environment: BIN (default bin/plugboard), SPEC_VERSION (2025-11-25),
# SUITE (active), MCP_SUITE_KEEP=1 keeps the work directory (results, server
# log) and prints where it is.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
BIN=${BIN:-bin/plugboard}
SPEC_VERSION=${SPEC_VERSION:-2025-11-25}
SUITE=${SUITE:-active}
cache=$root/.cache/mcp-conformance

say() { printf '==> %s\n' "$*"; }

# 1. The suite and its Node.js, installed into the cache when the pinned
# package set changed (the lockfile is the stamp).
if ! cmp -s conformance/mcp-suite.package-lock.json "$cache/package-lock.json" ||
	[ ! -e "$cache/node_modules/@modelcontextprotocol/conformance/package.json" ]; then
	command -v npm >/dev/null || { echo "mcp-suite: npm is needed to install the conformance suite" >&2; exit 1; }
	say "installing the MCP conformance suite into .cache/mcp-conformance"
	mkdir -p "$cache"
	cp conformance/mcp-suite.package.json "$cache/package.json"
	cp conformance/mcp-suite.package-lock.json "$cache/package-lock.json"
	# engine-strict is off: npm may itself run on an older Node than the
	# one it installs for the suite.
	(cd "$cache" && npm ci --no-audit --no-fund --loglevel=error)
fi
node=$cache/node_modules/.bin/node
if [ ! -x "$node" ]; then
	node=$(command -v node || true)
fi
major=$("$node" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 22 ]; then
	echo "mcp-suite: the conformance suite needs Node.js >= 22, found ${major} ($node)" >&2
	exit 1
fi
suite_js=$cache/node_modules/@modelcontextprotocol/conformance/dist/index.js

# 2. The fixture plugin, alone in its plugin directory.
work=$(mktemp -d "${TMPDIR:-/tmp}/plugboard-mcp-suite.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$server_pid" 2>/dev/null || true
	fi
	if [ "${MCP_SUITE_KEEP:-}" = 1 ]; then
		echo "mcp-suite: kept $work (results/, server.log)"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
mkdir -p "$work/plugins" "$work/data"
say "building the fixture plugin conformance/mcpfixture"
"$BIN" plugin build conformance/mcpfixture -o "$work/plugins/mcpfixture.wasm" >/dev/null

# 3. The server, on a free loopback port: its URL is the one line it prints
# on stderr once it listens.
say "starting $BIN serve --http 127.0.0.1:0"
"$BIN" serve --http 127.0.0.1:0 --plugins "$work/plugins" --data "$work/data" --log-level warn 2>"$work/server.log" &
server_pid=$!
url=
for _ in $(seq 300); do
	url=$(sed -n 's/^plugboard: serving MCP over HTTP at \(http:[^ ]*\).*/\1/p' "$work/server.log" | head -n1)
	[ -n "$url" ] && break
	if ! kill -0 "$server_pid" 2>/dev/null; then
		echo "mcp-suite: the server exited before listening:" >&2
		cat "$work/server.log" >&2
		exit 1
	fi
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "mcp-suite: the server did not report its URL within 30s:" >&2
	cat "$work/server.log" >&2
	exit 1
fi

# 4. The suite. Its exit status is non-zero when a check failed.
say "running the $SUITE server suite for spec $SPEC_VERSION against $url"
status=0
"$node" "$suite_js" server --url "$url" --suite "$SUITE" --spec-version "$SPEC_VERSION" \
	--output-dir "$work/results" >"$work/suite.log" 2>&1 || status=$?
# The per-check lines of failures and the summary; the whole log when
# something failed.
if [ "$status" -ne 0 ]; then
	cat "$work/suite.log"
	echo "mcp-suite: server log:" >&2
	tail -n 50 "$work/server.log" >&2
	echo "mcp-suite: FAILED (exit $status)" >&2
	exit "$status"
fi
sed -n '/=== SUMMARY ===/,$p' "$work/suite.log"
say "MCP conformance: every check of the $SUITE suite ($SPEC_VERSION) passed"
