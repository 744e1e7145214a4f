#!/usr/bin/env bash
# Regenerates docs/img/dashboard-panels.png: the dashboard's key panels drawn from a real
# Prometheus that scraped a 3-minute demo with its quality drop at 60 s (about 4 minutes).
# With --exemplars, docs/img/drill-down-exemplars.png instead: the panel "Median final
# nDCG@k" with the exemplars Prometheus stored (exemplar storage on, demo query ids that
# are trace ids). Installs the `render` extra (matplotlib) and Prometheus first. Extra
# arguments go to scripts/render_panels.py (--exemplars, --duration, --drift-at, --rate,
# --output).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh render
scripts/prometheus.sh
.venv/bin/python scripts/render_panels.py "$@"
