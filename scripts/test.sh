#!/usr/bin/env bash
# The one test command: installs everything the tests need on a fresh machine
# (Python packages, the Kafka broker's jars, Prometheus, Grafana's dashboard schema,
# the OpenTelemetry Collector, helm and kustomize, trec_eval, the sanitized fuzz targets,
# podman and the image's base), then runs ruff, mypy, import-linter and the whole pytest
# suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh test  # says what it installs
echo "== Apache Kafka's broker jars (fetched once with Maven into ~/.cache/ragstream)"
scripts/kafka.sh fetch >/dev/null
echo "== Prometheus and promtool (Debian's package, installed once)"
scripts/prometheus.sh
echo "== Grafana's dashboard schema (npm's @grafana/schema and TypeScript, pinned by tests/grafana/schema/package-lock.json)"
scripts/grafana_schema.sh
echo "== PostgreSQL (Debian's package, installed once; the dashboard's worst-queries SQL runs on it)"
scripts/postgres.sh >/dev/null
echo "== the OpenTelemetry Collector (otlp receiver, kafka exporter), built once from Go modules with the Collector Builder into ~/.cache/ragstream"
scripts/otelcol.sh fetch >/dev/null
echo "== helm and kustomize, built once from Go modules into ~/.cache/ragstream (the chart's and the kustomization's tests)"
scripts/kube_tools.sh fetch helm >/dev/null
scripts/kube_tools.sh fetch kustomize >/dev/null
echo "== podman, buildah, runc and mmdebstrap (Debian's packages, installed once) and the image's Debian base (built once with mmdebstrap into ~/.cache/ragstream)"
scripts/image.sh fetch >/dev/null
echo "== NIST's trec_eval, the reference for \`ragstream eval\` (fetched once with Maven)"
scripts/trec_eval.sh fetch >/dev/null
echo "== the C extensions' sanitized fuzz targets (clang-14 from Debian; built once into build/fuzz)"
scripts/fuzz.sh build >/dev/null

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== import-linter (the layers of docs/architecture.md)"
.venv/bin/lint-imports --no-cache --no-logo
echo "== pytest"
.venv/bin/pytest "$@"
