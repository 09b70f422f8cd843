#!/usr/bin/env bash
# The duration estimate and --max-minutes (issue 12: a 7B model on a CPU ran for hours without a word), and
# the random-weights progress line.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Ten million timed runs of the tiny model: hours by any ceilings. Refused before the model is loaded, with
# the estimate and the way out; --no-roofline measures quick ceilings for the estimate.
for roofline in "" --no-roofline; do
  start=$(date +%s)
  "$bin" run --model tiny --device cpu --batch 1 --prompt-len 8 --max-new-tokens 64 --warmup 0 --runs 10000000 \
    $roofline --output "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "too long a run ($roofline) should exit 2, got $rc: $(cat "$tmp/err")"
  [ "$(grep -c '^llmbench: error: ' "$tmp/err")" -eq 1 ] || fail "want one error line: $(cat "$tmp/err")"
  for part in "estimated at least" " h (" "10000000 generates" "more than --max-minutes 30" "pass --max-minutes " \
              "to run anyway" "--runs"; do
    grep -qF -- "$part" "$tmp/err" || fail "the refusal lacks '$part': $(cat "$tmp/err")"
  done
  grep -q 'weights: random' "$tmp/err" && fail "the model was loaded before the refusal: $(cat "$tmp/err")"
  [ -e "$tmp/r.json" ] && fail "a refused run wrote results"
  [ $(($(date +%s) - start)) -le 30 ] || fail "the refusal took more than 30 s"
done

# The way out it names is accepted by the parser; negative limits are not.
limit=$(grep -o 'pass --max-minutes [0-9]*' "$tmp/err" | grep -o '[0-9]*$')
[ -n "$limit" ] || fail "no suggested limit in: $(cat "$tmp/err")"
"$bin" run --model tiny --max-minutes -1 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q -- '--max-minutes' "$tmp/err" || fail "--max-minutes -1: rc $rc, $(cat "$tmp/err")"

# compare checks the whole file before the first model loads.
cat >"$tmp/long.yaml" <<'YAML'
defaults: {device: cpu, warmup: 0, runs: 10000000, trim: 0}
matrix: {batch: 1, prompt_len: 8, max_new_tokens: 64}
models:
  - model: tiny
    label: a
  - model: tiny
    label: b
YAML
"$bin" compare "$tmp/long.yaml" --no-roofline --max-minutes 5 >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail "too long a compare should exit 2, got $rc: $(cat "$tmp/err")"
grep -qF -- "20000000 generates" "$tmp/err" || fail "compare's estimate is not the sum of its models: $(cat "$tmp/err")"
grep -qF -- "more than --max-minutes 5" "$tmp/err" || fail "compare refusal: $(cat "$tmp/err")"
grep -q 'weights: random' "$tmp/err" && fail "compare loaded a model before refusing"

# A limit under a minute holds too (the quick estimate on slow ceilings must not wave the run through), in run
# with and without the roofline and in compare.
for roofline in "" --no-roofline; do
  "$bin" run --model tiny --device cpu --batch 1 --prompt-len 8 --max-new-tokens 64 --warmup 0 --runs 200 --trim 0 \
    $roofline --max-minutes 0.001 --output "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
  [ $rc -eq 2 ] && grep -qF -- "more than --max-minutes 0.001:" "$tmp/err" ||
    fail "run $roofline --max-minutes 0.001: rc $rc, $(cat "$tmp/err")"
  [ -e "$tmp/r.json" ] && fail "a refused run wrote results"
done
sed 's/runs: 10000000/runs: 200/' "$tmp/long.yaml" >"$tmp/short.yaml"
"$bin" compare "$tmp/short.yaml" --no-roofline --max-minutes 0.001 >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -qF -- "more than --max-minutes 0.001:" "$tmp/err" ||
  fail "compare --max-minutes 0.001: rc $rc, $(cat "$tmp/err")"
grep -q 'weights: random' "$tmp/err" && fail "compare loaded a model before refusing a sub-minute limit"

# A short run says nothing about its duration; at debug level the drawing of random weights is reported.
"$bin" --log-level debug run --model tiny --device cpu --batch 1 --prompt-len 8 --max-new-tokens 4 --warmup 0 \
  --runs 3 --trim 0 --no-roofline >"$tmp/out" 2>"$tmp/err" || fail "short run: $(cat "$tmp/err")"
grep -q 'estimated duration' "$tmp/err" && fail "a short run printed an estimate"
grep -q 'drawing random weights: 100 %' "$tmp/err" || fail "no random-weights progress at debug level: $(cat "$tmp/err")"
echo "duration: all checks passed"
