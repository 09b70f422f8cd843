#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test with ctest.
# Usage: scripts/test.sh [--sanitize]
#   --sanitize: ASan + UBSan build in build-asan/ of the torch-free code only (test_base, test_tokenizer;
#   libtorch is not instrumented, see docs/reliability.md), run with leak detection.
# LLMBENCH_BUILD_DIR overrides the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "" | --sanitize) [ $# -le 1 ] || { echo "scripts/test.sh: one argument at most (--sanitize), got: $*" >&2; exit 2; } ;;
  -h | --help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "scripts/test.sh: unknown argument '$1' (usage: scripts/test.sh [--sanitize])" >&2; exit 2 ;;
esac
scripts/deps.sh
scripts/fetch-tokenizers.sh
scripts/fetch-web-assets.sh
scripts/fetch-schema-validator.sh  # Ajv, for tests/cli/schema.sh (results files against schemas/)
scripts/fetch-promtool.sh  # Prometheus' metrics linter, for tests/cli/serve.sh and serve_tp.sh (/metrics)

if [ "${1:-}" = "--sanitize" ]; then
  dir=${LLMBENCH_BUILD_DIR:-build-asan}
  if [ ! -f "$dir/build.ninja" ]; then
    # -O1 -g1: cheaper to compile than -O2 -g (CI time), still line numbers in the reports.
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DLLMBENCH_SANITIZE=ON
  fi
  cmake --build "$dir" -j"$(nproc)" --target test_base test_tokenizer
  export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest --test-dir "$dir" --output-on-failure --timeout 1200 -R '^(base|tokenizer)$'
  exit
fi

dir=${LLMBENCH_BUILD_DIR:-build}
scripts/build.sh "$dir"
# Two tests at a time (most are the binary's start-up, one core each); the timing-sensitive ones run alone
# (RUN_SERIAL in tests/CMakeLists.txt). LLMBENCH_CTEST_JOBS=1: one at a time.
ctest --test-dir "$dir" --output-on-failure --timeout 1200 -j"${LLMBENCH_CTEST_JOBS:-2}"
