#!/usr/bin/env bash
# Servers of two or more configurations at one load point, alternated over several rounds (so that the
# host's drift hits every configuration alike), then one table: output tok/s per round with the median,
# the engine's decode step and host work per step, and the failed requests. Each server is one
# scripts/bench/serve_gpu.sh run (SKIP_RUN=1) at the highest of CONCURRENCY.
# Usage: scripts/bench/serve_ab.sh 'LABEL|ENV=V ...|serve flags' 'LABEL|ENV=V ...|serve flags' ...
#   e.g. scripts/bench/serve_ab.sh 'at-once|LLMBENCH_DEFER_EVENTS=0|--attn sdpa' 'deferred||--attn sdpa'
#   ROUNDS=N (default 3), QUICK=1 (serve_gpu.sh --quick: 2 requests per stream instead of 4), OUT_DIR
#   (default out/serve_ab); MODEL, CONCURRENCY (default 64), INPUT_LEN, OUTPUT_LEN, DEVICE, DTYPE, TOKENIZER,
#   LLMBENCH, TIMEOUT_S and MAX_CONTEXT go to serve_gpu.sh as they are.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
for spec in "$@"; do
  label=${spec%%|*}
  [[ "$spec" == *"|"*"|"* && "$label" =~ ^[A-Za-z0-9._-]+$ ]] ||
    { echo "serve_ab.sh: '$spec' is not LABEL|ENV=V ...|serve flags (LABEL: letters, digits, . _ -)" >&2; exit 2; }
done
out=${OUT_DIR:-out/serve_ab}
rounds=${ROUNDS:-3}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "serve_ab.sh: ROUNDS must be a positive integer, got '$rounds'" >&2; exit 2; }
export CONCURRENCY=${CONCURRENCY:-64}
mkdir -p "$out"
for spec in "$@"; do rm -rf "$out/${spec%%|*}".*; done  # this run's own servers only: OUT_DIR may hold more
echo "serve_ab: $(date -u '+%Y-%m-%d %H:%M UTC'), $# configurations × $rounds rounds, concurrency $CONCURRENCY"
for r in $(seq "$rounds"); do
  for spec in "$@"; do
    label=${spec%%|*} rest=${spec#*|}
    envs=${rest%%|*} args=${rest#*|}
    # shellcheck disable=SC2086  # the assignments are words on purpose
    env $envs OUT_DIR="$out/$label.$r" SKIP_RUN=1 SERVE_ARGS="$args" scripts/bench/serve_gpu.sh \
      $([ "${QUICK:-0}" = 1 ] && echo --quick) >"$out/$label.$r.txt" 2>&1
    echo "serve_ab: $label round $r: $(grep -o '| [0-9.]* | [0-9.]* |$' "$out/$label.$r.txt" | tail -1 | awk '{print $2}') tok/s"
  done
done
python3 - "$out" "$rounds" "${CONCURRENCY##*,}" "$@" <<'PY'
import json, os, re, statistics, sys
out, rounds, conc, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
print("\n| configuration | env | serve flags | output tok/s per round | median | decode step ms | host work ms per step | failed |")
print("|---|---|---|---|---|---|---|---|")
for spec in specs:
    label, envs, args = spec.split("|", 2)
    tps, steps, hosts, failed = [], [], [], 0
    for r in range(1, rounds + 1):
        try:
            p = json.load(open(os.path.join(out, f"{label}.{r}", f"load_c{conc}.json")))["points"][0]
            tps.append(p["throughput"]["output_tokens_per_s"])
            failed += p["requests"]["failed"]
        except (OSError, KeyError, IndexError, ValueError):
            tps.append(None)
        text = open(os.path.join(out, f"{label}.{r}.txt")).read()
        m = re.search(r"decode steps [0-9.]+ s \(([0-9.]+) ms each\)", text)
        steps += [float(m.group(1))] if m else []
        m = re.search(r"host work [0-9.]+ s \(([0-9.]+) ms", text)
        hosts += [float(m.group(1))] if m else []
    got = [t for t in tps if t is not None]
    per_round = " / ".join("failed" if t is None else f"{t:,.0f}" for t in tps)
    median = f"{statistics.median(got):,.0f}" if got else "–"
    span = lambda xs: f"{min(xs):.3f}–{max(xs):.3f}" if xs else "–"
    print(f"| {label} | {envs or '–'} | {args or '–'} | {per_round} | {median} | {span(steps)} | {span(hosts)} | {failed} |")
PY
