#!/usr/bin/env bash
# Makes sure a Chromium browser is installed, for the tests that drive pages
# in a real browser (internal/testing/browsertest starts it headless, with a throwaway
# profile of its own). Idempotent: does nothing when chromium or
# chromium-browser is in PATH or /usr/bin/chromium exists. Otherwise installs
# Debian's chromium package (with fonts-dejavu-core, so pages render text in
# screenshots), which needs root and apt-get.
set -euo pipefail

find_chromium() {
	local b
	for b in chromium chromium-browser; do
		if command -v "$b" >/dev/null 2>&1; then
			command -v "$b"
			return 0
		fi
	done
	if [ -x /usr/bin/chromium ]; then
		echo /usr/bin/chromium
		return 0
	fi
	return 1
}

if bin=$(find_chromium); then
	echo "install-chromium: Chromium already installed ($bin)"
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-chromium: no Chromium (chromium, chromium-browser) found, and cannot install one:" >&2
	echo "  needs root and apt-get; install Debian's 'chromium' package (or put a chromium binary in PATH)" >&2
	exit 1
fi

echo "install-chromium: installing Debian's chromium package"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null

if ! bin=$(find_chromium); then
	echo "install-chromium: installed chromium, but still no chromium binary found" >&2
	exit 1
fi
echo "install-chromium: installed $("$bin" --version 2>/dev/null || echo "$bin")"
