#!/usr/bin/env bash
# GPU host with two H200s: what one decode step's all-reduces cost under NCCL settings (issue 17).
# For each setting (a line of environment variables; LLMBENCH_TP_ALLREDUCE=window: small all-reduces
# through NCCL's symmetric window instead of ProcessGroupNCCL, not measured yet), `llmbench run --tp 2` on a thin model with
# Llama-3-70B's hidden size and 80 layers (small MLP and vocabulary: the step is nearly all communication)
# and on Llama-3-8B; prints the all-reduce time per step (160 or 64 reduces, replayed from one CUDA graph,
# measured by llmbench after the timed runs) and the TPOT of the same run. Results in $OUT_DIR.
# Usage: scripts/bench/allreduce_sweep.sh [build-dir]     (OUT_DIR default out/allreduce)
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build-gpu}/llmbench
out=${OUT_DIR:-out/allreduce}
mkdir -p "$out/thin70"
cat >"$out/thin70/config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "hidden_act": "silu", "hidden_size": 8192, "intermediate_size": 2048,
 "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 64, "num_hidden_layers": 80,
 "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": false,
 "torch_dtype": "bfloat16", "vocab_size": 1024, "bos_token_id": 1, "eos_token_id": 2}
JSON
settings=(
  ""
  "NCCL_PROTO=LL"
  "NCCL_PROTO=LL128"
  "NCCL_PROTO=LL NCCL_ALGO=Ring"
  "NCCL_PROTO=LL NCCL_MAX_NCHANNELS=1"
  "NCCL_PROTO=LL NCCL_MAX_NCHANNELS=4"
  "LLMBENCH_TP_ALLREDUCE=window"
)
echo "| NCCL setting | model | all-reduce ms/step | µs per all-reduce | TPOT ms |"
echo "|---|---|---|---|---|"
i=0
for s in "${settings[@]}"; do
  for m in "$out/thin70" llama-3-8b; do
    i=$((i + 1))
    env $s timeout 180 "$bin" --log-level warn run --model "$m" --tp 2 --device cuda --dtype bfloat16 -b 1 -p 128 -n 32 \
      --warmup 2 --runs 5 --trim 1 --no-roofline -o "$out/r$i.json" >"$out/r$i.log" 2>&1 || { echo "| ${s:-default} | $(basename "$m") | failed: $(tail -1 "$out/r$i.log") | | |"; continue; }
    python3 - "$out/r$i.json" "${s:-default}" "$(basename "$m")" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
t = p["tensor_parallel"]
n = int(t["allreduce_method"].split()[0])
path = t["allreduce_method"].split("via ")[-1].rstrip(")").split(")")[0]
print(f"| {sys.argv[2]} ({path}) | {sys.argv[3]} | {t['allreduce_ms_per_step']:.3f} | {1000 * t['allreduce_ms_per_step'] / n:.1f} | "
      f"{p['summary']['tpot_ms']['trimmed_median']:.2f} |")
PY
  done
done
