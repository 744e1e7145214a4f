#!/usr/bin/env bash
# trec_eval, the reference program for `ragstream eval`'s conformance tests. Needs Maven.
#
#   scripts/trec_eval.sh fetch    fetch (once) and print the path of the trec_eval binary
#
# The binary comes from Anserini's jar on Maven Central (deploy/trec_eval/pom.xml), which
# carries trec_eval builds for Linux and macOS; only that jar is fetched.
#
# Environment:
#   RAGSTREAM_TREC_EVAL  use this trec_eval binary instead (fetch only checks that it runs)
#   XDG_CACHE_HOME       cache root (default ~/.cache); the binary goes to
#                        $XDG_CACHE_HOME/ragstream/trec_eval/<anserini version>/trec_eval
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
pom="$root/deploy/trec_eval/pom.xml"

die() { echo "trec_eval.sh: $*" >&2; exit 1; }

anserini_version() {
  sed -n 's:.*<anserini.version>\(.*\)</anserini.version>.*:\1:p' "$pom" | head -n 1
}

# The jar's entry for this machine: trec_eval/trec_eval-<os>-<arch>.
platform() {
  local os arch
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=macosx ;;
    *) die "no trec_eval build for $(uname -s) in the jar" ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=$([ "$os" = linux ] && echo amd64 || echo x86_64) ;;
    aarch64 | arm64) arch=aarch64 ;;
    i386 | i686) arch=i386 ;;
    *) die "no trec_eval build for $(uname -m) in the jar" ;;
  esac
  echo "trec_eval-$os-$arch"
}

cmd_fetch() {
  if [ -n "${RAGSTREAM_TREC_EVAL:-}" ]; then
    "$RAGSTREAM_TREC_EVAL" -v >/dev/null 2>&1 || die "RAGSTREAM_TREC_EVAL=$RAGSTREAM_TREC_EVAL does not run"
    echo "$RAGSTREAM_TREC_EVAL"
    return
  fi
  local version dir binary entry tmp
  version="$(anserini_version)"
  dir="${XDG_CACHE_HOME:-$HOME/.cache}/ragstream/trec_eval/$version"
  binary="$dir/trec_eval"
  if [ -x "$binary" ]; then
    echo "$binary"
    return
  fi
  command -v mvn >/dev/null || die "mvn not found (needed once to fetch trec_eval)"
  entry="trec_eval/$(platform)"
  mkdir -p "$dir"
  tmp="$(mktemp -d "$dir/fetch.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  echo "trec_eval.sh: fetching io.anserini:anserini:$version for $entry" >&2
  if ! mvn -B -f "$pom" dependency:copy-dependencies -Danserini.version="$version" \
      -DoutputDirectory="$tmp/jar" >"$tmp/mvn.log" 2>&1; then
    tail -n 40 "$tmp/mvn.log" >&2
    die "mvn could not resolve io.anserini:anserini:$version"
  fi
  python3 - "$tmp/jar/anserini-$version.jar" "$entry" "$tmp/trec_eval" <<'PY'
import shutil, sys, zipfile
jar, entry, out = sys.argv[1:]
with zipfile.ZipFile(jar) as z, z.open(entry) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  chmod +x "$tmp/trec_eval"
  "$tmp/trec_eval" -v >/dev/null 2>&1 || die "the $entry binary from the jar does not run here"
  mv -f "$tmp/trec_eval" "$binary"  # atomic: a cached binary is always complete
  trap - EXIT
  rm -rf "$tmp"
  echo "$binary"
}

case "${1:-}" in
  fetch) cmd_fetch ;;
  *) die "usage: scripts/trec_eval.sh fetch" ;;
esac
