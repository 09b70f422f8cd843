#!/usr/bin/env bash
# scripts/bench/vs_hf_table.py on the fabricated inputs in tests/data/vs_hf (expected cells computed by hand).
set -u
data="$2/vs_hf"
script="$2/../../scripts/bench/vs_hf_table.py"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out/stdout" "$out/stderr" 2>/dev/null; exit 1; }
command -v python3 >/dev/null || fail "python3 is needed"

python3 "$script" --hf "$data/hf_qwen.json" "$data/hf_llama.json" \
  --llmbench "$data/llmbench_qwen.json" "$data/llmbench_llama.json" \
  --llmbench-plain "$data/llmbench-plain_qwen.json" --date "2026-11-30 12:00 UTC" \
  --command "scripts/bench/vs_hf.sh --quick" >"$out/stdout" 2>"$out/stderr" || fail "exit code $?"
has() { grep -qF -- "$1" "$out/stdout" || fail "missing line: $1"; }

has "Measured 2026-11-30 12:00 UTC."
has 'Command: `scripts/bench/vs_hf.sh --quick`'
has "NVIDIA H200 · torch 2.11.0+cu130, transformers 5.17.0 · prompt 512, 64 new tokens"
has "| workload | HF eager | HF sdpa | HF compiled | llmbench plain | llmbench | speed-up (vs HF eager) | vs best HF |"
# 25.1 / 12.5 = 2.008; best HF is sdpa: 20.7 / 12.5 = 1.656
has "| Qwen2.5-7B, batch 1, TTFT ms | 25.1 | 20.7 | 28.0 | 18.0 | 12.5 | 2.01× | 1.66× |"
# trimmed_median (4.30), not mean (9.30); 21.5 / 4.3 = 5.00; best HF is compiled: 10.8 / 4.3 = 2.51
has "| Qwen2.5-7B, batch 1, decode ms/step | 21.5 | 21.7 | 10.8 | 9.00 | 4.30 | 5.00× | 2.51× |"
# bytes / 1e9; 15.4 / 15.5 = 0.994
has "| Qwen2.5-7B, batch 1, peak GB | 15.4 | 15.4 | 15.6 | 15.5 | 15.5 | 0.99× | 0.99× |"
# a failed llmbench plain point: "failed" and its error below the table
has "| Qwen2.5-7B, batch 4, TTFT ms | 66.5 | 58.4 | 59.9 | failed | 43.0 | 1.55× | 1.36× |"
has "- llmbench plain, Qwen2.5-7B batch 4: CUDA out of memory"
# a failed HF point, no plain run for Llama at all ("—"); 29.4 / 4.4 = 6.68, 28.0 / 4.4 = 6.36
has "| Llama-3-8B, batch 1, decode ms/step | 29.4 | 28.0 | failed | — | 4.40 | 6.68× | 6.36× |"
has "- HF compiled, Llama-3-8B batch 1: forward: RuntimeError: boom; auto: RuntimeError: boom again"
has "measured with generate()'s own decode-step compile instead"
has "llmbench plain ran with: cuda_graph=off, fused=off."
[ "$(grep -c '^| Qwen2.5-7B\|^| Llama-3-8B' "$out/stdout")" = 9 ] || fail "expected 9 rows (3 workloads x 3 metrics)"

# Inputs of the wrong kind are refused with the file name.
python3 "$script" --hf "$data/llmbench_qwen.json" >"$out/stdout" 2>"$out/stderr" && fail "accepted a llmbench file as --hf"
grep -qF "llmbench_qwen.json: not an hf_baseline.py file" "$out/stderr" || fail "no message for a wrong --hf file"
python3 "$script" --llmbench "$data/hf_qwen.json" >"$out/stdout" 2>"$out/stderr" && fail "accepted an HF file as --llmbench"
grep -qF "hf_qwen.json: schema_version None is not 1" "$out/stderr" || fail "no message for a wrong --llmbench file"
echo PASS
