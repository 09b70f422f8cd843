#!/usr/bin/env bash
# GPU host: the seed's orthogonal sweep, timed, then its report:
#   llmbench run --model qwen2.5-7b --batch 1,4,16 --max-new-tokens 512,1024,2048 \
#     --temperature 0.2,0.7,1.0 --runs 5 --warmup 1 --verify
# 27 points × 6 generates. On an H200 at the 2026-12-01 decode speeds that is about 193,000 decode steps,
# ≈ 17–18 minutes (--estimate prints the arithmetic): longer than one 10-minute device call, so the sweep
# can also run one batch size per call (--batch) and be reported once at the end (--report-only).
# Usage: scripts/bench/orthogonal_sweep.sh [--quick] [--batch LIST | --part K] [--with-greedy] [--report-only]
#                                           [--estimate]
#   --quick        2 timed runs, 1 warm-up, no trimming (3 generates a point instead of 6: about half the time)
#   --batch LIST   only these batch sizes (default 1,4,16); results in $OUT_DIR/sweep_b<LIST>.json
#   --part K       part K of 3 (1, 2, 3: batch 1, 4, 16 of the seed's list; the K-th of --batch LIST): one
#                  device call each (≈ 5.5 / 5.8 / 6.5 min), then --report-only
#   --with-greedy  also temperature 0: --verify checks greedy points only, and the seed's sweep has none
#   --report-only  no run: the report of every sweep*.json in $OUT_DIR, with the wall times recorded
#   --estimate     no run: the decode steps and the expected time (from assumed ms/step, not a measurement)
#   LLMBENCH=path  llmbench binary (default build-gpu/llmbench); OUT_DIR=dir (default out/orthogonal_sweep)
#   SWEEP_MODEL, SWEEP_NEW_TOKENS, SWEEP_TEMPERATURES, SWEEP_PROMPT_LEN: the axes (defaults: the seed's;
#   prompt length: llmbench's default 512); SWEEP_EXTRA: more llmbench run flags (the tests use --device cpu)
# Output: $OUT_DIR/sweep*.json, run logs, wall*.txt, report.html (charts when web assets are built in),
# report.md (the tables, printed at the end).
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=${LLMBENCH:-build-gpu/llmbench}
out=${OUT_DIR:-out/orthogonal_sweep}
model=${SWEEP_MODEL:-qwen2.5-7b}
new_tokens=${SWEEP_NEW_TOKENS:-512,1024,2048}
temperatures=${SWEEP_TEMPERATURES:-0.2,0.7,1.0}
prompt_len=${SWEEP_PROMPT_LEN:-512}
batches=1,4,16 batch_given=0 part="" quick=0 report_only=0 estimate=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --batch) [ $# -ge 2 ] || { echo "orthogonal_sweep.sh: --batch needs a list" >&2; exit 2; }
             batches=$2 batch_given=1; shift ;;
    --part) [ $# -ge 2 ] || { echo "orthogonal_sweep.sh: --part needs a number" >&2; exit 2; }
            part=$2; shift ;;
    --with-greedy) temperatures="0,$temperatures" ;;
    --report-only) report_only=1 ;;
    --estimate) estimate=1 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "orthogonal_sweep.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ "$batches" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "orthogonal_sweep.sh: --batch '$batches' is not a comma list of numbers" >&2; exit 2; }
if [ -n "$part" ]; then
  IFS=, read -r -a sizes <<<"$batches"
  [[ "$part" =~ ^[0-9]+$ ]] && [ "$part" -ge 1 ] && [ "$part" -le ${#sizes[@]} ] ||
    { echo "orthogonal_sweep.sh: --part must be 1..${#sizes[@]} (one per batch size of $batches), got '$part'" >&2; exit 2; }
  batches=${sizes[$((part - 1))]} batch_given=1
fi
if [ "$quick" = 1 ]; then runs=2 warmup=1 timing=(--runs 2 --warmup 1 --trim 0); else runs=5 warmup=1 timing=(--runs 5 --warmup 1); fi

if [ "$estimate" = 1 ]; then
  # Assumed decode ms/step per batch size (H200, Qwen2.5-7B, 2026-12-01: 4.86 / 5.06 / 5.38 at ~600 cached
  # columns, plus the longer caches of this sweep); other batch sizes: the batch-16 figure. Not measured here.
  python3 - "$batches" "$new_tokens" "$temperatures" "$runs" "$warmup" <<'PY'
import sys
batches = [int(b) for b in sys.argv[1].split(",")]
new = [int(n) for n in sys.argv[2].split(",")]
temps = sys.argv[3].split(",")
generates = int(sys.argv[4]) + int(sys.argv[5])
ms = {1: 4.95, 4: 5.2, 16: 5.8}
total_steps = total_s = 0
for b in batches:
    steps = generates * len(temps) * sum(n - 1 for n in new)
    s = steps * ms.get(b, 5.8) / 1e3
    total_steps += steps
    total_s += s
    print(f"batch {b}: {len(new) * len(temps)} points x {generates} generates, {steps:,} decode steps x "
          f"{ms.get(b, 5.8)} ms = {s / 60:.1f} min")
points = len(batches) * len(new) * len(temps)
print(f"all: {points} points, {points * generates} generates, {total_steps:,} decode steps, about "
      f"{total_s / 60:.1f} min of decode + prefills (~0.5 min) + start-up (~0.5 min); assumed ms/step, not a measurement")
PY
  exit 0
fi

mkdir -p "$out"
if [ "$report_only" = 0 ]; then
  [ -x "$bin" ] || { echo "orthogonal_sweep.sh: no llmbench at $bin: build it with scripts/gpu-build.sh (or set LLMBENCH)" >&2; exit 2; }
  if [ "$batch_given" = 1 ]; then tag="_b${batches//,/-}"; else tag=""; rm -f "$out"/sweep*.json "$out"/wall*.txt; fi
  json="$out/sweep$tag.json"
  rm -f "$json" "$out/wall$tag.txt"
  cmd=("$bin" run --model "$model" --batch "$batches" --prompt-len "$prompt_len" --max-new-tokens "$new_tokens"
       --temperature "$temperatures" "${timing[@]}" --verify --output "$json" ${SWEEP_EXTRA:-})
  echo "orthogonal_sweep: $(date -u '+%Y-%m-%d %H:%M UTC'): ${cmd[*]}"
  start=$(date +%s.%N)
  "${cmd[@]}" 2>&1 | tee "$out/run$tag.log"
  rc=${PIPESTATUS[0]}
  wall=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  echo "batch $batches: wall time $wall s (exit $rc): ${cmd[*]}" >"$out/wall$tag.txt"
  echo "orthogonal_sweep: wall time ${wall} s for batch $batches (exit $rc)"
  if [ ! -s "$json" ]; then echo "orthogonal_sweep: no results were written; see $out/run$tag.log" >&2; exit 1; fi
  [ "$batch_given" = 1 ] && echo "orthogonal_sweep: part written; after the last part: $0 --report-only"
fi

shopt -s nullglob
files=("$out"/sweep*.json)
[ ${#files[@]} -gt 0 ] || { echo "orthogonal_sweep.sh: no sweep*.json in $out" >&2; exit 1; }
if [ "$report_only" = 0 ] && [ "$batch_given" = 1 ]; then exit "$rc"; fi
report_bin=$bin
[ -x "$report_bin" ] || report_bin=$(command -v llmbench || true)
[ -n "$report_bin" ] || { echo "orthogonal_sweep.sh: no llmbench to make the report" >&2; exit 2; }
"$report_bin" report "${files[@]}" -o "$out/report.html" || exit 1
"$report_bin" report "${files[@]}" --format md -o "$out/report.md" || exit 1
echo
cat "$out/report.md"
echo
cat "$out"/wall*.txt
python3 - "${files[@]}" <<'PY'
import json, sys
points = [p for f in sys.argv[1:] for p in json.load(open(f)).get("points", [])]
bad = [p for p in points if p.get("status") != "ok"]
greedy = [p for p in points if p.get("params", {}).get("temperature") == 0]
verified = [p for p in greedy if (p.get("verification") or {}).get("ok")]
print(f"orthogonal_sweep: {len(points)} points, {len(points) - len(bad)} ok"
      + (f", failed: {', '.join(str(p.get('error', p.get('status'))) for p in bad)}" if bad else ""))
if greedy:
    print(f"verification: ok on {len(verified)} of {len(greedy)} greedy points")
else:
    print("verification: none of these points is greedy (temperature 0), and --verify checks greedy points only;"
          " --with-greedy adds temperature 0")
sys.exit(1 if bad else 0)
PY
rc=$?
echo "orthogonal_sweep: report in $out/report.html and $out/report.md"
exit $rc
