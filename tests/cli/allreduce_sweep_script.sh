#!/usr/bin/env bash
# scripts/bench/allreduce_sweep.sh against a stub llmbench (no GPU): each setting's variables reach the
# run, the thin 70B-shaped config it writes, the table's arithmetic (ms per step ÷ reduces per step from
# allreduce_method → µs per reduce; the path named after "via"), and a failed run as a row, not an abort.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
script="$root/scripts/bench/allreduce_sweep.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$tmp/build"
cat >"$tmp/build/llmbench" <<'SH'
#!/bin/bash
# 160 reduces for the thin model (80 layers), 64 for llama-3-8b; 3.2 / 0.64 ms per step; fails for LL128.
echo "${NCCL_PROTO:-none} ${NCCL_ALGO:-none} ${LLMBENCH_TP_ALLREDUCE:-none} $*" >>"$STUB_LOG"
[ "${NCCL_PROTO:-}" = LL128 ] && { echo "llmbench: error: stub failure"; exit 1; }
out=""; model=""
while [ $# -gt 0 ]; do case $1 in -o) out=$2; shift;; --model) model=$2; shift;; esac; shift; done
if [ "$model" = llama-3-8b ]; then n=64; ms=0.64; else n=160; ms=3.2; fi
via=nccl; [ "${LLMBENCH_TP_ALLREDUCE:-}" = window ] && via=nccl-window
cat >"$out" <<JSON
{"points": [{"summary": {"tpot_ms": {"trimmed_median": 10.5}},
 "tensor_parallel": {"allreduce_ms_per_step": $ms,
   "allreduce_method": "$n all-reduces of [1, 1, 8192] BFloat16 (one decode step's, via $via), replayed from one CUDA graph"}}]}
JSON
SH
chmod +x "$tmp/build/llmbench"
export STUB_LOG="$tmp/stub.log"
out=$(OUT_DIR="$tmp/out" bash "$script" "$tmp/build") || fail "script exited $?: $out"
echo "$out" | grep -qF "| default (nccl) | thin70 | 3.200 | 20.0 | 10.50 |" || fail "default thin70 row: $out"
echo "$out" | grep -qF "| default (nccl) | llama-3-8b | 0.640 | 10.0 | 10.50 |" || fail "default 8b row: $out"
echo "$out" | grep -qF "| LLMBENCH_TP_ALLREDUCE=window (nccl-window) | thin70 | 3.200 | 20.0 |" || fail "window row: $out"
echo "$out" | grep -q "| NCCL_PROTO=LL128 | thin70 | failed: llmbench: error: stub failure" || fail "failed row: $out"
grep -q "^LL Ring none --log-level warn run --model $tmp/out/thin70 --tp 2 " "$tmp/stub.log" || fail "variables/args: $(cat "$tmp/stub.log")"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); assert (c["hidden_size"], c["num_hidden_layers"], c["num_key_value_heads"]) == (8192, 80, 8), c' \
  "$tmp/out/thin70/config.json" || fail "thin config"
[ "$(grep -c . "$tmp/stub.log")" = 14 ] || fail "7 settings × 2 models: $(grep -c . "$tmp/stub.log") runs"
echo "allreduce_sweep_script: ok"
