#!/usr/bin/env bash
# scripts/gpu-build.sh with an absolute and a relative build directory, run against stub python3, cmake and
# ctest (no GPU, no build): every step must get the directory the user gave, and the final
# `<dir>/llmbench info --measure` must run (issue 12: an absolute path ran `.//abs/path/llmbench`).
set -u
root=$(cd "$2/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp/stubs" "$tmp/cwd"
cat >"$tmp/stubs/python3" <<'SH'
#!/bin/sh
echo /fake/torch/share/cmake
SH
# cmake -S . -B DIR ...: makes DIR look configured and puts a fake llmbench in it; cmake --build DIR: logs.
cat >"$tmp/stubs/cmake" <<'SH'
#!/bin/bash
echo "cmake $*" >>"$STUB_LOG"
while [ $# -gt 0 ]; do
  if [ "$1" = -B ]; then
    mkdir -p "$2" && touch "$2/build.ninja"
    printf '#!/bin/sh\necho "fake llmbench $*" >>"$STUB_LOG"\n' >"$2/llmbench" && chmod +x "$2/llmbench"
  fi
  shift
done
SH
cat >"$tmp/stubs/ctest" <<'SH'
#!/bin/sh
echo "ctest $*" >>"$STUB_LOG"
SH
chmod +x "$tmp/stubs/"*
export STUB_LOG=$tmp/log

check() {  # check ARG EXPECTED_ABSOLUTE_DIR
  : >"$STUB_LOG"
  (cd "$tmp/cwd" && PATH="$tmp/stubs:$PATH" bash "$root/scripts/gpu-build.sh" "$1") >"$tmp/out" 2>&1 \
    || fail "gpu-build.sh $1 failed: $(cat "$tmp/out")"
  grep -qF -- "-B $2 " "$STUB_LOG" || fail "$1: not configured in $2: $(cat "$STUB_LOG")"
  grep -qF -- "--build $2 " "$STUB_LOG" || fail "$1: not built in $2: $(cat "$STUB_LOG")"
  grep -qF -- "ctest --test-dir $2 -L gpu" "$STUB_LOG" || fail "$1: ctest not in $2: $(cat "$STUB_LOG")"
  grep -qx "fake llmbench info --measure" "$STUB_LOG" || fail "$1: llmbench info --measure did not run: $(cat "$STUB_LOG")"
}

check "$tmp/abs/build-gpu" "$tmp/abs/build-gpu"
check rel/build "$tmp/cwd/rel/build"
echo "gpu_build_script: all checks passed"
