#!/usr/bin/env bash
# GPU host with two H200s: tensor parallelism (issue 17) in one invocation, ~7 minutes with the build.
# Builds llmbench (CUDA, NCCL), checks tp 2 = tp 1 (tests/gpu/tp_parity.sh), then bf16, batch 1, prompt 512,
# 64 new tokens, random weights drawn on the GPUs, --verify on: Llama-3-8B tp 1 and tp 2, Llama-3-70B tp 2.
# Prints a table against the issue's targets last; results and logs in $OUT_DIR.
# Usage: scripts/bench/tp_gpu.sh      (BUILD_DIR default build-gpu, OUT_DIR default out/tp, RUNS default 10)
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build-gpu}
out=${OUT_DIR:-out/tp}
runs=${RUNS:-10}
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.log
echo "tp_gpu: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi -L | grep -c '^GPU') GPU(s)"
nvidia-smi -L | grep -q 'GPU 1' || { echo "tp_gpu.sh: needs 2 GPUs" >&2; exit 2; }

torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" -DLLMBENCH_CUDA=ON \
    >"$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
fi
grep -h "tensor parallelism" "$out/configure.log" 2>/dev/null
time cmake --build "$build" -j"$(nproc)" --target llmbench >"$out/build.log" 2>&1 || { grep -m5 -B2 -A5 error "$out/build.log"; exit 1; }
bin=$build/llmbench

echo "== parity (tests/gpu/tp_parity.sh)"
bash tests/gpu/tp_parity.sh "$bin" 2>&1 | tee "$out/parity.log" | tail -4

common=(--dtype bfloat16 --device cuda -b 1 -p 512 -n 64 --warmup 3 --runs "$runs" --trim 1 --verify --format table)
bench() {  # name model tp
  echo "== $1"
  timeout 420 "$bin" run --model "$2" --tp "$3" "${common[@]}" -o "$out/$1.json" >"$out/$1.log" 2>&1
  echo "exit $?"; tail -4 "$out/$1.log"
}
bench llama8b_tp1 llama-3-8b 1
bench llama8b_tp2 llama-3-8b 2
bench llama70b_tp2 llama-3-70b 2

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def point(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))["points"][0]
    except Exception as e:
        return {"status": f"missing ({e.__class__.__name__})"}
def med(p, m):
    return p.get("summary", {}).get(m, {}).get("trimmed_median")
rows = []
for name in ("llama8b_tp1", "llama8b_tp2", "llama70b_tp2"):
    p = point(name)
    t = p.get("tensor_parallel") or {}
    mem = t.get("peak_allocated_bytes") or [p.get("memory", {}).get("peak_allocated_bytes", 0)]
    rows.append((name, p.get("status"), (p.get("verification") or {}).get("ok"), med(p, "tpot_ms"), med(p, "ttft_ms"),
                 t.get("allreduce_ms_per_step"), (p.get("roofline") or {}).get("mbu"),
                 " / ".join(f"{m / 2**30:.1f}" for m in mem)))
print("\n| point | status | verified | TPOT ms | TTFT ms | all-reduce ms/step | MBU (per device) | peak GiB per rank |")
print("|---|---|---|---|---|---|---|---|")
fmt = lambda v, f="{:.2f}": "—" if v is None else f.format(v)
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]} | {fmt(r[3])} | {fmt(r[4])} | {fmt(r[5], '{:.3f}')} | {fmt(r[6], '{:.1%}')} | {r[7]} |")
t1, t2, t70, ttft70 = rows[0][3], rows[1][3], rows[2][3], rows[2][4]
print("\ntargets (issue 17):")
if t1 and t2: print(f"  Llama-3-8B decode bs1, tp2 vs tp1: {t1 / t2:.2f}x faster (target >= 1.5x): {'met' if t1 / t2 >= 1.5 else 'NOT met'}")
if t70: print(f"  Llama-3-70B decode bs1, tp2: {t70:.2f} ms/step (target <= 21; floor ~16.6): {'met' if t70 <= 21 else 'NOT met'}")
if ttft70: print(f"  Llama-3-70B TTFT bs1 x 512, tp2: {ttft70:.1f} ms (target <= 60): {'met' if ttft70 <= 60 else 'NOT met'}")
PY
echo "results and logs: $out"
