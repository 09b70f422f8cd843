#!/usr/bin/env bash
# GPU host: the two decode-attention kernels (split: three launches on CUDA cores; mma: one launch on
# tensor cores, a cluster per row) side by side, in one invocation:
#   1. build-gpu/tests/bench_decode_attention: µs per call and KV-read GB/s of both kernels (default
#      shapes, then batch 64 × 1024 columns with 576 valid, the server's column bucket);
#   2. `llmbench run` (prompt 512, 64 new tokens, verification on) of Qwen2.5-7B at batch 1, 4, 16 and 64
#      and Llama-3-8B at batch 1 and 4, once per kernel (LLMBENCH_DECODE_ATTENTION), in the order
#      split, mma, split, mma so that drift hits both; the table gives each kernel's best TPOT and TTFT.
# Usage: scripts/bench/decode_attention_ab.sh [build-dir]    (OUT_DIR default out/decode_attention_ab;
#        RUNS default 10; ROUNDS default 2; AB_WORKLOADS default "qwen2.5-7b:1,4,16,64 llama-3-8b:1,4")
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
out=${OUT_DIR:-out/decode_attention_ab}
runs=${RUNS:-10}
workloads=${AB_WORKLOADS:-"qwen2.5-7b:1,4,16,64 llama-3-8b:1,4"}
mkdir -p "$out"

echo "## bench_decode_attention"
LLMBENCH_BENCH_KERNELS=split,mma "$build/tests/bench_decode_attention" 2>&1 | tee "$out/bench.txt"
LLMBENCH_BENCH_KERNELS=split,mma LLMBENCH_BENCH_VALID=576 "$build/tests/bench_decode_attention" 64 1024 2>&1 |
  tee -a "$out/bench.txt"

echo "## llmbench run, split vs mma"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for kernel in split mma; do
    for w in $workloads; do
      model=${w%%:*} batches=${w#*:}
      f="$out/run_${kernel}_${model}_r$round.json"
      if ! LLMBENCH_DECODE_ATTENTION=$kernel timeout 400 "$build/llmbench" --log-level warn run --model "$model" \
        --device cuda --dtype bfloat16 --batch "$batches" --prompt-len 512 --max-new-tokens 64 --warmup 2 \
        --runs "$runs" --output "$f" >"${f%.json}.log" 2>&1; then
        echo "$kernel $model round $round failed: $(tail -1 "${f%.json}.log")"
      fi
    done
  done
done

python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
best = {}  # (model, batch, kernel) -> (tpot, ttft, verified)
for f in sorted(glob.glob(os.path.join(out, "run_*.json"))):
    kernel = os.path.basename(f).split("_")[1]
    for p in json.load(open(f))["points"]:
        if p.get("status") != "ok":
            continue
        s, prm = p["summary"], p["params"]
        key = (prm["model"], prm["batch"], kernel)
        tpot, ttft = s["tpot_ms"]["trimmed_median"], s["ttft_ms"]["trimmed_median"]
        ok = (p.get("verification") or {}).get("ok")
        old = best.get(key)
        if old is None or tpot < old[0]:
            best[key] = (tpot, ttft if old is None else min(ttft, old[1]), ok)
        else:
            best[key] = (old[0], min(ttft, old[1]), old[2] and ok)
print("| model | batch | TPOT ms split | TPOT ms mma | change | TTFT ms split / mma | verified (split / mma) |")
print("|---|---|---|---|---|---|---|")
for (model, batch) in sorted({(m, b) for m, b, _ in best}, key=lambda x: (x[0], x[1])):
    a, b = best.get((model, batch, "split")), best.get((model, batch, "mma"))
    if not a or not b:
        print(f"| {model} | {batch} | {a[0] if a else 'failed'} | {b[0] if b else 'failed'} | | | |")
        continue
    print(f"| {model} | {batch} | {a[0]:.3f} | {b[0]:.3f} | {100 * (b[0] - a[0]) / a[0]:+.1f} % | "
          f"{a[1]:.2f} / {b[1]:.2f} | {a[2]} / {b[2]} |")
PY
