#!/usr/bin/env bash
# GPU host: the decode GEMV paths side by side, in one invocation:
#   1. build-gpu/tests/bench_gemv: µs and GB/s per decode matrix of Qwen2.5-7B and Llama-3-8B at B = 1, 4,
#      16 for cuBLAS, the simt and the mma kernel (bf16, int8, fp8 weights), each result checked;
#   2. `llmbench run` (prompt 512, 64 new tokens, verification on) per path: cublas (--no-gemv), simt and
#      mma (--gemv with LLMBENCH_GEMV_KERNEL); a "-nopdl" suffix runs that path with LLMBENCH_PDL=0
#      (kernels launched without programmatic dependent launch). Paths run in turn per round so that
#      drift hits all; bf16 workloads and quantized ones (cuBLAS has no int8/fp8 GEMV: those skip it).
# Usage: scripts/bench/gemv_ab.sh [build-dir]   (OUT_DIR default out/gemv_ab; RUNS default 5; ROUNDS 1;
#        PATHS default "cublas simt mma"; BF16_WORKLOADS default "qwen2.5-7b:1,4,16 llama-3-8b:1,4";
#        QUANT_WORKLOADS default "qwen2.5-7b:1,4:int8,fp8"; SKIP_MICRO=1 skips step 1)
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
out=${OUT_DIR:-out/gemv_ab}
runs=${RUNS:-5}
bf16_workloads=${BF16_WORKLOADS-"qwen2.5-7b:1,4,16 llama-3-8b:1,4"}
quant_workloads=${QUANT_WORKLOADS-"qwen2.5-7b:1,4:int8,fp8"}
mkdir -p "$out"

if [ "${SKIP_MICRO:-0}" != 1 ]; then
  echo "## bench_gemv"
  "$build/tests/bench_gemv" 2>&1 | tee "$out/bench.txt" | grep -E "^device| layer |WRONG|skipped"
fi

run() {  # path model batches weights round
  local path=$1 model=$2 batches=$3 weights=$4 round=$5
  local f="$out/run_${path}_${model}_${weights//,/-}_r$round.json" gemv=--gemv kernel=${1%-nopdl} pdl=1
  [ "$kernel" != "$path" ] && pdl=0
  [ "$kernel" = cublas ] && gemv=--no-gemv kernel=auto
  if ! LLMBENCH_PDL=$pdl LLMBENCH_GEMV_KERNEL=$kernel timeout 400 "$build/llmbench" \
    --log-level warn run --model "$model" --device cuda --dtype bfloat16 --batch "$batches" --weights "$weights" \
    $gemv --prompt-len 512 --max-new-tokens 64 --warmup 2 --runs "$runs" --output "$f" >"${f%.json}.log" 2>&1; then
    echo "$path $model $weights round $round failed: $(tail -1 "${f%.json}.log")"
  fi
}

echo "## llmbench run per GEMV path"
for round in $(seq 1 "${ROUNDS:-1}"); do
  for path in ${PATHS:-cublas simt mma}; do
    for w in $bf16_workloads; do run "$path" "${w%%:*}" "${w#*:}" bf16 "$round"; done
    [ "${path%-nopdl}" = cublas ] && continue
    for w in $quant_workloads; do
      IFS=: read -r model batches weights <<<"$w"
      run "$path" "$model" "$batches" "$weights" "$round"
    done
  done
done

python3 - "$out" "${PATHS:-cublas simt mma}" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
best = {}  # (model, weights, batch, path) -> (tpot, ttft, verified, gemv_mma)
for f in sorted(glob.glob(os.path.join(out, "run_*.json"))):
    path = os.path.basename(f)[len("run_"):].split("_")[0]
    for p in json.load(open(f))["points"]:
        if p.get("status") != "ok":
            continue
        s, prm = p["summary"], p["params"]
        key = (prm["model"], prm.get("weights", "bf16"), prm["batch"], path)
        tpot, ttft = s["tpot_ms"]["trimmed_median"], s["ttft_ms"]["trimmed_median"]
        ok = (p.get("verification") or {}).get("ok")
        old = best.get(key)
        if old is None or tpot < old[0]:
            best[key] = (tpot, ttft, ok, p.get("paths", {}).get("gemv_mma"))
paths = sys.argv[2].split()
print("| model | weights | batch | " + " | ".join(f"TPOT ms {p}" for p in paths) + " | TTFT ms (same order) | verified |")
print("|---|---|---|" + "---|" * len(paths) + "---|---|")
for (model, weights, batch) in sorted({k[:3] for k in best}):
    row = [best.get((model, weights, batch, p)) for p in paths]
    tpot = " | ".join(f"{r[0]:.3f}" if r else "–" for r in row)
    ttft = " / ".join(f"{r[1]:.2f}" if r else "–" for r in row)
    verified = " / ".join(str(r[2]) for r in row if r)
    print(f"| {model} | {weights} | {batch} | {tpot} | {ttft} | {verified} |")
PY
