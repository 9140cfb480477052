#!/usr/bin/env bash
# Makes sure a Prometheus server (/usr/bin/prometheus) is installed, for the
# metrics end-to-end test (cmd/plugboard/e2e/metrics_e2e_test.go starts one of
# its own, on a free port with a throwaway storage directory, so the Debian
# package's service is stopped). Idempotent: does nothing when prometheus is
# already in PATH or at /usr/bin/prometheus. Otherwise installs Debian's
# prometheus package, which needs root and apt-get.
set -euo pipefail

found() {
	command -v prometheus >/dev/null 2>&1 || [ -x /usr/bin/prometheus ]
}

if found; then
	echo "install-prometheus: Prometheus already installed"
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-prometheus: no Prometheus server (prometheus) found, and cannot install one:" >&2
	echo "  needs root and apt-get; install Debian's 'prometheus' package (or put its prometheus in PATH)" >&2
	exit 1
fi

echo "install-prometheus: installing Debian's prometheus package"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null

# The test starts a server of its own: don't leave the packaged one running.
service prometheus stop >/dev/null 2>&1 || true
systemctl disable prometheus >/dev/null 2>&1 || true

if ! found; then
	echo "install-prometheus: installed prometheus, but still no prometheus binary found" >&2
	exit 1
fi
echo "install-prometheus: installed $(/usr/bin/prometheus --version 2>&1 | head -n 1)"
