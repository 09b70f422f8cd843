#!/usr/bin/env bash
# scripts/bench/kernel_split.sh against stubs (no GPU): the `llmbench profile` command line it runs and its exit
# code, and the ncu fallback's limits and its CSV → table arithmetic (a fabricated ncu CSV with ns/us units and
# thousands separators).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
script="$root/scripts/bench/kernel_split.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$tmp/stubs"
cat >"$tmp/stubs/llmbench" <<'SH'
#!/bin/bash
echo "llmbench $*"
exit "${STUB_RC:-0}"
SH
cat >"$tmp/stubs/ncu" <<'SH'
#!/bin/bash
echo "ncu $*" >"$NCU_LOG"
echo "==PROF== Connected to process 1"
echo '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
echo '"0","1","llmbench","h","void k_a<int>(int)","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","10.00"'
echo '"1","1","llmbench","h","void k_b<int>(int)","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","5,000"'
echo '"2","1","llmbench","h","void k_a<int>(int)","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","10,000"'
echo '"3","1","llmbench","h","void k_a<int>(int)","1","7","(128, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","sm__throughput","%","50"'
SH
chmod +x "$tmp/stubs/llmbench" "$tmp/stubs/ncu"
export LLMBENCH="$tmp/stubs/llmbench" OUT_DIR="$tmp/out"

# Default: llmbench profile with the model, batch, prompt and steps from the environment, extra flags after.
out=$(MODEL=tiny BATCH=4 PROMPT=64 STEPS=3 "$script" --attn sdpa) || fail "profile mode exited $?: $out"
[ "$out" = "llmbench profile --model tiny --batch 4 --prompt-len 64 --steps 3 --attn sdpa" ] || fail "command: $out"
[ "$(cat "$tmp/out/profile.txt")" = "$out" ] || fail "profile.txt should hold the output"
STUB_RC=2 "$script" >/dev/null 2>&1; [ $? = 2 ] || fail "llmbench's exit code should come through the tee"

# ncu fallback: the bounded command, then the table (k_a: 2 x 10 us = 20 of 25 us; k_b 5 us; other metrics ignored).
export PATH="$tmp/stubs:$PATH" NCU_LOG="$tmp/ncu.log"
out=$(KERNEL_SPLIT_TOOL=ncu COUNT=50 "$script") || fail "ncu mode exited $?: $out"
grep -q -- "--launch-count 50 --metrics gpu__time_duration.sum" "$tmp/ncu.log" || fail "ncu args: $(cat "$tmp/ncu.log")"
grep -q -- "run --model qwen2.5-7b --batch 1 --prompt-len 512 --max-new-tokens 16 .*--no-cuda-graph" "$tmp/ncu.log" ||
  fail "the run under ncu: $(cat "$tmp/ncu.log")"
grep -qE "^ 80\.0% +20\.0 +2 +10\.00  void k_a<int>\(int\)" <<<"$out" || fail "k_a row: $out"
grep -qE "^ 20\.0% +5\.0 +1 +5\.00  void k_b<int>\(int\)" <<<"$out" || fail "k_b row: $out"
grep -q "(3 kernels timed by ncu" <<<"$out" || fail "kernel count: $out"
grep -q "all timed kernels: 25.0 us" <<<"$out" || fail "total: $out"
KERNEL_SPLIT_TOOL=ncu COUNT=1001 "$script" >/dev/null 2>&1; [ $? = 2 ] || fail "COUNT over 1000 should exit 2"
KERNEL_SPLIT_TOOL=bogus "$script" >/dev/null 2>&1; [ $? = 2 ] || fail "an unknown tool should exit 2"
LLMBENCH="$tmp/none" "$script" >/dev/null 2>&1; [ $? = 2 ] || fail "a missing llmbench should exit 2"
echo "kernel_split_script: all checks passed"
