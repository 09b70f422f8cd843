#!/usr/bin/env bash
# `llmbench profile` where it cannot record CUDA kernels (CPU, no CUDA, bad options): one clean line and the
# usage exit code, never a crash or a table. The recording itself is tested on a GPU (tests/gpu/test_kernel_profile.cpp).
set -u
bin=$1
fail() { echo "FAIL: $*"; exit 1; }
one_error() {  # one_error EXPECTED_RC PATTERN ARGS...: stderr is one "llmbench: error:" line matching PATTERN
  local want=$1 pattern=$2; shift 2
  local err rc out
  out=$("$bin" "$@" 2>"$tmp/err"); rc=$?
  err=$(cat "$tmp/err")
  [ "$rc" -eq "$want" ] || fail "llmbench $*: exit $rc, expected $want: $err"
  [ -z "$out" ] || fail "llmbench $*: printed on stdout: $out"
  [ "$(grep -c . <<<"$err")" -eq 1 ] || fail "llmbench $*: error should be one line: $err"
  grep -q '^llmbench: error: ' <<<"$err" || fail "llmbench $*: error prefix: $err"
  grep -qE -- "$pattern" <<<"$err" || fail "llmbench $*: expected /$pattern/: $err"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" profile --help | grep -q -- "--no-cuda-graph" || fail "profile --help lacks --no-cuda-graph"
"$bin" profile --help | grep -q -- "--prompt-tokens" || fail "profile --help lacks --prompt-tokens"
one_error 2 "needs a CUDA device \(--device cpu is cpu\)" profile --model tiny --device cpu --steps 2
one_error 2 "--steps must be in \[1, 10000\], got 0" profile --model tiny --device cpu --steps 0
one_error 2 "--batch must be >= 1, got 0" profile --model tiny --device cpu --batch 0
one_error 2 "--max-rows must be >= 1" profile --model tiny --device cpu --max-rows 0
one_error 2 "records CUDA kernels: invalid device 'tpu'" profile --model tiny --device tpu
# Bad option values are named before the device is (not "needs a CUDA device").
one_error 2 "--weights: unknown value 'int4'" profile --model tiny --device cpu --weights int4
one_error 2 "--dtype: unknown value 'fp64'" profile --model tiny --device cpu --dtype fp64
one_error 2 "--attn: unknown value 'flash'" profile --model tiny --device cpu --attn flash
# --tp: refused before any rank starts (a size that does not divide the heads, a CPU device, tp < 1).
one_error 2 "--tp 3 does not divide the model's 2 key/value heads" profile --model tiny --tp 3
one_error 2 "--tp must be >= 1, got 0" profile --model tiny --tp 0
one_error 2 "needs a CUDA device \(--device cpu is cpu\)" profile --model tiny --device cpu --tp 2
"$bin" profile --help | grep -q -- "--tp" || fail "profile --help lacks --tp"
cuda=$("$bin" info --json | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["cuda_available"]))')
if [ "$cuda" = 0 ]; then
  # The default device is cuda: without one, the same single line.
  one_error 2 "records CUDA kernels: device .cuda. requested but CUDA is not available" profile --model tiny
fi
echo "profile: all checks passed"
