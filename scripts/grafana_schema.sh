#!/usr/bin/env bash
# Installs Grafana's dashboard schema (npm's @grafana/schema, the TypeScript types Grafana
# generates from its CUE kinds) and the TypeScript compiler, pinned by
# tests/grafana/schema/package-lock.json, for the dashboard's schema test. Needs Node.js and
# npm (Debian's packages, installed when missing and root). Idempotent: does nothing when
# node_modules matches the lockfile.
set -euo pipefail
source "$(dirname "$0")/_apt.sh"
cd "$(dirname "$0")/../tests/grafana/schema"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm
fi
# npm ci writes node_modules/.package-lock.json; a copy of the lockfile beside it says
# which lockfile that install came from.
if [ -f node_modules/.installed-from-lock.json ] && cmp -s package-lock.json node_modules/.installed-from-lock.json; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null
cp package-lock.json node_modules/.installed-from-lock.json
