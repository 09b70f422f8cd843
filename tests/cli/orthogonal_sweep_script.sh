#!/usr/bin/env bash
# scripts/bench/orthogonal_sweep.sh end to end with the real llmbench on the tiny model (CPU, small axes):
# the seed's flags reach `llmbench run`, the wall time and the report are written, split runs (--batch) are
# reported together (--report-only), and the estimate is the seed sweep's arithmetic.
set -u
bin=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
script="$root/scripts/bench/orthogonal_sweep.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export LLMBENCH="$bin" SWEEP_MODEL=tiny SWEEP_NEW_TOKENS=3,5 SWEEP_PROMPT_LEN=6 SWEEP_EXTRA="--device cpu --no-roofline"

# The seed sweep's size: 27 points x 6 generates, (511 + 1023 + 2047) x 3 temperatures x 6 decode steps per batch.
est=$(env -u SWEEP_NEW_TOKENS "$script" --estimate) || fail "--estimate exited non-zero"
grep -q "all: 27 points, 162 generates, 193,374 decode steps" <<<"$est" || fail "estimate: $est"

# --quick, one invocation: 2 batches x 2 lengths x 3 temperatures = 12 points.
OUT_DIR="$tmp/one" SWEEP_NEW_TOKENS=3 "$script" --quick --batch 1,2 >"$tmp/part.log" 2>&1 || fail "part: $(tail "$tmp/part.log")"
[ -s "$tmp/one/sweep_b1-2.json" ] && [ ! -e "$tmp/one/report.md" ] || fail "a part writes sweep_b1-2.json and no report"
OUT_DIR="$tmp/one" "$script" --quick >"$tmp/one.log" 2>&1 || fail "quick sweep failed: $(tail -20 "$tmp/one.log")"
grep -q -- "run --model tiny --batch 1,4,16 --prompt-len 6 --max-new-tokens 3,5 --temperature 0.2,0.7,1.0 --runs 2 --warmup 1 --trim 0 --verify" \
  "$tmp/one.log" || fail "the llmbench command: $(grep orthogonal_sweep: "$tmp/one.log")"
grep -qE "^orthogonal_sweep: wall time [0-9.]+ s for batch 1,4,16 \(exit 0\)" "$tmp/one.log" || fail "no wall time: $(cat "$tmp/one.log")"
grep -q "orthogonal_sweep: 18 points, 18 ok" "$tmp/one.log" || fail "point count: $(tail "$tmp/one.log")"
grep -q "verification: none of these points is greedy" "$tmp/one.log" || fail "no note on verification"
[ -s "$tmp/one/report.html" ] && [ -s "$tmp/one/report.md" ] || fail "report files missing"
[ ! -e "$tmp/one/sweep_b1-2.json" ] || fail "a full run must drop the parts of an earlier split run"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["points"]) == 18' "$tmp/one/sweep.json" \
  || fail "sweep.json does not hold 18 points"

# Split across calls: one batch size each, greedy added, then one report of both parts.
OUT_DIR="$tmp/parts" SWEEP_NEW_TOKENS=3 "$script" --quick --with-greedy --part 1 >"$tmp/p1.log" 2>&1 || fail "part 1: $(tail "$tmp/p1.log")"
[ -s "$tmp/parts/sweep_b1.json" ] || fail "--part 1 should write sweep_b1.json (batch 1): $(ls "$tmp/parts")"
OUT_DIR="$tmp/parts" SWEEP_NEW_TOKENS=3 "$script" --quick --with-greedy --batch 2 >"$tmp/p2.log" 2>&1 || fail "part 2: $(tail "$tmp/p2.log")"
[ ! -e "$tmp/parts/report.md" ] || fail "a part must not write the report"
OUT_DIR="$tmp/parts" "$script" --report-only >"$tmp/r.log" 2>&1 || fail "report-only: $(tail "$tmp/r.log")"
grep -q "orthogonal_sweep: 8 points, 8 ok" "$tmp/r.log" || fail "parts: $(tail "$tmp/r.log")"
grep -q "verification: ok on 2 of 2 greedy points" "$tmp/r.log" || fail "greedy verification: $(tail "$tmp/r.log")"
grep -q "^batch 1: wall time" "$tmp/r.log" && grep -q "^batch 2: wall time" "$tmp/r.log" || fail "wall times of the parts"

# --part K: the K-th batch size, one device call each; its estimate is that batch size's alone.
est3=$(env -u SWEEP_NEW_TOKENS "$script" --estimate --part 3) || fail "--estimate --part 3 exited non-zero"
grep -q "^batch 16: 9 points x 6 generates, 64,458 decode steps" <<<"$est3" && ! grep -q "^batch 1:" <<<"$est3" ||
  fail "--part 3 should be batch 16 alone: $est3"
grep -q "^batch 2:" <<<"$(env -u SWEEP_NEW_TOKENS "$script" --estimate --batch 1,2 --part 2)" || fail "--part 2 of --batch 1,2"
"$script" --part 4 >/dev/null 2>&1; [ $? = 2 ] || fail "--part 4 of three batch sizes should exit 2"
"$script" --part 0 >/dev/null 2>&1; [ $? = 2 ] || fail "--part 0 should exit 2"
"$script" --batch x >/dev/null 2>&1; [ $? = 2 ] || fail "--batch x should exit 2"
"$script" --bogus >/dev/null 2>&1; [ $? = 2 ] || fail "an unknown flag should exit 2"
echo "orthogonal_sweep_script: all checks passed"
