#!/usr/bin/env bash
# GPU (2 GPUs, NCCL): a Llama-3-8B-shaped model (4 layers, random weights) at --tp 2 against --tp 1 in
# bfloat16: the prefill's last logits agree to 1 % of their range, and `run --tp 2` (CUDA graph with the
# NCCL all-reduces captured, fused kernels) passes its verification against the plain path.
# Exit 77 (skipped) without two GPUs.
set -u
bin=$1
fail() { echo "FAIL: $*"; exit 1; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -ge 2 ] || { echo "SKIP: needs 2 GPUs, found ${gpus:-0}"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/llama8b4"
cat >"$tmp/llama8b4/config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "bos_token_id": 128000, "eos_token_id": [128001, 128009],
 "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 8192,
 "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 4, "num_key_value_heads": 8,
 "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
 "vocab_size": 128256}
JSON
ids=$(python3 -c 'import random; r=random.Random(3); print(",".join(str(r.randrange(128256)) for _ in range(64)))')
for tp in 1 2; do
  timeout 300 "$bin" --log-level warn generate --model "$tmp/llama8b4" --device cuda --dtype bfloat16 --prompt-ids "$ids" \
    --max-new-tokens 8 --ignore-eos --json --dump-logits "$tmp/l$tp.json" --tp $tp >"$tmp/g$tp.json" \
    || fail "generate --tp $tp: $(cat "$tmp/g$tp.json")"
done
python3 - "$tmp" <<'PY' || fail "tp 2 logits differ from tp 1"
import json, sys
t = sys.argv[1]
a, b = (json.load(open(f"{t}/l{k}.json"))["last_logits"][0] for k in (1, 2))
span = max(a) - min(a)
gap = max(abs(x - y) for x, y in zip(a, b)) / span
print(f"tp2 vs tp1 last logits: max gap {gap:.4%} of the range; argmax {a.index(max(a))} vs {b.index(max(b))}")
assert gap < 0.01, gap
assert json.load(open(f"{t}/g2.json"))["tp_backend"] == "nccl"
PY
timeout 300 "$bin" --log-level warn run --model "$tmp/llama8b4" --device cuda --dtype bfloat16 -b 2 -p 128 -n 16 \
  --warmup 1 --runs 3 --trim 0 --no-roofline --tp 2 --verify -o "$tmp/r2.json" >/dev/null || fail "run --tp 2 (verification or error)"
python3 - "$tmp/r2.json" <<'PY' || fail "run --tp 2 results"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["status"] == "ok" and p["verification"]["ok"], (p["error"], p["verification"])
assert p["paths"]["cuda_graph"] and p["tensor_parallel"]["backend"] == "nccl", (p["paths"], p["tensor_parallel"])
assert p["tensor_parallel"]["devices"] == ["cuda:0", "cuda:1"], p["tensor_parallel"]
print("run --tp 2: verification ok, worst gap", p["verification"]["worst_gap"], "allreduce ms/step",
      p["tensor_parallel"]["allreduce_ms_per_step"])
PY
echo "tp_parity: ok"
