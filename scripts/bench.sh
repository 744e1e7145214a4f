#!/usr/bin/env bash
# The one benchmark command: installs what the benchmarks need (.venv with the `bench`
# extra), then runs one benchmark by name, or all of them. Extra arguments go to it.
# Usage: scripts/bench.sh [NAME|all] [ARGS...]   e.g. scripts/bench.sh eval --queries 10000
# A benchmark NAME is the module bench/NAME_bench.py (or bench/NAME.py) run with -m;
# "all" runs every bench/*_bench.py.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh bench

name="${1:-all}"
[ "$#" -gt 0 ] && shift
available=$(cd bench && ls -1 ./*_bench.py | sed -e 's|^\./||' -e 's|_bench\.py$||')
if [ "$name" = "all" ]; then
  for bench in $available; do
    echo "== bench: $bench"
    .venv/bin/python -m "bench.${bench}_bench" "$@"
  done
elif [ -f "bench/${name}_bench.py" ]; then
  .venv/bin/python -m "bench.${name}_bench" "$@"
elif [ -f "bench/${name}.py" ]; then
  .venv/bin/python -m "bench.${name}" "$@"
else
  echo "unknown benchmark '$name'; available: all" $available >&2
  exit 2
fi
