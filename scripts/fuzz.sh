#!/usr/bin/env bash
# Fuzzes the four C extensions with libFuzzer under AddressSanitizer and UBSan, each target
# a differential one (the compiled result against the Python or msgspec one):
#   event_scanner   ragstream/events/_event_scanner.c (tests/fuzz/event_scanner.c: against msgspec)
#   drift_kernels   ragstream/drift/_kernels.c (mutated detector snapshots, then values)
#   metrics_ragged  ragstream/metrics/_ragged.c (CSR rankings and cutoffs, against numpy)
#   trec_reader     ragstream/trec/_trec_reader.c with _ragged.c (qrels and run files, against numpy)
# (the last three: tests/fuzz/<target>.c and tests/fuzz/targets.py). Builds them with Debian's
# clang (clang-14 and its sanitizer and libFuzzer runtimes, installed with apt-get when
# missing) into build/fuzz/<target>/ (rebuilt when a source changes), seeds each with valid
# inputs (tests/fuzz/seed.py) and runs it. A crash, a sanitizer report or a difference stops
# it with the input saved in build/fuzz/<target>/crashes/.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   each target for SECONDS (default 300)
#        scripts/fuzz.sh runs N [TARGET...]       each target for N inputs (tests/fuzz/test_fuzz.py)
#        scripts/fuzz.sh build [TARGET...]        only build (scripts/test.sh)
# With no TARGET, all four. Not part of scripts/test.sh beyond `build`: a run of minutes,
# for changes to the C (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=seconds
limit=300
case "${1:-}" in
  build) mode=build; shift ;;
  runs) mode=runs; limit="$2"; shift 2 ;;
  '' | *[!0-9]*) ;;
  *) limit="$1"; shift ;;
esac
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(event_scanner drift_kernels metrics_ragged trec_reader)

sources() {  # the C a target is built from
  case "$1" in
    event_scanner) echo tests/fuzz/event_scanner.c ;;  # includes ragstream/events/_event_scanner.c
    drift_kernels) echo tests/fuzz/drift_kernels.c ragstream/drift/_kernels.c ;;
    metrics_ragged) echo tests/fuzz/metrics_ragged.c ragstream/metrics/_ragged.c ;;
    trec_reader) echo tests/fuzz/trec_reader.c ragstream/trec/_trec_reader.c ragstream/metrics/_ragged.c ;;
    *) echo "fuzz.sh: unknown target $1 (event_scanner, drift_kernels, metrics_ragged, trec_reader)" >&2
       exit 2 ;;
  esac
}

source scripts/_apt.sh
clang=clang-14
if ! command -v "$clang" >/dev/null || [ -z "$("$clang" -print-file-name=libclang_rt.fuzzer-x86_64.a | grep /)" ]; then
  apt_install clang-14 libclang-rt-14-dev
fi
# the embedded interpreter imports ragstream, numpy, msgspec and the tests' helpers
if ! .venv/bin/python -c "import ragstream, numpy, msgspec, hypothesis" 2>/dev/null; then
  scripts/bootstrap.sh test >/dev/null
fi

py=.venv/bin/python
include="$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
libdir="$($py -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')"
pylib="$($py -c 'import sysconfig; print("python" + sysconfig.get_config_var("LDVERSION"))')"
flags=(-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
  -fno-sanitize-recover=all -pthread -I"$include")

build() {  # build/fuzz/$1/fuzzer, unless it is built from these very sources and flags
  local out="build/fuzz/$1" stamp
  read -r -a files <<<"$(sources "$1")"
  # the headers and the scanner's C, which tests/fuzz/event_scanner.c includes, count too
  stamp="$(cat "${files[@]}" tests/fuzz/harness.h ragstream/metrics/_ragged.h \
    ragstream/events/_event_scanner.c \
    <(echo "$clang ${flags[*]} $libdir $pylib") | sha256sum | cut -c1-16)"
  mkdir -p "$out/corpus" "$out/crashes"
  if [ -x "$out/fuzzer" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "== $out/fuzzer is up to date"
    return
  fi
  echo "== building $out/fuzzer ($clang, -fsanitize=fuzzer,address,undefined)"
  "$clang" "${flags[@]}" "${files[@]}" -L"$libdir" -l"$pylib" -lm -Wl,-rpath,"$libdir" \
    -o "$out/fuzzer.new"
  mv "$out/fuzzer.new" "$out/fuzzer"
  echo "$stamp" >"$out/stamp"
}

for target in "${targets[@]}"; do build "$target"; done
[ "$mode" = build ] && exit 0

# PYTHONMALLOC=malloc: Python's memory (the extensions' work space too) through the
# sanitized malloc, so that an overflow of a small block is caught. Leak checks are off: the
# embedded interpreter keeps objects alive on purpose (caches, interned strings).
export PYTHONMALLOC=malloc PYTHONHOME="$($py -c 'import sys; print(sys.base_prefix)')"
export PYTHONPATH="$PWD:$($py -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for target in "${targets[@]}"; do
  out="build/fuzz/$target"
  $py -m tests.fuzz.seed "$target" "$out/corpus" | sed "s/^/== $target: /"
  max_len=65536 args=()
  if [ "$target" = event_scanner ]; then
    max_len=8192 args=(-dict=tests/fuzz/event_scanner.dict)
  fi
  if [ "$mode" = runs ]; then
    args+=(-runs="$limit" -seed=1)
    echo "== fuzzing $target for $limit inputs"
  else
    args+=(-max_total_time="$limit")
    echo "== fuzzing $target for $limit s"
  fi
  "$out/fuzzer" -max_len="$max_len" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$out/crashes/" "${args[@]}" "$out/corpus"
done
