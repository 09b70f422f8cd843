#!/usr/bin/env bash
# GPU host: where the GPU time of the prefill and of one decode step goes, kernel by kernel.
# Default: `llmbench profile` (libtorch's own profiler, Kineto/CUPTI: no nsys or ncu, kernels run as usual,
# about a minute with the model load): one prefill, N decode steps replayed from the CUDA graph and N
# launched eagerly, one table each (calls/step, µs/step, % of the step's wall time).
# Fallback: KERNEL_SPLIT_TOOL=ncu times one window of eager kernels with Nsight Compute, one metric
# (gpu__time_duration), at most 1000 kernels and under a time limit, so it can never run for minutes.
# Usage: scripts/bench/kernel_split.sh [extra llmbench profile flags, e.g. --attn sdpa --no-cuda-graph]
#   LLMBENCH=path (default build-gpu/llmbench), MODEL (qwen2.5-7b), BATCH (1), PROMPT (512), STEPS (20),
#   OUT_DIR (out/kernel-split)
#   ncu only: SKIP (kernels skipped first, default 1500: past the model load and the prefill), COUNT (300,
#   about one eager decode step of Qwen2.5-7B; at most 1000), NCU_TIMEOUT (seconds, default 180)
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=${LLMBENCH:-build-gpu/llmbench}
out=${OUT_DIR:-out/kernel-split}
model=${MODEL:-qwen2.5-7b} batch=${BATCH:-1} prompt=${PROMPT:-512}
[ -x "$bin" ] || { echo "kernel_split.sh: no llmbench at $bin: build it with scripts/gpu-build.sh (or set LLMBENCH)" >&2; exit 2; }
mkdir -p "$out"

if [ "${KERNEL_SPLIT_TOOL:-profile}" = profile ]; then
  "$bin" profile --model "$model" --batch "$batch" --prompt-len "$prompt" --steps "${STEPS:-20}" "$@" 2>&1 |
    tee "$out/profile.txt"
  exit "${PIPESTATUS[0]}"
fi

[ "${KERNEL_SPLIT_TOOL}" = ncu ] || { echo "kernel_split.sh: KERNEL_SPLIT_TOOL must be profile or ncu" >&2; exit 2; }
command -v ncu >/dev/null || { echo "kernel_split.sh: ncu is not installed" >&2; exit 2; }
count=${COUNT:-300}
[[ "$count" =~ ^[0-9]+$ ]] && [ "$count" -ge 1 ] && [ "$count" -le 1000 ] ||
  { echo "kernel_split.sh: COUNT must be 1..1000 (ncu replays every kernel it times), got '$count'" >&2; exit 2; }
# Eager launches (ncu times a CUDA graph as one launch), few decode steps, no ceilings measurement.
timeout "${NCU_TIMEOUT:-180}" ncu --launch-skip "${SKIP:-1500}" --launch-count "$count" --metrics gpu__time_duration.sum \
  --cache-control none --clock-control none --csv \
  "$bin" run --model "$model" --batch "$batch" --prompt-len "$prompt" --max-new-tokens 16 --warmup 0 --runs 1 --trim 0 \
  --no-cuda-graph --no-verify --no-roofline "$@" >"$out/ncu.csv" 2>"$out/ncu.log"
rc=$?
[ $rc = 124 ] && echo "kernel_split.sh: ncu stopped after ${NCU_TIMEOUT:-180} s; the kernels timed so far follow" >&2
python3 - "$out/ncu.csv" <<'PY'
import csv, sys
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"'))
        if r.get("Metric Name") == "gpu__time_duration.sum"]
by = {}
for r in rows:
    us = float(r["Metric Value"].replace(",", "")) * scale.get(r["Metric Unit"], 1.0)
    n, t = by.get(r["Kernel Name"], (0, 0.0))
    by[r["Kernel Name"]] = (n + 1, t + us)
total = sum(t for _, t in by.values())
print(f"{'share':>6} {'total us':>9} {'count':>6} {'avg us':>8}  kernel   ({len(rows)} kernels timed by ncu, eager launches)")
for name, (n, t) in sorted(by.items(), key=lambda kv: -kv[1][1]):
    print(f"{100 * t / max(total, 1e-9):5.1f}% {t:9.1f} {n:6d} {t / n:8.2f}  {name[:100]}")
print(f"all timed kernels: {total:.1f} us")
PY
