#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance)
# against plugboard: it builds the fixture plugin conformance/mcpfixture,
# starts `plugboard serve --http` on a free loopback port with only that
# plugin, and runs against that one server
#
#   - the stable suite (conformance/mcp-suite.package.json): its ACTIVE server
#     scenarios for spec version 2025-11-25;
#   - the alpha (conformance/mcp-suite-alpha.package.json) twice, with
#     --requirements 2026-07-28 and --requirements 2025-11-25: exactly the
#     scenarios each revision requires, each at its own wire version.
#
# It exits non-zero when any run does. The alpha also runs, and lists under
# "Not scored for <rev>", extension and pending scenarios; its exit status
# counts only the scored ones (a FAILURE check in a required scenario).
# `make conformance-mcp` runs it.
#
# The suites need Node.js >= 22; each suite and its Node come from the npm
# registry into its own cache directory (.cache/mcp-conformance,
# .cache/mcp-conformance-alpha) with npm ci against the committed lockfile,
# once per change of the pinned versions. Nothing is installed globally.
#
# Environment: BIN (default bin/plugboard), SPEC_VERSION (2025-11-25) and
# SUITE (active) of the stable run, MCP_SUITE_KEEP=1 keeps the work
# directory (results*/, *.log, server.log) and prints where it is.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
BIN=${BIN:-bin/plugboard}
SPEC_VERSION=${SPEC_VERSION:-2025-11-25}
SUITE=${SUITE:-active}

say() { printf '==> %s\n' "$*"; }

# 1. The suites and their Node.js, each installed into its cache when its
# pinned package set changed (the lockfile is the stamp). install NAME DIR
# installs conformance/NAME.package{,-lock}.json into DIR and sets node and
# suite_js.
install() {
	local name=$1 cache=$2
	if ! cmp -s "conformance/$name.package-lock.json" "$cache/package-lock.json" ||
		[ ! -e "$cache/node_modules/@modelcontextprotocol/conformance/package.json" ]; then
		command -v npm >/dev/null || { echo "mcp-suite: npm is needed to install the conformance suite" >&2; exit 1; }
		say "installing the MCP conformance suite ($name) into ${cache#"$root/"}"
		mkdir -p "$cache"
		cp "conformance/$name.package.json" "$cache/package.json"
		cp "conformance/$name.package-lock.json" "$cache/package-lock.json"
		# engine-strict is off: npm may itself run on an older Node than the
		# one it installs for the suite.
		(cd "$cache" && npm ci --no-audit --no-fund --loglevel=error)
	fi
	node=$cache/node_modules/.bin/node
	if [ ! -x "$node" ]; then
		node=$(command -v node || true)
	fi
	local major
	major=$("$node" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
	if [ "$major" -lt 22 ]; then
		echo "mcp-suite: the conformance suite needs Node.js >= 22, found ${major} ($node)" >&2
		exit 1
	fi
	suite_js=$cache/node_modules/@modelcontextprotocol/conformance/dist/index.js
}
install mcp-suite "$root/.cache/mcp-conformance"
stable_node=$node stable_js=$suite_js
install mcp-suite-alpha "$root/.cache/mcp-conformance-alpha"
alpha_node=$node alpha_js=$suite_js

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
		echo "mcp-suite: kept $work (results*/, the runs' *.log, server.log)"
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

# 4. The runs, one after the other against the same server. run NAME
# NODE JS ARGS... runs one into $work/NAME.log and records a failure;
# every run happens even after one failed, so one report shows them all.
failed=()
run() {
	local name=$1 node=$2 js=$3 status=0
	shift 3
	say "running $name against $url"
	"$node" "$js" server --url "$url" "$@" >"$work/$name.log" 2>&1 || status=$?
	if [ "$status" -ne 0 ]; then
		cat "$work/$name.log"
		echo "mcp-suite: $name FAILED (exit $status)" >&2
		failed+=("$name")
		return
	fi
	# The summary, with the alpha's unscored scenarios, of a run that passed.
	sed -n '/=== SUMMARY ===/,$p' "$work/$name.log"
}
run "stable-$SUITE-$SPEC_VERSION" "$stable_node" "$stable_js" --suite "$SUITE" --spec-version "$SPEC_VERSION" \
	--output-dir "$work/results"
for rev in 2026-07-28 2025-11-25; do
	run "alpha-requirements-$rev" "$alpha_node" "$alpha_js" --requirements "$rev" --output-dir "$work/results-alpha-$rev"
done
if [ "${#failed[@]}" -ne 0 ]; then
	echo "mcp-suite: server log:" >&2
	tail -n 50 "$work/server.log" >&2
	echo "mcp-suite: FAILED: ${failed[*]}" >&2
	exit 1
fi
say "MCP conformance: the $SUITE suite ($SPEC_VERSION) and the alpha's requirements for 2026-07-28 and 2025-11-25 passed"
