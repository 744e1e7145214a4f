#!/usr/bin/env bash
# Fuzzes the compiled event scanner (ragstream/events/_scan.c) with libFuzzer under
# AddressSanitizer and UBSan, for a bounded time: builds tests/fuzz/events_scan.c with
# Debian's clang (clang-14 and its sanitizer and libFuzzer runtimes, installed with apt-get
# when missing), seeds it with the test suite's messages, and runs it. A crash, a sanitizer
# report or a difference from msgspec stops it with the input saved in build/fuzz/.
# Usage: scripts/fuzz.sh [SECONDS] [LIBFUZZER-ARGS...]   (default 300 seconds)
# Not part of scripts/test.sh: a run of minutes, for changes to the C (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-300}"
[ "$#" -gt 0 ] && shift

source scripts/_apt.sh
clang=clang-14
if ! command -v "$clang" >/dev/null || [ -z "$("$clang" -print-file-name=libclang_rt.fuzzer-x86_64.a | grep /)" ]; then
  apt_install clang-14 libclang-rt-14-dev
fi
scripts/bootstrap.sh test >/dev/null  # the embedded interpreter imports ragstream and msgspec

out=build/fuzz/events_scan
mkdir -p "$out/corpus" "$out/crashes"
py=.venv/bin/python
include="$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
libdir="$($py -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')"
pylib="$($py -c 'import sysconfig; print("python" + sysconfig.get_config_var("LDVERSION"))')"
echo "== building $out/fuzzer ($clang, -fsanitize=fuzzer,address,undefined)"
"$clang" -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=all -I"$include" tests/fuzz/events_scan.c \
  -L"$libdir" -l"$pylib" -Wl,-rpath,"$libdir" -o "$out/fuzzer"

echo "== seeding $out/corpus with the tests' messages"
$py -m tests.fuzz.seed "$out/corpus"

echo "== fuzzing for $seconds s"
# PYTHONMALLOC=malloc: Python's memory (the scanner's work space too) through the sanitized
# malloc, so that an overflow of a small block is caught. Leak checks are off: the embedded
# interpreter keeps objects alive on purpose (caches, interned strings).
export PYTHONMALLOC=malloc PYTHONHOME="$($py -c 'import sys; print(sys.base_prefix)')"
export PYTHONPATH="$PWD:$($py -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
"$out/fuzzer" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -dict=tests/fuzz/events_scan.dict -artifact_prefix="$out/crashes/" \
  "$@" "$out/corpus"
