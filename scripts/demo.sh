#!/usr/bin/env bash
# The first command: installs ragstream into .venv and runs the demo (no Kafka needed).
# Extra arguments go to `ragstream demo` (e.g. --duration 120 --port 9464).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
echo "== ragstream demo $* (no Kafka needed; Ctrl-C stops it)"
exec .venv/bin/ragstream demo "$@"
