#!/usr/bin/env bash
# GPU host: the per-kernel time split of `llmbench run` (decode-dominated: prompt 512, 256 new tokens), from
# Nsight Systems when it is installed, else Nsight Compute over a window of kernels after the warm-up.
# Usage: scripts/bench/kernel_split.sh [extra llmbench run flags...]
#   LLMBENCH=path (default build-gpu/llmbench), MODEL (qwen2.5-7b), BATCH (1), OUT_DIR (out/kernel-split)
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=${LLMBENCH:-build-gpu/llmbench}
out=${OUT_DIR:-out/kernel-split}
mkdir -p "$out"
args=(run --model "${MODEL:-qwen2.5-7b}" --batch "${BATCH:-1}" --prompt-len 512 --max-new-tokens 256
      --warmup 1 --runs 2 --trim 0 --no-verify --no-roofline "$@")
if command -v nsys >/dev/null; then
  nsys profile -t cuda --cuda-graph-trace=node -o "$out/prof" -f true "$bin" "${args[@]}" >"$out/run.log" 2>&1
  # Kernel time per name over the whole run: total, count, average (ns). Decode is > 90 % of it.
  nsys stats -q -r cuda_gpu_kern_sum -f csv "$out/prof.nsys-rep" >"$out/kern_sum.csv" 2>/dev/null
  python3 - "$out/kern_sum.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
total = sum(float(r["Total Time (ns)"]) for r in rows)
print(f"{'share':>6} {'total ms':>9} {'count':>7} {'avg us':>8}  kernel")
for r in rows[:20]:
    t = float(r["Total Time (ns)"])
    print(f"{100*t/total:5.1f}% {t/1e6:9.1f} {int(r['Instances']):7d} {float(r['Avg (ns)'])/1e3:8.2f}  {r['Name'][:110]}")
print(f"all kernels: {total/1e6:.1f} ms")
PY
elif command -v ncu >/dev/null; then
  ncu --launch-skip "${SKIP:-20000}" --launch-count "${COUNT:-400}" --cache-control none --clock-control none \
    --print-summary per-kernel "$bin" "${args[@]}" >"$out/ncu.txt" 2>&1
  grep -E "^  [^ ].*\(|Duration" "$out/ncu.txt" | head -80
else
  echo "kernel_split.sh: neither nsys nor ncu is installed" >&2; exit 2
fi
