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

# Test packages run in parallel and each may call this: one installs at a
# time (the lock), the others then find the install done.
mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
if ! cmp -s "$src/package-lock.json" "$cache/.installed-lock.json" ||
	[ ! -s "$cache/node_modules/axe-core/axe.min.js" ]; then
	command -v npm >/dev/null || { echo "a11y: npm is needed to install axe-core for the accessibility checks" >&2; exit 1; }
	echo "==> installing axe-core into .cache/a11y" >&2
	mkdir -p "$cache"
	# .installed-lock.json is the stamp of a finished install: removed
	# first, written once npm ci has succeeded.
	rm -f "$cache/.installed-lock.json"
	cp "$src/package.json" "$cache/package.json"
	cp "$src/package-lock.json" "$cache/package-lock.json"
	if ! (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error >&2); then
		exit 1
	fi
	cp "$cache/package-lock.json" "$cache/.installed-lock.json.new"
	mv "$cache/.installed-lock.json.new" "$cache/.installed-lock.json"
fi
echo "$cache"
