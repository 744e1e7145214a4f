#!/usr/bin/env bash
# Helm and kustomize, built from Go modules, for the tests that lint and render the chart
# in deploy/helm/ragstream and build deploy/kubernetes/kustomization.yaml. Needs Go.
#
#   scripts/kube_tools.sh fetch helm        build helm once (cached) and print its path
#   scripts/kube_tools.sh fetch kustomize   the same for kustomize
#
# A cold build (Go's module and build caches empty) downloads the Kubernetes client modules
# and compiles for a few minutes each; later calls print the cached path at once.
#
# Environment:
#   RAGSTREAM_HELM_BIN, RAGSTREAM_KUSTOMIZE_BIN  use this binary instead of building one
#   XDG_CACHE_HOME   cache root (default ~/.cache); a binary goes to
#                    $XDG_CACHE_HOME/ragstream/<tool>/<version>/<tool>
#
# Go's own module and build caches (go env GOMODCACHE GOCACHE) hold the downloads.
set -euo pipefail

die() { echo "kube_tools.sh: $*" >&2; exit 1; }

[ "${1:-}" = fetch ] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
tool="${2:-}"
# The module, version and link-time flags of each tool. kustomize v5.8.1 is built on the
# kustomize API (v0.21.1) that helm v4.3.2 uses too, so the two share most modules.
case "$tool" in
  helm)
    version=v4.3.2
    package=helm.sh/helm/v4/cmd/helm
    # helm's version string comes from link-time flags in its own release builds
    ldflags="-X helm.sh/helm/v4/internal/version.version=$version"
    override="${RAGSTREAM_HELM_BIN:-}"
    ;;
  kustomize)
    version=v5.8.1
    package=sigs.k8s.io/kustomize/kustomize/v5
    ldflags="-X sigs.k8s.io/kustomize/api/provenance.version=kustomize/$version"
    override="${RAGSTREAM_KUSTOMIZE_BIN:-}"
    ;;
  *) die "which tool? helm or kustomize (got '${tool}')" ;;
esac

dir="${XDG_CACHE_HOME:-$HOME/.cache}/ragstream/$tool/$version"
bin="$dir/$tool"
# shellcheck source=scripts/_gocache.sh
. "$(dirname "$0")/_gocache.sh"
go_cache_lookup "$override" "RAGSTREAM_${tool^^}_BIN" "$tool"
echo "kube_tools.sh: building $tool $version into $dir" >&2

GOBIN="$tmp/out" go install -ldflags "$ldflags" "$package@$version" >"$tmp/build.log" 2>&1 \
  || { tail -n 40 "$tmp/build.log" >&2; die "go install of $tool $version failed"; }
[ -x "$tmp/out/$tool" ] || die "go install finished without $tmp/out/$tool"

go_cache_settle
