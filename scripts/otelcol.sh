#!/usr/bin/env bash
# A minimal OpenTelemetry Collector (the otlp receiver and the contrib kafka exporter) built
# from Go modules with the Collector Builder, for the end-to-end tests. Needs Go.
#
#   scripts/otelcol.sh fetch    build it once (cached) and print the binary's path
#
# A cold build (Go's module and build caches empty) downloads about 660 MB of modules and
# compiles for several minutes; docs/testing.md has the figures.
#
# Environment:
#   RAGSTREAM_OTELCOL_BIN  use this Collector binary instead of building one
#   XDG_CACHE_HOME         cache root (default ~/.cache); the binary goes to
#                          $XDG_CACHE_HOME/ragstream/otelcol/<core>-<contrib>/otelcol-ragstream
#
# Go's own module and build caches (go env GOMODCACHE GOCACHE) hold the downloads.
set -euo pipefail

# One Collector release: the core modules, the builder and the contrib exporter move together.
core_version=v0.165.0
contrib_version=v0.165.1
name=otelcol-ragstream

die() { echo "otelcol.sh: $*" >&2; exit 1; }

[ "${1:-}" = fetch ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

dir="${XDG_CACHE_HOME:-$HOME/.cache}/ragstream/otelcol/$core_version-$contrib_version"
bin="$dir/$name"
# shellcheck source=scripts/_gocache.sh
. "$(dirname "$0")/_gocache.sh"
go_cache_lookup "${RAGSTREAM_OTELCOL_BIN:-}" RAGSTREAM_OTELCOL_BIN "the Collector"
echo "otelcol.sh: building the Collector $core_version (kafka exporter $contrib_version) into $dir" >&2

GOBIN="$tmp/tools" go install "go.opentelemetry.io/collector/cmd/builder@$core_version" \
  >"$tmp/build.log" 2>&1 || { tail -n 40 "$tmp/build.log" >&2; die "go install of the builder failed"; }

cat >"$tmp/manifest.yaml" <<EOF
dist:
  name: $name
  description: ragstream's test Collector (otlp receiver, kafka exporter)
  version: $core_version
  output_path: $tmp/dist
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver $core_version
exporters:
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/kafkaexporter $contrib_version
EOF

"$tmp/tools/builder" --config "$tmp/manifest.yaml" >>"$tmp/build.log" 2>&1 \
  || { tail -n 40 "$tmp/build.log" >&2; die "the Collector Builder failed"; }
[ -x "$tmp/dist/$name" ] || die "the builder finished without $tmp/dist/$name"

mkdir -p "$tmp/out"
mv "$tmp/dist/$name" "$tmp/manifest.yaml" "$tmp/out/"
go_cache_settle
