#!/usr/bin/env bash
# Every kind of results file llmbench writes validates against schemas/results.schema.json, checked by an
# independent validator (Ajv, tests/schema/validate.mjs; installed by scripts/fetch-schema-validator.sh, which
# scripts/test.sh runs: nothing is fetched here): `run` (greedy and verified, sampled with N = 1, a failed point,
# an interrupted run), `compare`, `load` (closed loop against its own `serve`, open loop on the chat API, a
# --search, --no-stream, a trace replay, --server-metrics, failed requests with the server's message), and the committed GPU results
# (docs/gpu-runs). The hand-made and older fixtures pass the readable level (#/$defs/readable), the malformed
# ones fail it. Copies with a required key removed, a wrong type, an unknown key, a bad enum value, a load key
# on a run point and a negative duration each fail.
# The other JSON documents, each against its own schema (schemas/*.schema.json, validate.mjs --schema): gate --json
# (pass, regressed, missing, load points, a search), info --json, tokenize --json (and --bench), generate --json and
# its --dump-logits file, serve's /health and /v1/models (a `serve --model tiny` on a loopback port of 24000-24999,
# stopped here), and the --format json console rows; a broken copy of each fails.
set -u
bin=$(realpath "$1")
data=$(realpath "$2")
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$(dirname "$0")/signal_lib.sh"
tmp=$(mktemp -d)
spid=
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp"  # a `serve` that `load` starts runs here
fail() { echo "FAIL: $*"; exit 1; }

validator="$root/tests/schema/validate.mjs"
command -v node >/dev/null || fail "node is missing (scripts/deps.sh installs it)"
[ -f "$root/tests/schema/node_modules/ajv/package.json" ] \
  || fail "Ajv is not installed: run scripts/fetch-schema-validator.sh (scripts/test.sh does)"
validate() { node "$validator" --quiet "$@"; }

small=(--model tiny --device cpu --prompt-len 16 --warmup 1 --trim 1)
q=(--log-level off)

# ---- files llmbench writes
"$bin" "${q[@]}" run "${small[@]}" --batch 1,2 --max-new-tokens 8 --runs 5 --verify -o run.json --format json \
  >run_rows.json || fail "run"
"$bin" "${q[@]}" run "${small[@]}" --batch 2 --max-new-tokens 1 --runs 3 --temperature 0.8 --top-k 20 --top-p 0.9 \
  --seed 7 --no-roofline --prompt "Once upon a time" -o sampled.json >/dev/null || fail "sampled run"
# Tensor parallel (two CPU ranks over gloo) and int8 weights (the quality measurement).
"$bin" "${q[@]}" run "${small[@]}" --tp 2 --batch 1 --max-new-tokens 4 --runs 3 --no-roofline -o tp.json >/dev/null \
  || fail "run --tp 2"
"$bin" "${q[@]}" run "${small[@]}" --weights int8 --batch 1 --max-new-tokens 4 --runs 3 -o int8.json >/dev/null \
  || fail "run --weights int8"
# A failed point next to an ok one (the KV cache of batch 1024 x 512 does not fit under the address-space cap).
(ulimit -v 2500000 && exec "$bin" "${q[@]}" run --model tiny --device cpu --batch 1024,1 --prompt-len 512 \
  --max-new-tokens 2 --warmup 0 --runs 3 --trim 0 --no-roofline -o failed.json --format json) >failed_rows.json 2>/dev/null
[ $? = 1 ] || fail "the failed-point run did not exit 1"
# A checkpoint (tests/data/models/llama_bf16) whose final norm is NaN: the greedy point fails its verification,
# the int8 one its quality measurement, after their timed runs (as tests/cli/run.sh does).
python3 "$root/tests/cli/nan_checkpoint.py" "$data/models/llama_bf16" nan || fail "making the NaN checkpoint"
nan=(--model nan --device cpu --no-roofline -p 8 -n 3 --runs 2 --warmup 0 --trim 0 --batch 1)
"$bin" "${q[@]}" run "${nan[@]}" --temperature 0,0.7 -o nan1.json >/dev/null 2>&1
"$bin" "${q[@]}" run "${nan[@]}" --temperature 0.7 --weights bf16,int8 -o nan2.json >/dev/null 2>&1
# Interrupted: SIGINT after a few timed runs.
"$bin" "${q[@]}" run --model tiny --device cpu --batch 1 --prompt-len 8 --max-new-tokens 4 --warmup 0 --runs 1000000 \
  --trim 0 --max-minutes 0 --no-roofline -o int.json >/dev/null 2>&1 &
pid=$!
wait_for_handler $pid 2 1
kill -INT $pid
wait $pid
[ $? = 130 ] || fail "interrupted run did not exit 130"
"$bin" "${q[@]}" compare "$root/configs/tiny-ci.yaml" -o compare.json --format json >compare_rows.json || fail "compare"

# Load against its own `llmbench serve --model tiny` (closed loop with objectives, open loop on the chat API,
# a search, whole responses).
lo=(--tokenizer tiny --input-len 16 --output-len 4)
"$bin" "${q[@]}" load "${lo[@]}" --concurrency 1,2 --num-requests 6 --warmup-requests 1 --slo ttft_ms=60000,tpot_ms=1000 --slice-s 0.05 \
  --server-metrics --server-metrics-interval-ms 50 -o load.json --format json >load_rows.json 2>>load.err || fail "load: $(tail -5 load.err)"
"$bin" "${q[@]}" load "${lo[@]}" --api chat --request-rate 50 --arrival gamma:2 --max-concurrency 2 --num-requests 6 \
  --range-ratio 0.5 --prefix-len 4 --extra-body '{"top_k": 1}' --cancel-rate 50 --cancel-delay-ms 0 -o open.json >/dev/null 2>>load.err || fail "open-loop load: $(tail -5 load.err)"
"$bin" "${q[@]}" load "${lo[@]}" --search concurrency:1:2 --search-steps 1 --slo e2e_ms=60000 --num-requests 4 \
  -o search.json --format json >search_rows.json 2>>load.err || fail "load --search: $(tail -5 load.err)"
"$bin" "${q[@]}" load "${lo[@]}" --no-stream --concurrency 2 --num-requests 4 -o whole.json >/dev/null 2>>load.err \
  || fail "load --no-stream: $(tail -5 load.err)"
printf '%s\n' '{"timestamp": 0, "input_length": 12, "output_length": 3, "hash_ids": [0, 1]}' \
  '{"timestamp": 40, "input_length": 10, "output_length": 2, "hash_ids": [0, 2]}' >trace.jsonl
"$bin" "${q[@]}" load "${lo[@]}" --dataset trace:trace.jsonl --trace-block-size 8 --trace-speedup 2 -o trace.json \
  >/dev/null 2>>load.err || fail "load --dataset trace: $(tail -5 load.err)"
"$bin" "${q[@]}" load "${lo[@]}" --api chat --turns 2 --turn-delay-ms 5 --turn-delay-stddev-ms 2 --concurrency 2 --num-requests 4 -o turns.json \
  >/dev/null 2>>load.err || fail "load --turns: $(tail -5 load.err)"
# Failed requests (HTTP 500 with a message, a disconnect, an error event with a detail) against the scripted
# server, on a loopback port of 23000-23999.
start_listening() {  # start_listening BASE LOG CMD...: CMD --port P in the background, P a random port of BASE to
  # BASE + 999 (another may hold one: five tries), until it prints "listening"; sets port and spid
  for _ in 1 2 3 4 5; do
    port=$(($1 + RANDOM % 1000))
    "${@:3}" --port $port >"$2" 2>&1 &
    spid=$!
    for _ in $(seq 100); do grep -q listening "$2" && return 0; kill -0 $spid 2>/dev/null || break; sleep 0.1; done
    kill $spid 2>/dev/null; wait $spid 2>/dev/null; spid=
  done
  return 1
}
start_listening 23000 server.out python3 "$root/tests/load/scripted_server.py" --lifetime-s 120 --ttft-ms 1 --itl-ms 1 \
  --faults 0:http500,2:disconnect,3:errdetail --prefix-cache || fail "the scripted server did not start: $(cat server.out)"
"$bin" "${q[@]}" load --endpoint "http://127.0.0.1:$port" --concurrency 1 --num-requests 5 --output-len 3 \
  -o faults.json --format json >faults_rows.json 2>>load.err || fail "load with failed requests: $(tail -5 load.err)"
kill $spid; wait $spid 2>/dev/null; spid=

produced=(run.json sampled.json tp.json int8.json failed.json nan1.json nan2.json int.json compare.json load.json open.json search.json whole.json faults.json trace.json turns.json)
python3 - "${produced[@]}" <<'PY' || fail "the produced files do not cover what they should"
import json, sys
d = {f: json.load(open(f)) for f in sys.argv[1:]}
pts = lambda f: d[f]["points"]
assert pts("run.json")[0]["verification"]["ok"] is True
assert pts("tp.json")[0]["tensor_parallel"]["size"] == 2 and pts("int8.json")[0]["quality"]["positions"] == 4
assert [p["status"] for p in pts("failed.json")] == ["failed", "ok"]
assert [p["status"] for p in pts("nan1.json")] == ["failed", "ok"] and pts("nan1.json")[0]["weights"] == "checkpoint"
assert [p["status"] for p in pts("nan2.json")] == ["ok", "failed"] and "quality" in pts("nan2.json")[1]["error"]
assert d["int.json"]["interrupted"] is True and pts("int.json")[0]["status"] == "interrupted"
assert "tpot_ms" not in pts("sampled.json")[0]["summary"] and pts("sampled.json")[0]["outputs"]["consistent"] is None
assert len(pts("compare.json")) == 8
assert pts("open.json")[0]["load"]["extra_body"] == {"top_k": 1} and pts("open.json")[0]["rate"]["offered_per_s"] == 50
o = pts("open.json")[0]  # half the requests (by the seed) abandoned as soon as they were sent: each one's own error
assert o["load"]["cancel_rate"] == 50 and o["requests"]["cancelled"] == sum(r["error"] == "client_cancel" for r in o["request_log"]) > 0, o["requests"]
assert o["requests"]["completed"] + o["requests"]["cancelled"] == 6 and o["requests"]["failed"] == 0, o["requests"]
assert all(p["load"]["search"] for p in pts("search.json"))
assert pts("whole.json")[0]["load"]["stream"] is False
for p in pts("load.json"):  # serve's own counters over the point (warm-up excluded) match the client's log
    m = p["server_metrics"]
    assert m["scrapes"] >= 2 and m["failed_scrapes"] == 0, m
    assert m["counters"]['llmbench_requests_total{code="200"}']["increase"] == 6, m["counters"]
    assert m["counters"]["llmbench_generation_tokens_total"]["increase"] == sum(r["output_tokens"] for r in p["request_log"]) == 24
    assert m["histograms"]["llmbench_time_to_first_token_seconds"]["count"] == 6, m["histograms"]
    assert m["gauges"]["llmbench_kv_cache_slots_capacity"]["last"] >= 2, m["gauges"]
assert pts("open.json")[0]["server_metrics"] is None
t = pts("trace.json")[0]["load"]
assert (t["arrival"], t["trace_block_size"], t["request_rate"]) == ("trace:2", 8, 50), t
c = pts("turns.json")[0]
assert (c["load"]["turn_delay_stddev_ms"], c["load"]["turns_stddev"]) == (2, 0), c["load"]
assert c["load"]["turns"] == 2 and len(c["by_turn"]) == 2 and {r["turn"] for r in c["request_log"]} == {1, 2}, c["by_turn"]
assert pts("load.json")[0]["by_turn"] is None and "turn" not in pts("load.json")[0]["request_log"][0]
f = pts("faults.json")[0]
assert f["requests"]["failed"] >= 2 and any("error_detail" in r for r in f["request_log"]), f["requests"]
assert f["prompt_cache"]["requests"] == f["requests"]["completed"] and all("cached_tokens" in r for r in f["request_log"] if r["ok"]), f["prompt_cache"]
assert pts("load.json")[0]["prompt_cache"] is None  # llmbench serve has no prefix cache and does not say
for p in pts("load.json"):  # --slice-s: every request issued in some slice
    assert p["load"]["slice_s"] == 0.05 and sum(s["started"] for s in p["by_slice"]) == len(p["request_log"]), p["by_slice"]
assert pts("open.json")[0]["by_slice"] is None
PY
validate "${produced[@]}" || fail "a file llmbench wrote does not match the schema"

# ---- committed files: the GPU runs (as written, less the one kept without its request log), the fixtures
mapfile -t gpu < <(cd "$root" && python3 - <<'PY'
import glob, gzip, json
for f in sorted(glob.glob("docs/gpu-runs/**/*.json*", recursive=True)):
    if not f.endswith((".json", ".json.gz")) or f.endswith("call1_load_c64_summary.json"):
        continue
    try:
        d = json.load((gzip.open if f.endswith(".gz") else open)(f, "rt"))
    except ValueError:
        continue
    if isinstance(d, dict) and "schema_version" in d:
        print(f)
PY
)
[ ${#gpu[@]} -ge 60 ] || fail "found ${#gpu[@]} GPU results files under docs/gpu-runs, expected 60 or more"
(cd "$root" && validate "${gpu[@]}") || fail "a committed GPU results file does not match the schema"
# Hand-made fixtures: readable (what gate and report need), not complete.
validate --readable "$data"/gate/{baseline,noise,regressed,missing}.json "$data/results/sample-sweep.json" \
  || fail "a gate/report fixture is not readable"
validate "$data/gate/baseline.json" >/dev/null && fail "the hand-made gate baseline passed as a complete file"
node "$validator" --readable "$data/gate/malformed.json" | grep -qF "points[0].params.batch: missing" \
  || fail "gate/malformed.json (params without batch) passed"
node "$validator" --readable "$data/gate/schema2.json" | grep -qF "schema_version: must be 1" \
  || fail "gate/schema2.json passed"

# ---- the schema bites: each broken copy of run.json / load.json fails, naming the path
broken() {  # [schema=NAME] broken NAME SOURCE EXPECTED-LINE PYTHON-STATEMENT (on d); schema: validate.mjs --schema
  python3 -c "import json; d = json.load(open('$2')); $4; json.dump(d, open('$1.json', 'w'))" || fail "making $1"
  local got
  got=$(node "$validator" --schema "${schema:-results}" "$1.json")
  [ $? = 1 ] || fail "$1: the validator did not exit 1: $got"
  grep -qF -- "$3" <<<"$got" || fail "$1: expected '$3' in: $got"
}
broken no_status run.json "points[0].status: missing" 'del d["points"][0]["status"]'
broken no_env_key run.json "env.torch_version: missing" 'del d["env"]["torch_version"]'
broken no_summary_key run.json "points[1].summary.e2e_ms.p99: missing" 'del d["points"][1]["summary"]["e2e_ms"]["p99"]'
broken batch_string run.json "points[0].params.batch: must be integer" 'd["points"][0]["params"]["batch"] = "1"'
broken ttft_negative run.json "points[0].runs[2].ttft_ms: must be >= 0" 'd["points"][0]["runs"][2]["ttft_ms"] = -5'
broken itl_string run.json "points[0].runs[0].itl_ms[1]: must be number" 'd["points"][0]["runs"][0]["itl_ms"][1] = "x"'
broken typo_key run.json "points[0].memory.peak_rss: not in the schema" 'd["points"][0]["memory"]["peak_rss"] = 1'
broken unknown_top run.json "extra: not in the schema" 'd["extra"] = {}'
broken unknown_param run.json "points[0].params.batch_size: not in the schema" 'd["points"][0]["params"]["batch_size"] = 1'
broken bad_status run.json "points[0].status: must be equal to one of the allowed values" 'd["points"][0]["status"] = "done"'
broken bad_dtype run.json "points[0].params.dtype: must be equal to one of the allowed values" 'd["points"][0]["params"]["dtype"] = "bf16"'
broken bad_attn run.json "points[0].params.attn: must be equal to one of the allowed values" 'd["points"][0]["params"]["attn"] = "flash"'
broken bad_mode run.json "points[0].mode: must be equal to one of the allowed values" 'd["points"][0]["mode"] = "serve"'
broken bad_metric run.json "points[0].summary.median_ms: key not allowed here" 'd["points"][0]["summary"]["median_ms"] = d["points"][0]["summary"]["e2e_ms"]'
broken ci95_short run.json "points[0].summary.ttft_ms.ci95: must NOT have fewer than 2 items" 'd["points"][0]["summary"]["ttft_ms"]["ci95"] = [1]'
broken load_on_run run.json "points[0].request_log: not allowed here" 'd["points"][0]["request_log"] = []'
broken failed_with_runs failed.json "points[0].runs: must NOT have more than 0 items" 'd["points"][0]["runs"] = d["points"][1]["runs"]'
broken skipped run.json "points[0].status: must be equal to one of the allowed values" 'd["points"][0]["status"] = "skipped"'
broken ok_with_error run.json 'points[0].error: must be ""' 'd["points"][0]["error"] = "boom"'
broken failed_no_error failed.json "points[0].error: must NOT have fewer than 1 characters" 'd["points"][0]["error"] = ""'
broken version2 run.json "schema_version: must be 1" 'd["schema_version"] = 2'
broken no_request_log load.json "points[0].request_log: missing" 'del d["points"][0]["request_log"]'
broken bad_api load.json "points[0].load.api: must be equal to one of the allowed values" 'd["points"][0]["load"]["api"] = "responses"'
broken bad_error faults.json "points[0].requests.errors.oops: key not allowed here" 'd["points"][0]["requests"]["errors"]["oops"] = 1'
broken ok_request_with_error load.json 'points[0].request_log[0].error: must be ""' 'd["points"][0]["request_log"][0]["error"] = "timeout"'
broken unknown_slo load.json "points[0].goodput.slo.itl_ms: not in the schema" 'd["points"][0]["goodput"]["slo"]["itl_ms"] = 5'
broken turn_without_conversation turns.json "points[0].request_log[0]: must have property conversation when property turn is present" 'del d["points"][0]["request_log"][0]["conversation"]'
broken turn_zero turns.json "points[0].by_turn[0].turn: must be >= 1" 'd["points"][0]["by_turn"][0]["turn"] = 0'
# The readable level requires what gate and report cannot do without, and still refuses unknown keys.
python3 -c "import json; d = json.load(open('run.json')); del d['points'][0]['cold'], d['env']['os']; json.dump(d, open('old.json', 'w'))"
validate --readable old.json || fail "a file without optional keys is not readable"
python3 -c "import json; d = json.load(open('run.json')); d['points'][0]['params']['modle'] = 'x'; json.dump(d, open('typo.json', 'w'))"
validate --readable typo.json >/dev/null && fail "an unknown key passed the readable level"
# ---- the other JSON documents llmbench writes for machines, each against its schema in schemas/ (docs/results-schema.md)
# gate --json: a pass (a file against itself), a regression and a missing point (the fixtures), load points (their
# failed requests are judged) and a --search (one verdict on its answer).
gate() {  # gate OUT EXPECTED-EXIT BASELINE CURRENT
  "$bin" "${q[@]}" gate --baseline "$3" --current "$4" --json >"$1"
  local rc=$?
  [ $rc = "$2" ] || fail "gate $3 $4: exit $rc, expected $2"
}
gate gate_pass.json 0 run.json run.json
gate gate_regressed.json 1 "$data/gate/baseline.json" "$data/gate/regressed.json"
gate gate_missing.json 1 "$data/gate/baseline.json" "$data/gate/missing.json"
gate gate_load.json 0 load.json load.json
gate gate_search.json 0 search.json search.json
"$bin" "${q[@]}" info --json >info.json || fail "info --json"
"$bin" "${q[@]}" tokenize --tokenizer tiny --text "Once upon a time" --json >tokenize.json || fail "tokenize --json"
"$bin" "${q[@]}" tokenize --tokenizer tiny --bench --bench-mb 0.01 --repetitions 1 \
  --corpus "$root/tests/data/tokenizer/corpus.json" --json >tokenize_bench.json || fail "tokenize --bench --json"
"$bin" "${q[@]}" generate --model tiny --device cpu --prompt-ids "1,5,9;7,3" --max-new-tokens 3 --json \
  --dump-logits logits.json >generate.json || fail "generate --json"
# serve's /health and /v1/models, on a loopback port of 24000-24999; SIGTERM stops it (exit 0).
start_listening 24000 serve.out "$bin" "${q[@]}" serve --model tiny --device cpu || fail "serve did not start: $(cat serve.out)"
get() { curl -sf "http://127.0.0.1:$port$1" >"$2" || fail "GET $1"; }
get /health health.json
get /v1/models models.json
get /v1/models/tiny model.json
kill $spid; wait $spid; rc=$?; spid=
[ $rc = 0 ] || fail "serve exited $rc on SIGTERM"
python3 - <<'PY' || fail "the other documents do not cover what they should"
import json
d = lambda f: json.load(open(f))
verdicts = lambda f: {m["verdict"] for p in d(f)["points"] for m in p["metrics"]} | {p["verdict"] for p in d(f)["points"]}
assert d("gate_pass.json")["passed"] and "regressed" in verdicts("gate_regressed.json") and "missing" in verdicts("gate_missing.json")
assert "failed_fraction" in {m["metric"] for p in d("gate_load.json")["points"] for m in p["metrics"]}
assert "max_concurrency" in {m["metric"] for p in d("gate_search.json")["points"] for m in p["metrics"]}
assert any(r["status"] == "failed" and r["ttft_ms"] is None for r in d("failed_rows.json"))
assert "ttft_ms_vs_baseline" in d("compare_rows.json")[0] and d("faults_rows.json")[0]["failed"] >= 2
PY
other() {  # other SCHEMA FILE...
  local schema=$1
  shift
  validate --schema "$schema" "$@" || fail "a document llmbench wrote does not match schemas/$schema.schema.json"
}
other gate-verdict gate_{pass,regressed,missing,load,search}.json
other info info.json
other tokenize tokenize.json tokenize_bench.json
other generate generate.json
other 'generate#/$defs/dump_logits' logits.json
other serve-health health.json
other serve-models models.json
other 'serve-models#/$defs/model' model.json
other console {run,failed,compare,load,search,faults}_rows.json
# ... and a broken copy of each fails, naming the path.
schema=gate-verdict broken verdict_no_ci95 gate_regressed.json "points[0].metrics[0].ci95: missing" 'del d["points"][0]["metrics"][0]["ci95"]'
schema=gate-verdict broken verdict_bad_verdict gate_pass.json "points[0].verdict: must be equal to one of the allowed values" 'd["points"][0]["verdict"] = "worse"'
schema=gate-verdict broken verdict_exit_code gate_regressed.json "exit_code: must be 1" 'd["exit_code"] = 0'
schema=info broken info_unknown info.json "report_charts: not in the schema (unknown key)" 'd["report_charts"] = True'
schema=info broken info_no_key info.json "torch_version: missing" 'del d["torch_version"]'
schema=tokenize broken tokenize_count tokenize.json "count: must be integer" 'd["count"] = str(d["count"])'
schema=generate broken generate_no_kv generate.json "kv_dtype: missing" 'del d["kv_dtype"]'
schema=serve-health broken health_tp health.json "tp: must be >= 1" 'd["tp"] = 0'
schema=serve-models broken models_owner models.json 'data[0].owned_by: must be "llmbench"' 'd["data"][0]["owned_by"] = "openai"'
schema=console broken rows_no_error run_rows.json "[0].error: missing" 'del d[0]["error"]'
schema=console broken rows_load_key load_rows.json "[0].goodput: not in the schema (unknown key)" 'd[0]["goodput"] = 1'
echo "schema: ok"
