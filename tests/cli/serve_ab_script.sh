#!/usr/bin/env bash
# scripts/bench/serve_ab.sh end to end on the CPU: two configurations of `llmbench serve --model tiny` (one
# with the engine's events deferred and batched prefill passes back to back) alternated over three rounds (an
# odd count, so the median is not the mean). Each configuration's environment and flags reach its servers
# (their logs say so), the table's per-round figures and medians equal those of the `llmbench load` results
# it read, and malformed configurations are refused.
set -u
bin=$(realpath "$1")
source "$(dirname "$0")/signal_lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"  # the servers started here are found by their working directory
fail() { echo "FAIL: $*"; tail -20 "$tmp/out.txt" 2>/dev/null; exit 1; }
mkdir -p "$tmp/ab/other" && touch "$tmp/ab/other/results.json"  # not this run's: must survive it

LLMBENCH="$bin" MODEL=tiny TOKENIZER=tiny DEVICE=cpu DTYPE=float32 INPUT_LEN=16 OUTPUT_LEN=6 CONCURRENCY=4 ROUNDS=3 \
  QUICK=1 OUT_DIR="$tmp/ab" timeout 300 bash "$root/scripts/bench/serve_ab.sh" \
  'plain|LLMBENCH_DEFER_EVENTS=0|' 'deferred|LLMBENCH_DEFER_EVENTS=1|--prefill-passes 0' >"$tmp/out.txt" 2>&1 \
  || fail "serve_ab.sh exited $?"

[ -f "$tmp/ab/other/results.json" ] || fail "serve_ab.sh removed files of OUT_DIR it did not write"
for r in 1 2 3; do
  grep -q "events deferred" "$tmp/ab/plain.$r/serve.log" && fail "round $r: plain deferred its events"
  grep -q "events deferred" "$tmp/ab/deferred.$r/serve.log" || fail "round $r: deferred did not defer"
  grep -q "passes while requests wait" "$tmp/ab/deferred.$r/serve.log" || fail "round $r: --prefill-passes 0 not passed"
  grep -q "passes while requests wait" "$tmp/ab/plain.$r/serve.log" && fail "round $r: plain got deferred's flags"
done
python3 - "$tmp/out.txt" "$tmp/ab" <<'PY' || fail "table"
import json, os, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 8 and cells[0] in ("plain", "deferred"):
        rows[cells[0]] = cells
assert set(rows) == {"plain", "deferred"}, rows
for label, cells in rows.items():
    tps = [json.load(open(os.path.join(sys.argv[2], f"{label}.{r}", "load_c4.json")))["points"][0]["throughput"]["output_tokens_per_s"]
           for r in (1, 2, 3)]
    assert cells[3] == " / ".join(f"{t:,.0f}" for t in tps), (cells, tps)
    assert cells[4] == f"{statistics.median(tps):,.0f}", (cells, tps)
    assert cells[7] == "0", cells
    lo, hi = (float(x) for x in cells[6].split("–"))  # host work ms per step, min–max
    assert 0 <= lo <= hi, cells
assert rows["deferred"][1] == "LLMBENCH_DEFER_EVENTS=1" and rows["deferred"][2] == "--prefill-passes 0", rows
PY

# Malformed configurations and rounds: usage errors before any server starts.
for spec in 'no-bars' 'bad label|X=1|' ; do
  bash "$root/scripts/bench/serve_ab.sh" "$spec" >/dev/null 2>"$tmp/err.txt"; rc=$?
  [ $rc = 2 ] || fail "spec '$spec': exit $rc, expected 2"
  grep -q "is not LABEL" "$tmp/err.txt" || fail "spec '$spec': $(cat "$tmp/err.txt")"
done
ROUNDS=0 bash "$root/scripts/bench/serve_ab.sh" 'a||' >/dev/null 2>"$tmp/err.txt"; rc=$?
[ $rc = 2 ] && grep -q "ROUNDS must be" "$tmp/err.txt" || fail "ROUNDS=0: exit $rc: $(cat "$tmp/err.txt")"
bash "$root/scripts/bench/serve_ab.sh" >/dev/null 2>&1; [ $? = 2 ] || fail "no configuration: not a usage error"

sleep 0.5
left=$(servers_started_in "$tmp")
[ -z "$left" ] || fail "a server outlived the script (pid $left)"
echo "ok"
