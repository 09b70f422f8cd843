#!/usr/bin/env bash
# End-to-end in a real browser: a tiny-model sweep (or the sample sweep where `run` is absent) is turned into
# reports that headless Chromium must render without a console error and with every chart drawn.
# Screenshots stay in <build dir>/report-test/. Needs chromium, node (scripts/deps.sh) and
# web/node_modules (scripts/fetch-web-assets.sh).
set -u
bin=$1
data=$2
fail() { echo "FAIL: $*"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(cd "$(dirname "$bin")" && pwd)/report-test
rm -rf "$out" && mkdir -p "$out"

chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || fail "$chromium is missing: run scripts/deps.sh"
command -v node >/dev/null || fail "node is missing: run scripts/deps.sh"
[ -f "$root/web/node_modules/playwright-core/package.json" ] && \
  [ -f "$root/web/node_modules/vega-embed/build/vega-embed.min.js" ] || \
  fail "web/node_modules is missing: run scripts/fetch-web-assets.sh"
check() { CHROMIUM=$chromium node "$here/../report/render_check.js" "$@" || fail "browser check of $1"; }

if "$bin" run --help >/dev/null 2>&1; then
  for name in base current; do
    "$bin" run --model tiny --device cpu --batch 1,2 --prompt-len 16 --max-new-tokens 8 --warmup 1 --runs 5 \
      --trim 1 --output "$out/$name.json" >"$out/$name.log" 2>&1 || fail "llmbench run: $(tail -3 "$out/$name.log")"
  done
  min_single=4     # batch sweep, stages, cold/warm, one distribution per point
else
  echo "note: no run subcommand, using the sample sweep"
  cp "$data/results/sample-sweep.json" "$out/base.json"
  python3 "$here/../report/slow_down.py" "$out/base.json" "$out/current.json" 1 1.25
  min_single=11    # sweep, models, stages, MBU/MFU, cold/warm, six distributions
fi
npoints=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["points"]))' "$out/base.json")
[ "$npoints" -ge 2 ] || fail "the sweep has $npoints points"

# One sweep, assets found the default way (compiled into the binary from web/node_modules).
"$bin" info | grep -q '^report charts: embedded' \
  || fail "this llmbench was built without the chart bundles: rebuild after scripts/fetch-web-assets.sh"
env -u LLMBENCH_WEB_ASSETS "$bin" report "$out/base.json" -o "$out/report.html" 2>"$out/report.err" \
  || fail "report: $(cat "$out/report.err")"
grep -q 'charts are missing' "$out/report.err" && fail "report did not find the bundles: $(cat "$out/report.err")"
check "$out/report.html" "$out/report.png" --min-charts $((min_single)) --expect-text 'Summary:' \
  --expect-text 'Stage breakdown' --expect-text 'Sweep over batch'

# Baseline versus current, with the gate's verdicts when there is a gate.
gate_args=()
if "$bin" gate --help >/dev/null 2>&1; then
  "$bin" gate --baseline "$out/base.json" --current "$out/current.json" --allow-env-mismatch --json \
    >"$out/gate.json" 2>"$out/gate.err"
  [ $? -le 1 ] || fail "gate: $(cat "$out/gate.err")"
  gate_args=(--gate "$out/gate.json")
fi
"$bin" report "$out/base.json" "$out/current.json" "${gate_args[@]}" -o "$out/compare.html" 2>"$out/compare.err" \
  || fail "report of two files: $(cat "$out/compare.err")"
texts=(--expect-text 'Files side by side')
[ ${#gate_args[@]} -gt 0 ] && texts+=(--expect-text 'Gate verdicts')
check "$out/compare.html" "$out/compare.png" --min-charts $((min_single + 1)) "${texts[@]}"

# A load point of 20,000 requests (140,000 ITLs): its ECDFs come from 1,001 quantiles each and still draw.
python3 "$root/scripts/bench/large_load_results.py" 20000 "$out/large.json" || fail "large_load_results.py"
"$bin" report "$out/large.json" -o "$out/large.html" 2>"$out/large.err" || fail "report of 20,000 requests: $(cat "$out/large.err")"
size=$(stat -c %s "$out/large.html")
[ "$size" -lt 2000000 ] || fail "the page of 20,000 requests is $size bytes"
check "$out/large.html" "$out/large.png" --min-charts 2 --expect-text 'drawn from 1,001 quantiles' \
  --expect-text 'ECDF from 1,001 quantiles of '

# Every chart's spec against Vega-Lite's own JSON Schema (tests/schema/validate_charts.mjs, Ajv): the pages
# above, the sample sweep (models, MBU/MFU) and a small load point (exact ECDFs); a misspelt key must fail.
[ -f "$root/tests/schema/node_modules/ajv/package.json" ] || fail "Ajv is missing: run scripts/fetch-schema-validator.sh"
"$bin" report "$data/results/sample-sweep.json" -o "$out/sample.html" 2>/dev/null || fail "report of the sample sweep"
python3 "$root/scripts/bench/large_load_results.py" 300 "$out/small-load.json" || fail "large_load_results.py 300"
"$bin" report "$out/small-load.json" -o "$out/small-load.html" 2>/dev/null || fail "report of 300 requests"
pages=("$out/report.html" "$out/compare.html" "$out/sample.html" "$out/small-load.html" "$out/large.html")
node "$root/tests/schema/validate_charts.mjs" "${pages[@]}" >"$out/charts.txt" 2>&1 \
  || fail "a chart is not valid Vega-Lite: $(head -c 1500 "$out/charts.txt")"
sed 's/"mark":/"makr":/' "$out/report.html" >"$out/misspelt.html"
node "$root/tests/schema/validate_charts.mjs" "$out/misspelt.html" >"$out/misspelt.txt" 2>&1 \
  && fail "a spec with 'makr' passed the Vega-Lite schema"
grep -q 'must NOT have additional properties' "$out/misspelt.txt" || fail "misspelt spec: $(head -c 600 "$out/misspelt.txt")"

# Without the bundles: tables, the notice, and still no console error.
LLMBENCH_WEB_ASSETS="$out/no-assets" "$bin" report "$out/base.json" -o "$out/no-charts.html" 2>/dev/null \
  || fail "report without bundles exited non-zero"
check "$out/no-charts.html" "$out/no-charts.png" --expect-missing --expect-text 'Charts are missing'

echo "report_browser: all checks passed; screenshots in $out"
