#!/usr/bin/env bash
# Makes sure a PostgreSQL server (initdb, pg_ctl, postgres) is installed, for the tests of
# the PostgreSQL session store. Installs Debian's `postgresql` package when absent; does
# not start a server (each test binary starts its own throwaway cluster).
set -euo pipefail

find_initdb() {
    if command -v initdb >/dev/null 2>&1; then command -v initdb; return 0; fi
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        echo "$(pg_config --bindir)/initdb"; return 0
    fi
    local candidate
    for candidate in /usr/lib/postgresql/*/bin/initdb; do
        if [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
    done
    return 1
}

if initdb="$(find_initdb)"; then
    echo "postgres.sh: PostgreSQL found: $initdb"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "postgres.sh: PostgreSQL is not installed and this is not root; install the 'postgresql' package" >&2
    exit 1
fi

echo "postgres.sh: installing PostgreSQL from Debian packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends postgresql
# Debian's package creates and starts a default cluster; the tests do not use it.
if command -v pg_lsclusters >/dev/null 2>&1; then
    pg_lsclusters -h 2>/dev/null | while read -r version name _; do
        pg_ctlcluster "$version" "$name" stop 2>/dev/null || true
    done
fi
initdb="$(find_initdb)"
echo "postgres.sh: PostgreSQL installed: $initdb"
