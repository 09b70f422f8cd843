#!/usr/bin/env bash
# GPU host with two H200s: tensor parallelism (issue 17) in one invocation, ~9 minutes with the build.
# Builds llmbench (CUDA, NCCL), checks tp 2 = tp 1 (tests/gpu/tp_parity.sh), then bf16, batch 1, prompt 512,
# 64 new tokens, random weights drawn on the GPUs, --verify on: Llama-3-8B tp 1 and tp 2, Llama-3-70B tp 2,
# the tp-2 points again with LLMBENCH_TP_ALLREDUCE=window; then `llmbench profile --tp 2` (Llama-3-8B) and
# serve --tp 2 (tests/gpu/serve_tp.sh).
# Prints a table against the issue's targets last; results and logs in $OUT_DIR.
# Usage: scripts/bench/tp_gpu.sh      (BUILD_DIR default build-gpu, OUT_DIR default out/tp, RUNS default 10)
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build-gpu}
out=${OUT_DIR:-out/tp}
runs=${RUNS:-10}
mkdir -p "$out"
rm -rf "$out"/*.json "$out"/*.log "$out/serve_tp"
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
bench() {  # name model tp [VAR=value…: environment of that run]
  local name=$1 model=$2 tp=$3
  shift 3
  echo "== $name"
  env "$@" timeout 420 "$bin" run --model "$model" --tp "$tp" "${common[@]}" -o "$out/$name.json" >"$out/$name.log" 2>&1
  echo "exit $?"; tail -4 "$out/$name.log"
}
bench llama8b_tp1 llama-3-8b 1
bench llama8b_tp2 llama-3-8b 2
bench llama70b_tp2 llama-3-70b 2
# The same two points with the small all-reduces through NCCL's symmetric window (opt-in, nccl_window.h).
bench llama8b_tp2_window llama-3-8b 2 LLMBENCH_TP_ALLREDUCE=window
bench llama70b_tp2_window llama-3-70b 2 LLMBENCH_TP_ALLREDUCE=window

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
for name in ("llama8b_tp1", "llama8b_tp2", "llama70b_tp2", "llama8b_tp2_window", "llama70b_tp2_window"):
    p = point(name)
    t = p.get("tensor_parallel") or {}
    mem = t.get("peak_allocated_bytes") or [p.get("memory", {}).get("peak_allocated_bytes", 0)]
    rows.append((name, p.get("status"), (p.get("verification") or {}).get("ok"), med(p, "tpot_ms"), med(p, "ttft_ms"),
                 t.get("allreduce_ms_per_step"), (p.get("roofline") or {}).get("mbu"),
                 " / ".join(f"{m / 2**30:.1f}" for m in mem),
                 t["allreduce_method"].split("via ")[1].split(")")[0] if "via " in t.get("allreduce_method", "") else "—"))
print("\n| point | status | verified | TPOT ms | TTFT ms | all-reduce ms/step | MBU (per device) | peak GiB per rank | all-reduce path |")
print("|---|---|---|---|---|---|---|---|---|")
fmt = lambda v, f="{:.2f}": "—" if v is None else f.format(v)
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]} | {fmt(r[3])} | {fmt(r[4])} | {fmt(r[5], '{:.3f}')} | {fmt(r[6], '{:.1%}')} | {r[7]} | {r[8]} |")
t1 = rows[0][3]
for tag, r8, r70 in (("ProcessGroupNCCL all-reduces", rows[1], rows[2]), ("NCCL window all-reduces", rows[3], rows[4])):
    t2, t70, ttft70 = r8[3], r70[3], r70[4]
    print(f"\ntargets (issue 17), {tag} (verified: 8B {r8[2]}, 70B {r70[2]}):")
    if t1 and t2: print(f"  Llama-3-8B decode bs1, tp2 vs tp1: {t1 / t2:.2f}x faster (target >= 1.5x): {'met' if t1 / t2 >= 1.5 else 'NOT met'}")
    if t70: print(f"  Llama-3-70B decode bs1, tp2: {t70:.2f} ms/step (target <= 21; floor ~16.6): {'met' if t70 <= 21 else 'NOT met'}")
    if ttft70: print(f"  Llama-3-70B TTFT bs1 x 512, tp2: {ttft70:.1f} ms (target <= 60): {'met' if ttft70 <= 60 else 'NOT met'}")
PY

echo "== llmbench profile --tp 2 (Llama-3-8B, rank 0's kernels; $out/profile_llama8b_tp2.txt)"
timeout 150 "$bin" profile --model llama-3-8b --tp 2 --steps 10 >"$out/profile_llama8b_tp2.txt" 2>&1
echo "exit $?"; grep -iE -m6 "nccl|wall|prefill" "$out/profile_llama8b_tp2.txt"

echo "== serve --tp 2 on the GPUs (tests/gpu/serve_tp.sh; its files in $out/serve_tp when it fails)"
KEEP_TEST_LOGS="$out/serve_tp" serve_log_level=debug timeout 240 bash tests/gpu/serve_tp.sh "$bin" >"$out/serve_tp.log" 2>&1
rc=$?
tail -3 "$out/serve_tp.log"
[ "$rc" = 0 ] && rm -rf "$out/serve_tp"
echo "results and logs: $out"
