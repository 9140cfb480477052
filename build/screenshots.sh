#!/usr/bin/env bash
# Regenerates the README's screenshots (docs/screenshots/*.png): runs the
# dashboard's browser tests that take them (the tests of cmd/plugboard/e2e
# whose body calls screenshotDir, found here so that a new one is picked up)
# with PLUGBOARD_UPDATE_SCREENSHOTS=1, which makes them write into
# docs/screenshots instead of a temporary directory, then lists the files
# written and any left untouched. The tests drive the real binary in headless
# Chromium: without Chromium this fails (install it with `make browser`).
#
#   bash build/screenshots.sh      (or: make screenshots)
#
# GO names the go command (default: go in PATH, else /usr/local/go/bin/go).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
# The tests build plugins with the go command in PATH: make it $GO's.
PATH="$("$GO" env GOROOT)/bin:$PATH"
export PATH

chromium=""
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		chromium=$(command -v "$b")
		break
	fi
done
if [ -z "$chromium" ] && [ -x /usr/bin/chromium ]; then
	chromium=/usr/bin/chromium
fi
if [ -z "$chromium" ]; then
	echo "screenshots: FAILED: no Chromium found (chromium, chromium-browser or google-chrome in PATH, or /usr/bin/chromium)." >&2
	echo "screenshots: the screenshots are taken by the browser tests in headless Chromium; install it with" >&2
	echo "screenshots:     make browser      (build/install-chromium.sh: Debian's chromium, as root)" >&2
	exit 1
fi

# Each Test function of the e2e package that asks for screenshotDir takes
# screenshots; the others are not run.
mapfile -t tests < <(awk '
	/^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name) }
	/^}$/ { name = "" }
	name != "" && /screenshotDir\(/ { print name; name = "" }
' cmd/plugboard/e2e/*_test.go | sort -u)
if [ "${#tests[@]}" -eq 0 ]; then
	echo "screenshots: FAILED: no test in cmd/plugboard/e2e calls screenshotDir" >&2
	exit 1
fi
run="^($(IFS='|'; echo "${tests[*]}"))\$"

out=docs/screenshots
mkdir -p "$out"
stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT
# mtimes have a resolution: files written in the same instant as the stamp
# must count as newer.
sleep 1

echo "==> regenerating $out/*.png with the dashboard's browser tests ($chromium):"
printf '      %s\n' "${tests[@]}"
echo "\$ PLUGBOARD_UPDATE_SCREENSHOTS=1 PLUGBOARD_REQUIRE_BROWSER=1 $GO test ./cmd/plugboard/e2e -run '$run' -count=1 -timeout 30m"
if ! PLUGBOARD_UPDATE_SCREENSHOTS=1 PLUGBOARD_REQUIRE_BROWSER=1 \
	"$GO" test ./cmd/plugboard/e2e -run "$run" -count=1 -timeout 30m; then
	echo "screenshots: FAILED: a test failed; the screenshots it reached were written, the rest are as they were" >&2
	exit 1
fi

echo "==> written:"
written=$(find "$out" -maxdepth 1 -name '*.png' -newer "$stamp" | sort)
if [ -z "$written" ]; then
	echo "screenshots: FAILED: the tests passed but wrote no screenshot into $out" >&2
	exit 1
fi
while read -r f; do
	printf '      %s (%s bytes)\n' "$f" "$(stat -c %s "$f")"
done <<<"$written"
stale=$(find "$out" -maxdepth 1 -name '*.png' ! -newer "$stamp" | sort)
if [ -n "$stale" ]; then
	echo "==> not written by any test (stale, or no longer used: remove them or add a test that takes them):"
	sed 's/^/      /' <<<"$stale"
fi
echo "==> review the changes with: git status $out"
