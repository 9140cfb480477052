#!/usr/bin/env bash
# Makes sure a PostgreSQL server (initdb, pg_ctl, postgres) is installed, for
# the tests of the PostgreSQL store (internal/testing/pgtest starts a throwaway
# cluster of its own, so the Debian package's default cluster is stopped).
# Idempotent: does nothing when initdb is already in PATH or under
# /usr/lib/postgresql/*/bin. Otherwise installs Debian's postgresql package,
# which needs root and apt-get.
set -euo pipefail

found() {
	command -v initdb >/dev/null 2>&1 && return 0
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

if found; then
	echo "install-postgresql: PostgreSQL server already installed"
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-postgresql: no PostgreSQL server (initdb) found, and cannot install one:" >&2
	echo "  needs root and apt-get; install Debian's 'postgresql' package (or put its initdb and postgres in PATH)" >&2
	exit 1
fi

echo "install-postgresql: installing Debian's postgresql package"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null

# The tests start clusters of their own: don't leave the packaged one running.
if command -v pg_lsclusters >/dev/null 2>&1; then
	pg_lsclusters -h 2>/dev/null | while read -r ver name _; do
		pg_ctlcluster "$ver" "$name" stop 2>/dev/null || true
	done
fi
service postgresql stop >/dev/null 2>&1 || true
systemctl disable postgresql >/dev/null 2>&1 || true

if ! found; then
	echo "install-postgresql: installed postgresql, but still no initdb found" >&2
	exit 1
fi
echo "install-postgresql: installed $(compgen -G '/usr/lib/postgresql/*/bin/initdb' | sort -V | tail -n 1)"
