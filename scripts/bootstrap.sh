#!/usr/bin/env bash
# Creates .venv (once) and installs ragstream into it with the given extras.
# Usage: scripts/bootstrap.sh [EXTRAS]   e.g. scripts/bootstrap.sh test
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
spec="."
[ -n "$extras" ] && spec=".[$extras]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$spec"
