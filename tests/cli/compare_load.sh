#!/usr/bin/env bash
# `llmbench compare` with `endpoint:` entries: two scripted servers (tests/load/scripted_server.py) of
# known delays, engine-b exactly twice as slow as engine-a, side by side with ratios; the results file
# loads in `report`; bad entries; an unreachable endpoint is skipped; results.command is the command line.
set -u
bin="$1"
source "$(dirname "$0")/../load/scripted_server_lib.sh"

start_server a --ttft-ms 60 --itl-ms 15
url_a="$url"
start_server b --ttft-ms 120 --itl-ms 30
url_b="$url"

cat >"$out/engines.yaml" <<YAML
defaults:
  concurrency: [1, 2]
  input_len: 16
  output_len: 6
  num_requests: 8
  tokenizer: tiny
models:
  - endpoint: $url_a
    label: engine-a
  - endpoint: $url_b
    label: engine-b
baseline: engine-a
YAML

"$bin" compare "$out/engines.yaml" -o "$out/cmp.json" >"$out/table" 2>"$out/stderr" \
  || { cat "$out/stderr" "$out/table"; fail "compare of two endpoints failed"; }
python3 - "$out/cmp.json" "$out/table" "$out/engines.yaml" <<'PY' || { cat "$out/table"; fail "comparison content"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["command"] == "llmbench compare %s -o %s" % (sys.argv[3], sys.argv[1]), r["command"]
points = {(p["params"]["label"], p["load"]["concurrency"]): p for p in r["points"]}
assert sorted(points) == [("engine-a", 1), ("engine-a", 2), ("engine-b", 1), ("engine-b", 2)], sorted(points)
for p in points.values():
    assert p["mode"] == "load" and p["status"] == "ok" and p["requests"]["completed"] == 8, p["requests"]

# The table: columns are the runs of dashes under the header.
lines = open(sys.argv[2]).read().splitlines()
at = next(i for i, l in enumerate(lines) if "conc" in l and "x base" in l)
header, dashes = lines[at], lines[at + 1]
spans, i = [], 0
while i < len(dashes):
    if dashes[i] == "-":
        j = i
        while j < len(dashes) and dashes[j] == "-":
            j += 1
        spans.append((i, j))
        i = j
    else:
        i += 1
names = [header[a:b].strip() for a, b in spans]
rows = []
for l in lines[at + 2:]:
    if not l.strip():
        break
    rows.append([l[a:b].strip() for a, b in spans[:-1]] + [l[spans[-1][0]:].strip()])
assert len(rows) == 4, rows
def ratio(row, metric):  # the "x base" column right after the metric's
    return float(row[names.index(metric) + 1].rstrip("x"))
bad = []
for row in rows:
    label, conc = row[0], int(row[1])
    expected = 1.0 if label == "engine-a" else 2.0  # engine-b's delays are twice engine-a's
    for metric in ("TTFT p50", "TPOT p50", "ITL p50", "e2e p50"):
        got = ratio(row, metric)
        if abs(got - expected) > 0.05 * expected:
            bad.append((label, conc, metric, got))
    got = ratio(row, "out tok/s")
    if abs(got - 1 / expected) > 0.05 / expected:
        bad.append((label, conc, "out tok/s", got))
    # The same ratio as the results file's p50s.
    p, base = points[(label, conc)], points[("engine-a", conc)]
    want = p["summary"]["ttft_ms"]["p50"] / base["summary"]["ttft_ms"]["p50"]
    assert abs(ratio(row, "TTFT p50") - want) < 0.006, (ratio(row, "TTFT p50"), want)
assert not bad, bad
PY
grep -q "engine-b at $url_b" "$out/table" || fail "no description line for engine-b"
"$bin" report "$out/cmp.json" -o "$out/report.html" >/dev/null 2>"$out/stderr" || { cat "$out/stderr"; fail "report on compare results"; }
grep -q "engine-b" "$out/report.html" || fail "report does not name engine-b"
"$bin" report "$out/cmp.json" --format md >"$out/report.md" 2>"$out/stderr" || { cat "$out/stderr"; fail "report --format md"; }
grep -q "engine-a" "$out/report.md" || fail "md report does not name engine-a"

# Bad entries: exit 2, one error line naming the place in the file, nothing measured.
bad() {  # bad NAME: runs $out/NAME.yaml, expects exit 2 and the message in $2
  "$bin" compare "$out/$1.yaml" -o "$out/bad.json" >"$out/stdout" 2>"$out/stderr"
  local got=$?
  [ "$got" = 2 ] || { cat "$out/stderr"; fail "compare $1 exited $got, expected 2"; }
  [ "$(grep -c 'llmbench: error:' "$out/stderr")" = 1 ] || { cat "$out/stderr"; fail "compare $1: not one error line"; }
  grep -qF "$2" "$out/stderr" || { cat "$out/stderr"; fail "compare $1: message lacks '$2'"; }
  [ ! -e "$out/bad.json" ] || fail "compare $1 left a results file"
}
printf 'models:\n  - endpoint: %s\n    batch: 4\n' "$url_a" >"$out/mixed.yaml"
bad mixed "mixed.yaml:3:5: models[0].batch: 'batch' is an option of \`llmbench run\`"
printf 'models:\n  - endpoint: %s\n  - endpoint: ftp://127.0.0.1:1\n' "$url_a" >"$out/scheme.yaml"
bad scheme "scheme.yaml:3:5: models[1]: "
printf 'models:\n  - endpoint: %s\n    search: rate:1:8\n' "$url_a" >"$out/search.yaml"
bad search "search.yaml:2:5: models[0]: --search needs --slo"
printf 'models:\n  - endpoint: %s\n    concurrency: 2\n    request_rate: 3\n' "$url_a" >"$out/loops.yaml"
bad loops "loops.yaml:2:5: models[0]: --concurrency and --request-rate exclude each other"

# An endpoint nobody listens on is reported and skipped; the other's points are kept; exit 1.
cat >"$out/down.yaml" <<YAML
models:
  - {endpoint: $url_a, label: up, num_requests: 2, output_len: 2, tokenizer: tiny}
  - {endpoint: "http://127.0.0.1:1", label: down, num_requests: 2, output_len: 2, tokenizer: tiny}
baseline: down
YAML
"$bin" compare "$out/down.yaml" -o "$out/down.json" >"$out/stdout" 2>"$out/stderr"
code=$?
[ "$code" = 1 ] || { cat "$out/stderr"; fail "compare with an unreachable endpoint exited $code, expected 1"; }
grep -q "down: .*(skipped)" "$out/stderr" || { cat "$out/stderr"; fail "the unreachable endpoint was not reported"; }
python3 -c "
import json; r = json.load(open('$out/down.json'))
assert [p['params']['label'] for p in r['points']] == ['up'] and r['points'][0]['status'] == 'ok'" || fail "points kept"

# An endpoint whose every request fails: its point is kept as failed, one error line says why, exit 1.
start_server broken --faults 0:http500,1:http500
cat >"$out/broken.yaml" <<YAML
models:
  - {endpoint: $url_a, label: up, num_requests: 2, output_len: 2, tokenizer: tiny}
  - {endpoint: $url, label: broken, num_requests: 2, output_len: 2, tokenizer: tiny}
YAML
"$bin" compare "$out/broken.yaml" -o "$out/broken.json" >/dev/null 2>"$out/stderr"
code=$?
[ "$code" = 1 ] || { cat "$out/stderr"; fail "compare with a failing endpoint exited $code, expected 1"; }
grep -q "\[error\] broken (point 2): every request failed: http_500 x2" "$out/stderr" \
  || { cat "$out/stderr"; fail "no error line for the failed endpoint"; }
python3 -c "
import json; r = json.load(open('$out/broken.json'))
assert [(p['params']['label'], p['status']) for p in r['points']] == [('up', 'ok'), ('broken', 'failed')]" \
  || fail "failed endpoint point not kept"

# `load` records its command line too, with the secrets masked.
"$bin" load --endpoint "$url_a" --num-requests 2 --output-len 2 --tokenizer tiny --api-key sekrit \
  --header "X-Team: bench" -o "$out/load.json" >/dev/null 2>"$out/stderr" || { cat "$out/stderr"; fail "load"; }
python3 - "$out/load.json" "$url_a" <<'PY' || fail "load results.command"
import json, sys
c = json.load(open(sys.argv[1]))["command"]
want = "llmbench load --endpoint %s --num-requests 2 --output-len 2 --tokenizer tiny --api-key '***' --header 'X-Team:***' -o %s" % (sys.argv[2], sys.argv[1])
assert c == want, c
assert "sekrit" not in open(sys.argv[1]).read()
PY
# Ctrl-C while the second endpoint's GET /v1/models hangs: the first one's points are kept, exit 130.
source "$(dirname "$0")/signal_lib.sh"
start_server stall --models-stall-s 30
cat >"$out/int.yaml" <<YAML
models:
  - {endpoint: $url_a, label: up, num_requests: 2, output_len: 2, tokenizer: tiny}
  - {endpoint: $url, label: stalled, num_requests: 2, output_len: 2, tokenizer: tiny}
YAML
"$bin" compare "$out/int.yaml" -o "$out/int.json" >/dev/null 2>"$out/stderr" &
interrupt_after_line $! "$out/stderr" "stalled (load" 0.5
[ "$code" = 130 ] || { cat "$out/stderr"; fail "compare interrupted in /v1/models exited $code, expected 130"; }
python3 -c "
import json; r = json.load(open('$out/int.json'))
assert r['interrupted'] is True and [p['params']['label'] for p in r['points']] == ['up']" || fail "interrupted compare results"
# --max-minutes takes a number >= 0 (nan and negatives were taken: nan then refused every plan, -1 meant no limit).
for bad in nan -1 inf; do
  "$bin" compare "$out/engines.yaml" --max-minutes "$bad" -o "$out/mm.json" >/dev/null 2>"$out/stderr"; code=$?
  [ "$code" = 2 ] && grep -q -- "--max-minutes: .* is not allowed (must be >= 0; 0 is no limit)" "$out/stderr" && [ ! -e "$out/mm.json" ] ||
    { cat "$out/stderr"; fail "compare --max-minutes $bad: exit $code"; }
done

echo "compare_load: all checks passed"
