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

if [ -n "${RAGSTREAM_OTELCOL_BIN:-}" ]; then
  [ -x "$RAGSTREAM_OTELCOL_BIN" ] || die "RAGSTREAM_OTELCOL_BIN=$RAGSTREAM_OTELCOL_BIN is not an executable"
  echo "$RAGSTREAM_OTELCOL_BIN"
  exit 0
fi

dir="${XDG_CACHE_HOME:-$HOME/.cache}/ragstream/otelcol/$core_version-$contrib_version"
bin="$dir/$name"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || die "go not found (needed once to build the Collector)"
mkdir -p "$(dirname "$dir")"
# Built in a scratch dir next to the cache and renamed into place, so a cache dir that exists
# always holds a complete binary (an interrupted build leaves nothing behind).
tmp="$(mktemp -d "$(dirname "$dir")/build.tmp.XXXXXX")"
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
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
if ! mv -T "$tmp/out" "$dir" 2>/dev/null; then
  # Another build won the race; its complete binary is as good as ours.
  [ -x "$bin" ] || die "could not move the Collector into $dir"
fi
echo "$bin"
