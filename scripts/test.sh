#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test with ctest.
# Usage: scripts/test.sh [--sanitize | --tsan]
#   --sanitize: ASan + UBSan build in build-asan/ of the torch-free tests only (test_base, test_tokenizer,
#   test_serve, test_load; libtorch is not instrumented, see docs/reliability.md), run with leak detection.
#   --tsan: ThreadSanitizer build in build-tsan/ of the multi-threaded torch-free tests (test_serve,
#   test_load), suppressions in tests/tsan.supp.
# LLMBENCH_BUILD_DIR overrides the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "" | --sanitize | --tsan)
    [ $# -le 1 ] || { echo "scripts/test.sh: one argument at most (--sanitize or --tsan), got: $*" >&2; exit 2; } ;;
  -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "scripts/test.sh: unknown argument '$1' (usage: scripts/test.sh [--sanitize | --tsan])" >&2; exit 2 ;;
esac
scripts/deps.sh
scripts/fetch-tokenizers.sh
scripts/fetch-web-assets.sh
scripts/fetch-schema-validator.sh  # Ajv, for tests/cli/schema.sh (results files against schemas/)
scripts/fetch-promtool.sh  # Prometheus' metrics linter, for tests/cli/serve.sh and serve_tp.sh (/metrics)

# sanitized_build DIR SANITIZER TARGET...: configures DIR once with -DLLMBENCH_SANITIZE=SANITIZER, builds the
# targets only. -O1 -g1: cheaper to compile than -O2 -g (CI time), still line numbers in the reports.
sanitized_build() {
  local dir=$1 sanitizer=$2; shift 2
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
      -DLLMBENCH_SANITIZE="$sanitizer"
  fi
  cmake --build "$dir" -j"$(nproc)" --target "$@"
}

case "${1:-}" in
  --sanitize)
    dir=${LLMBENCH_BUILD_DIR:-build-asan}
    sanitized_build "$dir" address test_base test_tokenizer test_serve test_load
    export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # serve and load are RUN_SERIAL (timing-sensitive): ctest runs them one at a time anyway.
    ctest --test-dir "$dir" --output-on-failure --timeout 1200 -R '^(base|tokenizer|serve|load)$'
    exit ;;
  --tsan)
    dir=${LLMBENCH_BUILD_DIR:-build-tsan}
    sanitized_build "$dir" thread test_serve test_load
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp"
    ctest --test-dir "$dir" --output-on-failure --timeout 1200 -R '^(serve|load)$'
    exit ;;
esac

dir=${LLMBENCH_BUILD_DIR:-build}
scripts/build.sh "$dir"
# Two tests at a time (most are the binary's start-up, one core each); the timing-sensitive ones run alone
# (RUN_SERIAL in tests/CMakeLists.txt). LLMBENCH_CTEST_JOBS=1: one at a time.
ctest --test-dir "$dir" --output-on-failure --timeout 1200 -j"${LLMBENCH_CTEST_JOBS:-2}"
