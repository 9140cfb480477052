#!/usr/bin/env bash
# Installs axe-core, the accessibility rules engine the browser tests inject
# into pages (pinned in internal/testing/a11y/package-lock.json), into
# .cache/a11y with `npm ci`, only when the lockfile changed since the last
# install. axe-core runs inside the browser, so no Node.js is installed with
# it: npm is only the installer. Nothing is installed globally. Prints the
# cache directory on stdout.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
src=internal/testing/a11y
cache=$PWD/.cache/a11y

if ! cmp -s "$src/package-lock.json" "$cache/package-lock.json" ||
	[ ! -s "$cache/node_modules/axe-core/axe.min.js" ]; then
	command -v npm >/dev/null || { echo "a11y: npm is needed to install axe-core for the accessibility checks" >&2; exit 1; }
	echo "==> installing axe-core into .cache/a11y" >&2
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
echo "$cache"
