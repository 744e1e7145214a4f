#!/usr/bin/env bash
# Installs PostgreSQL (Debian's package) when missing, for the test that runs the dashboard's
# worst-queries SQL on a real PostgreSQL (tests/grafana/test_worst_queries_sql.py); prints
# the directory of its server programs (initdb, pg_ctl). Idempotent.
set -euo pipefail
source "$(dirname "$0")/_apt.sh"
bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
if [ -z "$(bindir)" ] || [ ! -x "$(bindir)/initdb" ] || ! command -v psql >/dev/null 2>&1; then
  apt_install postgresql
fi
bindir
