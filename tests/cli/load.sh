#!/usr/bin/env bash
# `llmbench load` end to end against tests/load/scripted_server.py: bad input, a sweep, gate and report on
# its results, Ctrl-C. Every server started here stops by itself (--lifetime-s) and on exit (trap).
set -u
bin="$1"
source "$(dirname "$0")/../load/scripted_server_lib.sh"
source "$(dirname "$0")/signal_lib.sh"

bad() {  # bad ARGS...: exit 2 within seconds, one error line (naming $says when set), no results file
  timeout 20 "$bin" load -o "$out/bad.json" "$@" >"$out/stdout" 2>"$out/stderr"
  local got=$?
  [ "$got" = 2 ] || { cat "$out/stderr"; fail "load $* exited $got, expected 2"; }
  [ "$(grep -c 'llmbench: error:' "$out/stderr")" = 1 ] || { cat "$out/stderr"; fail "load $*: not one error line"; }
  grep -qF -- "${says:-llmbench: error:}" "$out/stderr" || { cat "$out/stderr"; fail "load $*: message lacks '$says'"; }
  [ ! -e "$out/bad.json" ] || fail "load $* left a results file"
}

# Every option's default is in --help (README): --concurrency's is the closed loop of 1 used when no load is given.
"$bin" load --help | grep -- "--concurrency" | grep -qF "default 1" || fail "load --help does not give --concurrency's default"

start_server ok --ttft-ms 5 --itl-ms 2 --timing
echo '[{"conversations": [' >"$out/broken.json"
echo 'not json' >"$out/broken.jsonl"
bad --endpoint "ftp://127.0.0.1:1"
bad --endpoint "http://127.0.0.1:99999"
bad --endpoint "$url" --slo "ttft=5"
bad --endpoint "$url" --slo "ttft_ms=fast"
bad --endpoint "$url" --dataset "sharegpt:$out/missing.json"
bad --endpoint "$url" --dataset "sharegpt:$out/broken.json"
bad --endpoint "$url" --dataset "jsonl:$out/broken.jsonl"
bad --endpoint "$url" --dataset "csv:x"
bad --endpoint "$url" --concurrency 2 --request-rate 3
bad --endpoint "$url" --request-rate 3 --arrival gamma:-1
bad --endpoint "$url" --concurrency 0
bad --endpoint "$url" --header "no-colon"
bad --endpoint "$url" --api grpc
bad --endpoint "$url" --format xml
# https (the handshakes themselves: tests/load/test_tls.cpp): the certificate options are for https only, and a
# --ca-cert that cannot be read is refused before anything is sent.
says="are for an https:// --endpoint" bad --endpoint "$url" --insecure
says="are for an https:// --endpoint" bad --endpoint "$url" --ca-cert "$out/broken.json"
says="--ca-cert $out/missing.pem: cannot read the file" bad --endpoint "https://127.0.0.1:1" --ca-cert "$out/missing.pem"
if "$bin" load --endpoint https://127.0.0.1:1 --model m --num-requests 1 2>&1 | grep -q "without OpenSSL"; then
  echo "load: https checks skipped (built without OpenSSL)"
else
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -keyout "$out/tls.key" \
    -out "$out/tls.pem" -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >/dev/null 2>&1 \
    || fail "openssl could not make a certificate"
  plain_url=$url
  start_server tls --ttft-ms 5 --itl-ms 2 --tls-cert "$out/tls.pem" --tls-key "$out/tls.key"
  [[ "$url" == https://127.0.0.1:* ]] || fail "TLS scripted server says $url"
  # Not trusted: one error line that says why and what to do, exit 1, no results file.
  "$bin" load --endpoint "$url" --tokenizer tiny --num-requests 2 -o "$out/tls_bad.json" >"$out/stdout" 2>"$out/stderr"
  code=$?
  [ "$code" = 1 ] || { cat "$out/stderr"; fail "untrusted https exited $code, expected 1"; }
  [ "$(grep -c 'llmbench: error:' "$out/stderr")" = 1 ] || { cat "$out/stderr"; fail "untrusted https: not one error line"; }
  grep -qF "self-signed certificate (trust it with --ca-cert FILE, or skip the check with --insecure)" "$out/stderr" \
    || { cat "$out/stderr"; fail "untrusted https: message"; }
  [ ! -e "$out/tls_bad.json" ] || fail "untrusted https left a results file"
  for trust in "--ca-cert $out/tls.pem" "-k"; do
    # shellcheck disable=SC2086
    "$bin" load --endpoint "$url" $trust --tokenizer tiny --num-requests 3 --output-len 4 -o "$out/tls.json" \
      >"$out/stdout" 2>"$out/stderr" || { cat "$out/stderr"; fail "https with $trust"; }
    python3 - "$out/tls.json" "$url" "$trust" <<'PY' || fail "https results with $trust"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["load"]["endpoint"] == sys.argv[2] and p["requests"]["completed"] == 3, (p["load"], p["requests"])
assert p["load"]["tls_verify"] is (sys.argv[3] != "-k"), p["load"]  # -k: the results say the check was skipped
PY
  done
  url=$plain_url
fi
# Sizes nobody means: refused at once, not after minutes of prompt making or an OOM (the rest of the
# limits, and --api-key with CR/LF, are in tests/load/test_validate.cpp).
says=--timeout-s bad --endpoint "$url" --timeout-s inf
says=--num-requests bad --endpoint "$url" --num-requests 0
says=--input-len bad --endpoint "$url" --input-len 2000000000
says=--duration bad --endpoint "$url" --duration 0
printf '{"prompt": "caf\xe9", "output_len": 2}\n' >"$out/latin1.jsonl"
says="latin1.jsonl:1: invalid UTF-8" bad --endpoint "$url" --dataset "jsonl:$out/latin1.jsonl"
printf '{"prompt": "ok", "output_len": 99999999999}\n' >"$out/long.jsonl"
says='long.jsonl:1: "output_len" must be an integer' bad --endpoint "$url" --dataset "jsonl:$out/long.jsonl"
# Sweep lists are parsed strictly (CLI11's delimiter used to drop the empty item: 1,,2 ran as 1,2).
says="--concurrency: empty value in '1,,2'" bad --endpoint "$url" --concurrency 1,,2
says="--request-rate: empty value in '1,'" bad --endpoint "$url" --request-rate 1,
says="--request-rate: 'x' is not a number" bad --endpoint "$url" --request-rate 2,x
# vLLM's spelling of "every request at once": the error names our equivalent.
says="is the closed loop --concurrency N with N = --num-requests" bad --endpoint "$url" --request-rate 2,inf
# vLLM's names of the request count and the synthetic lengths are aliases of ours.
"$bin" load --endpoint "$url" --tokenizer tiny --num-prompts 3 --random-input-len 6 --random-output-len 2 \
  --random-range-ratio 0 --random-prefix-len 0 -o "$out/vllm_names.json" >/dev/null 2>"$out/stderr" \
  || { cat "$out/stderr"; fail "load with vLLM's option names"; }
python3 -c "
import json; p = json.load(open('$out/vllm_names.json'))['points'][0]
assert p['requests']['completed'] == 3 and p['params']['prompt_len'] == 6 and p['params']['max_new_tokens'] == 2, p['params']
assert all(r['output_tokens'] == 2 for r in p['request_log'])" || fail "vLLM's option names did not set ours"
says="--num-requests: given 2 times" bad --endpoint "$url" --num-prompts 3 --num-requests 4
# An OpenAI SDK's base URL, with /v1 (and a slash), is the same endpoint: not /v1/v1/completions (a 404).
"$bin" load --endpoint "$url/v1/" --tokenizer tiny --num-requests 2 --output-len 2 -o "$out/v1.json" >/dev/null 2>"$out/stderr" \
  || { cat "$out/stderr"; fail "load with a base URL ending in /v1"; }
python3 -c "
import json; p = json.load(open('$out/v1.json'))['points'][0]
assert p['requests']['completed'] == 2 and p['params']['model'] == 'scripted' and p['load']['endpoint'] == '$url', p['load']" \
  || fail "a base URL ending in /v1"

"$bin" load --endpoint "$url" --tokenizer tiny --concurrency 1 --concurrency 2 --num-requests 6 --input-len 8 --output-len 4 \
  --slo ttft_ms=1000 -o "$out/load.json" >"$out/stdout" 2>"$out/stderr" || { cat "$out/stderr"; fail "load run failed"; }
python3 - "$out/load.json" <<'PY' || fail "results file content"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema_version"] == 1 and not r["interrupted"]
assert [p["load"]["concurrency"] for p in r["points"]] == [1, 2]
for p in r["points"]:
    assert p["mode"] == "load" and p["status"] == "ok"
    assert p["requests"]["completed"] == 6 and p["requests"]["failed"] == 0
    assert p["summary"]["ttft_ms"]["n"] == 6 and p["summary"]["ttft_ms"]["p50"] >= 5
    assert p["server_stages_ms"]["prefill"] == 4.0
    assert p["goodput"]["fraction"] == 1.0
    assert p["throughput"]["output_tokens_per_s"] > 0
PY
grep -q "TTFT p50" "$out/stdout" || fail "no load table on stdout"
says="--range-ratio must be in [0, 1)" bad --endpoint "$url" --range-ratio 1
says="a dataset brings its own" bad --endpoint "$url" --range-ratio 0.5 --dataset "jsonl:$out/latin1.jsonl"

# --max-concurrency: 12 arrivals at once (constant rate 1000/s) against 80 ms requests, at most 3 in flight:
# no four requests overlap in the log (without the cap all twelve would), and the wait shows as send lag.
says="caps an open loop" bad --endpoint "$url" --max-concurrency 2
says="--max-concurrency must be at least 1, got 0" bad --endpoint "$url" --request-rate 5 --max-concurrency 0
says="is a directory" bad --endpoint "$url" --dataset "jsonl:$out"
url_ok="$url"
start_server slow --ttft-ms 50 --itl-ms 10
"$bin" load --endpoint "$url" --tokenizer tiny --request-rate 1000 --arrival constant --max-concurrency 3 \
  --num-requests 12 --input-len 4 --output-len 4 -o "$out/cap.json" >"$out/stdout" 2>"$out/stderr" \
  || { cat "$out/stderr"; fail "load --max-concurrency"; }
grep -q "≤3" "$out/stdout" || { cat "$out/stdout"; fail "the table does not show the cap"; }
python3 - "$out/cap.json" <<'PY' || fail "--max-concurrency results"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["load"]["max_concurrency"] == 3 and p["requests"]["completed"] == 12, p["load"]
spans = [(r["start_ms"], r["start_ms"] + r["e2e_ms"]) for r in p["request_log"]]
most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
assert most == 3, (most, spans)
assert p["rate"]["mean_send_lag_ms"] > 80, p["rate"]  # 9 of 12 waited at least one 80 ms request
PY
# With --duration, arrivals the cap still holds when the duration ends are not sent: 50/s for 1 s through
# one 80 ms slot sends about 13, not all 50 (which took 4 s more).
"$bin" load --endpoint "$url" --tokenizer tiny --request-rate 50 --arrival constant --max-concurrency 1 --duration 1 \
  --input-len 4 --output-len 4 -o "$out/capdur.json" >/dev/null 2>"$out/stderr" || { cat "$out/stderr"; fail "cap + duration"; }
python3 -c "
import json; p = json.load(open('$out/capdur.json'))['points'][0]
assert 5 <= p['requests']['completed'] <= 16, p['requests']" || fail "cap + duration sent the held arrivals"
url="$url_ok"

# --extra-body reaches the server: max_tokens 3 overrides --output-len 6 (the scripted server streams
# max_tokens tokens), min_tokens is removed; the body is recorded.
"$bin" load --endpoint "$url" --tokenizer tiny --concurrency 2 --num-requests 4 --input-len 4 --output-len 6 \
  --extra-body '{"max_tokens": 3, "min_tokens": null}' -o "$out/extra.json" >/dev/null 2>"$out/stderr" \
  || { cat "$out/stderr"; fail "load --extra-body"; }
python3 - "$out/extra.json" <<'PY' || fail "--extra-body results"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["load"]["extra_body"] == {"max_tokens": 3, "min_tokens": None}, p["load"]
assert [r["output_tokens"] for r in p["request_log"]] == [3] * 4, p["request_log"]
PY
# --prefix-len: the point's prompt length counts the shared prefix; recorded.
"$bin" load --endpoint "$url" --tokenizer tiny --concurrency 2 --num-requests 4 --input-len 4 --output-len 2 \
  --prefix-len 16 -o "$out/prefix.json" >/dev/null 2>"$out/stderr" || { cat "$out/stderr"; fail "load --prefix-len"; }
python3 - "$out/prefix.json" <<'PY' || fail "--prefix-len results"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["load"]["prefix_len"] == 16 and p["params"]["prompt_len"] == 20, (p["load"], p["params"])
PY
# --dataset trace:FILE replays a trace's arrival times (tests/load/test_scripted_server.cpp checks them from
# the server's side): gate names the point by its speed and pairs it with itself; report draws it.
printf '%s\n' '{"timestamp": 100, "input_length": 9, "output_length": 2, "hash_ids": [3, 4]}' \
  '{"timestamp": 300, "text_input": "a prompt of the trace", "output_length": 3, "extra": {"max_tokens": 1}}' \
  '{"timestamp": 500, "input_length": 6, "output_length": 4}' >"$out/trace.jsonl"
"$bin" load --endpoint "$url" --tokenizer tiny --dataset "trace:$out/trace.jsonl" --trace-block-size 8 --trace-speedup 4 \
  -o "$out/trace.json" >"$out/stdout" 2>"$out/stderr" || { cat "$out/stderr"; fail "load --dataset trace"; }
grep -q "point 1/1: trace replay, 3 completed" "$out/stderr" || { cat "$out/stderr"; fail "trace replay progress line"; }
python3 - "$out/trace.json" <<'PY' || fail "trace replay results"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
l = p["load"]
assert (l["arrival"], l["num_requests"], l["trace_block_size"], l["concurrency"]) == ("trace:4", 3, 8, 0), l
assert p["requests"]["completed"] == 3 and abs(p["rate"]["offered_per_s"] - 20) < 1e-9, p["rate"]  # 2 gaps in 100 ms
assert [r["scheduled_ms"] for r in p["request_log"]] == [0, 50, 100], p["request_log"]
assert [r["output_tokens"] for r in p["request_log"]] == [2, 1, 4], p["request_log"]  # the line's extra: max_tokens 1
PY
"$bin" gate --baseline "$out/trace.json" --current "$out/trace.json" >"$out/gate.md" 2>&1 \
  || { cat "$out/gate.md"; fail "gate on a trace replay"; }
grep -q "trace:4 replay (20.00/s)" "$out/gate.md" || { cat "$out/gate.md"; fail "gate did not name the trace replay"; }
"$bin" report "$out/trace.json" -o "$out/trace.html" >/dev/null 2>&1 || fail "report on a trace replay"
grep -q "trace:4 replay" "$out/trace.html" || fail "the report does not name the trace replay"
# --server-metrics: the scripted server's /metrics (a gauge, a counter, a histogram) read during the point; the
# report lists what moved.
"$bin" load --endpoint "$url" --tokenizer tiny --concurrency 2 --num-requests 4 --output-len 3 --server-metrics \
  --server-metrics-interval-ms 20 -o "$out/scraped.json" >/dev/null 2>"$out/stderr" || { cat "$out/stderr"; fail "load --server-metrics"; }
python3 -c "
import json; m = json.load(open('$out/scraped.json'))['points'][0]['server_metrics']
assert m['counters']['scripted_tokens_total']['increase'] == 12 and m['histograms']['scripted_ttft_seconds']['count'] == 4, m" \
  || fail "--server-metrics results"
"$bin" report "$out/scraped.json" -o "$out/scraped.html" >/dev/null 2>&1 || fail "report on --server-metrics results"
grep -q "scripted_tokens_total" "$out/scraped.html" || fail "the report has no server metrics table"
# Two pages of one server (the flag repeated): each series labelled by its page.
"$bin" load --endpoint "$url" --tokenizer tiny --concurrency 2 --num-requests 4 --output-len 3 --server-metrics-url "$url/metrics" \
  --server-metrics-url "$url/worker/metrics" -o "$out/scraped2.json" >/dev/null 2>"$out/stderr" || { cat "$out/stderr"; fail "load --server-metrics-url x2"; }
python3 -c "
import json; m = json.load(open('$out/scraped2.json'))['points'][0]['server_metrics']
hp = '$url'.split('//')[1]
assert m['url'] == '$url/metrics, $url/worker/metrics', m['url']
assert m['counters']['scripted_tokens_total{instance=\"%s/metrics\"}' % hp]['increase'] == 12, m['counters']
assert m['counters']['scripted_tokens_total{instance=\"%s/worker/metrics\"}' % hp]['increase'] == 12, m['counters']" \
  || fail "--server-metrics-url twice"
says="--server-metrics-url lists $url/metrics twice" bad --endpoint "$url" --server-metrics-url "$url/metrics" --server-metrics-url "$url/metrics"
says="--server-metrics-interval-ms is for --server-metrics" bad --endpoint "$url" --server-metrics-interval-ms 100
says="--server-metrics-interval-ms must be in [10, 60000]" bad --endpoint "$url" --server-metrics --server-metrics-interval-ms 1
printf '{"timestamp": 0, "input_length": 20, "output_length": 2, "hash_ids": [1]}\n' >"$out/badtrace.jsonl"
says='badtrace.jsonl:1: "input_length" 20 is 3 blocks of 8 tokens, but "hash_ids" has 1' \
  bad --endpoint "$url" --dataset "trace:$out/badtrace.jsonl" --trace-block-size 8
says="--trace-speedup and --trace-block-size are for --dataset trace:FILE" bad --endpoint "$url" --trace-speedup 2
says="--trace-speedup must be in" bad --endpoint "$url" --dataset "trace:$out/trace.jsonl" --trace-speedup 0
says="gives its prompts only" bad --endpoint "$url" --dataset "trace:$out/trace.jsonl" --concurrency 2 --trace-speedup 2
says="the trace's own time" bad --endpoint "$url" --dataset "trace:$out/trace.jsonl" --arrival constant

# --no-stream: whole responses (completions and chat), end-to-end latency only; the scripted server
# answers when its last token would have gone out (20 + 4 x 10 ms).
start_server whole --ttft-ms 20 --itl-ms 10
for api in completions chat; do
  "$bin" load --endpoint "$url" --tokenizer tiny --no-stream --api $api --concurrency 2 --num-requests 6 \
    --output-len 5 --slo e2e_ms=5000 -o "$out/whole.json" >/dev/null 2>"$out/stderr" || { cat "$out/stderr"; fail "load --no-stream"; }
  python3 - "$out/whole.json" <<'PY' || fail "--no-stream results ($api)"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["load"]["stream"] is False and p["requests"]["completed"] == 6, p["load"]
assert list(p["summary"]) == ["e2e_ms"] and p["summary"]["e2e_ms"]["p50"] >= 60, p["summary"]
assert all(r["output_tokens"] == 5 and r["itl_ms"] == [] for r in p["request_log"]), p["request_log"]
assert p["goodput"]["fraction"] == 1.0
PY
done
says="a response arrives whole" bad --endpoint "$url" --no-stream --slo ttft_ms=100
url="$url_ok"
says="--extra-body: 'stream' is set by llmbench load" bad --endpoint "$url" --extra-body '{"stream": false}'

# --search against a server that serves 4 requests at once (each 100 ms: TTFT 20 ms, then 4 more tokens 20 ms
# apart; the others wait). Closed loop: concurrency 4 never waits, 5 and more make a request in every round
# wait ~100 ms past the 40 ms TTFT objective, so the highest concurrency with >= 95 % goodput is exactly 4.
says="--search needs --slo" bad --endpoint "$url" --search rate:1:10
says="only apply with --search" bad --endpoint "$url" --search-steps 6  # the default value, but given
says="leave out --concurrency" bad --endpoint "$url" --search rate:1:10 --slo ttft_ms=9 --concurrency 2
says="--search: rates must satisfy 0.001 <= MIN < MAX" bad --endpoint "$url" --search rate:10:1 --slo ttft_ms=9
url_ok="$url"
start_server capacity --ttft-ms 20 --itl-ms 20 --capacity 4
"$bin" load --endpoint "$url" --tokenizer tiny --search concurrency:1:16 --slo ttft_ms=40 --num-requests 20 \
  --input-len 4 --output-len 5 -o "$out/search.json" >"$out/stdout" 2>"$out/stderr" \
  || { cat "$out/stderr"; fail "load --search concurrency"; }
grep -q "highest concurrency with goodput >= 95.0% under ttft_ms=40: 4 (5 missed)" "$out/stdout" \
  || { cat "$out/stdout" "$out/stderr"; fail "search summary line"; }
python3 - "$out/search.json" <<'PY' || fail "--search results"
import json, sys
pts = json.load(open(sys.argv[1]))["points"]
probes = [(p["load"]["concurrency"], p["load"]["search"]["passed"], p["load"]["search"]["best"]) for p in pts]
assert probes[:2] == [(1, True, False), (16, False, False)], probes  # the bounds first
assert [c for c, passed, best in probes if best] == [4], probes
assert all(passed == (c <= 4) for c, passed, _ in probes), probes
assert all(p["load"]["search"]["axis"] == "concurrency" and p["load"]["search"]["target_goodput"] == 0.95 for p in pts)
PY
# gate judges a search as one verdict on its highest passing load, not as points at matching loads.
"$bin" gate --baseline "$out/search.json" --current "$out/search.json" >"$out/gate.md" 2>&1 \
  || { cat "$out/gate.md"; fail "gate on a search"; }
grep -q "max_concurrency" "$out/gate.md" || { cat "$out/gate.md"; fail "gate did not judge the search"; }
grep -q "new point" "$out/gate.md" && { cat "$out/gate.md"; fail "gate took search probes for points"; }
# Open loop: 4 slots of 100 ms serve 40 requests/s; above that the queue grows through the point.
"$bin" load --endpoint "$url" --tokenizer tiny --search rate:10:200 --arrival constant --slo ttft_ms=60 \
  --num-requests 30 --input-len 4 --output-len 5 --search-steps 4 -o "$out/search_rate.json" >"$out/stdout" 2>"$out/stderr" \
  || { cat "$out/stderr"; fail "load --search rate"; }
python3 - "$out/search_rate.json" <<'PY' || { cat "$out/stdout"; fail "--search rate results"; }
import json, sys
pts = json.load(open(sys.argv[1]))["points"]
best = [p["load"]["request_rate"] for p in pts if p["load"]["search"]["best"]]
assert len(pts) == 6 and len(best) == 1 and 15 <= best[0] <= 60, [(p["load"]["request_rate"], p["load"]["search"]) for p in pts]
PY
url="$url_ok"

# --range-ratio: every request asks for its own max_tokens in [L/2, 3L/2] (the scripted server streams
# exactly that many, and says so in usage), recorded in the results.
"$bin" load --endpoint "$url" --tokenizer tiny --concurrency 4 --num-requests 40 --input-len 8 --output-len 8 \
  --range-ratio 0.5 -o "$out/spread.json" >"$out/stdout" 2>"$out/stderr" || { cat "$out/stderr"; fail "load --range-ratio"; }
python3 - "$out/spread.json" <<'PY' || fail "--range-ratio results"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["load"]["range_ratio"] == 0.5 and p["requests"]["completed"] == 40, p["load"]
outs = [r["output_tokens"] for r in p["request_log"]]
assert min(outs) >= 4 and max(outs) <= 12 and len(set(outs)) >= 5, outs
PY

"$bin" gate --baseline "$out/load.json" --current "$out/load.json" >"$out/gate.md" 2>&1 || { cat "$out/gate.md"; fail "gate on load results"; }
grep -q "PASS" "$out/gate.md" || fail "gate did not pass identical load results"
grep -q "ttft_ms" "$out/gate.md" || fail "gate did not judge ttft_ms"
"$bin" report "$out/load.json" -o "$out/report.html" >/dev/null 2>&1 || fail "report on load results"
grep -q "Load: latency against throughput" "$out/report.html" || fail "report has no load section"
if ! grep -q 'id="charts-missing"' "$out/report.html"; then  # the Vega bundles are there (web/node_modules)
  grep -q "load-latency-throughput" "$out/report.html" || fail "report has no latency-vs-throughput chart"
fi

# Faults are counted and the run still succeeds.
start_server faults --ttft-ms 2 --itl-ms 1 --faults 0:http500,2:disconnect
"$bin" load --endpoint "$url" --concurrency 1 --num-requests 5 --output-len 3 --format json -o "$out/faults.json" \
  >"$out/stdout" 2>"$out/stderr" || { cat "$out/stderr"; fail "load with faults failed"; }
python3 -c "
import json; p = json.load(open('$out/faults.json'))['points'][0]
assert p['requests']['errors'] == {'http_500': 1, 'disconnect': 1}, p['requests']
assert p['summary']['e2e_ms']['n'] == 3" || fail "fault counts"

# A 200 without a body fails at once, streamed or not (it used to wait for the timeout).
start_server empty --faults 0:empty,1:empty
for mode in "" --no-stream; do
  timeout 20 "$bin" load --endpoint "$url" --tokenizer tiny --num-requests 1 --output-len 2 --timeout-s 15 $mode \
    -o "$out/empty.json" >/dev/null 2>"$out/stderr"
  python3 -c "
import json; p = json.load(open('$out/empty.json'))['points'][0]
assert p['requests']['errors'] == {'$([ -n "$mode" ] && echo malformed_json || echo incomplete_stream)': 1}, p['requests']
assert p['request_log'][0]['e2e_ms'] < 5000, p['request_log']" || { cat "$out/stderr"; fail "empty body ($mode)"; }
done

# A point where every request failed: exit 1, one error line naming the commonest reason, the file written.
start_server down --faults 0:http500,1:http500,2:http429
"$bin" load --endpoint "$url" --num-requests 3 --output-len 2 -o "$out/down.json" >"$out/stdout" 2>"$out/stderr"
code=$?
[ "$code" = 1 ] || { cat "$out/stderr"; fail "all-failed load exited $code, expected 1"; }
[ "$(grep -c 'llmbench: error:' "$out/stderr")" = 1 ] || { cat "$out/stderr"; fail "all-failed load: not one error line"; }
# With the server's message of the commonest reason's first request (scripted: {"error": {"message": "http500"}}).
grep -qF 'llmbench: error: every request failed: http_500 x2 (first: "http500"), http_429 x1' "$out/stderr" || { cat "$out/stderr"; fail "all-failed message"; }
python3 -c "
import json; log = json.load(open('$out/down.json'))['points'][0]['request_log']
assert sorted(r.get('error_detail') for r in log) == ['http429', 'http500', 'http500'], log" || fail "error_detail in request_log"
python3 -c "import json; assert json.load(open('$out/down.json'))['points'][0]['status'] == 'failed'" || fail "all-failed file"

# Ctrl-C while GET /v1/models hangs (no --model): exit 130 at once, an interrupted file without points.
start_server stall --models-stall-s 30
"$bin" load --endpoint "$url" --num-requests 2 -o "$out/int0.json" >/dev/null 2>"$out/stderr" &
load_pid=$!
wait_for_handler "$load_pid" 2 1
kill -INT "$load_pid"
t0=$SECONDS
wait "$load_pid"
code=$?
[ "$code" = 130 ] || { cat "$out/stderr"; fail "load interrupted in /v1/models exited $code, expected 130"; }
(( SECONDS - t0 <= 3 )) || fail "load took $((SECONDS - t0)) s to stop in /v1/models"
python3 -c "
import json; r = json.load(open('$out/int0.json'))
assert r['interrupted'] is True and r['points'] == []" || fail "interrupted-in-lookup results"

# Ctrl-C: the finished part is written, valid, interrupted; exit 130.
start_server slow --ttft-ms 5 --itl-ms 50
"$bin" load --endpoint "$url" --concurrency 2 --num-requests 1000 --output-len 4 -o "$out/int.json" \
  >/dev/null 2>"$out/stderr" &
load_pid=$!
wait_for_handler "$load_pid" 2 2
kill -INT "$load_pid"
wait "$load_pid"
code=$?
[ "$code" = 130 ] || { cat "$out/stderr"; fail "interrupted load exited $code, expected 130"; }
python3 -c "
import json; r = json.load(open('$out/int.json'))
assert r['interrupted'] is True and r['points'][0]['load']['partial'] is True
assert 0 < r['points'][0]['requests']['completed'] < 1000" || fail "interrupted results"
# Ctrl-C in the middle of a search: the probe cut short neither meets nor misses, and the lowest
# probe that met the objective is still the answer.
start_server slots --ttft-ms 20 --itl-ms 200 --capacity 8
"$bin" load --endpoint "$url" --tokenizer tiny --search rate:4:400 --arrival constant --slo ttft_ms=500 \
  --num-requests 8 --output-len 5 --input-len 4 -o "$out/sint.json" >"$out/stdout" 2>"$out/stderr" &
interrupt_after_line $! "$out/stderr" "probe 1:" 0.3
[ "$code" = 130 ] || { cat "$out/stderr"; fail "interrupted search exited $code, expected 130"; }
grep -q "probe 2: .*(interrupted; target" "$out/stderr" || { cat "$out/stderr"; fail "interrupted probe not said so"; }
python3 - "$out/sint.json" <<'PY' || { cat "$out/stdout"; fail "interrupted search results"; }
import json, sys
r = json.load(open(sys.argv[1]))
pts = r["points"]
assert r["interrupted"] and len(pts) in (1, 2), pts  # probe 2 is kept if a request of it finished
assert pts[0]["load"]["search"]["passed"] and pts[0]["load"]["search"]["best"], pts[0]["load"]
assert all(p["load"]["partial"] and not p["load"]["search"]["passed"] for p in pts[1:]), pts[1:]
PY
grep -q ": 4/s (interrupted before a probe missed); " "$out/stdout" \
  || { cat "$out/stdout"; fail "interrupted search summary"; }
grep -q "/s missed)" "$out/stdout" && { cat "$out/stdout"; fail "an interrupted probe counted as a miss"; }
echo "load: all checks passed"
