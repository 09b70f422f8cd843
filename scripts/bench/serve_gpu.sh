#!/usr/bin/env bash
# GPU host: `llmbench serve` (Qwen2.5-7B, random weights, bf16, continuous batching) under `llmbench load` at
# closed-loop concurrency 1, 4, 16, 64 (prompt 512, 128 new tokens), next to `llmbench run --batch 16` for the
# inter-token-latency comparison, in one invocation; then the report and a short table, with the engine's decode
# step and host work over each point from its /metrics (`load --server-metrics`).
# Usage: scripts/bench/serve_gpu.sh [--quick]
#   LLMBENCH=path    llmbench binary (default build-gpu/llmbench)
#   OUT_DIR=dir      results, logs and report (default out/serve)
#   TOKENIZER=path   the served model's tokenizer (default .cache/tokenizers/qwen3: random weights have none)
#   MODEL, CONCURRENCY, INPUT_LEN, OUTPUT_LEN, DEVICE, DTYPE, TIMEOUT_S (per request) override the defaults above
#   MAX_PREFILL_TOKENS  the server's --max-prefill-tokens (default 8192)
#   SERVE_ARGS       more `llmbench serve` flags, e.g. "--chunked-prefill --max-step-tokens 512"
#   SKIP_RUN=1       leave out the `llmbench run --batch 16` comparison (server variants of one invocation)
#   DATASET=spec     `llmbench load --dataset` (e.g. jsonl:FILE: prompts of mixed lengths) instead of synthetic
#                    INPUT_LEN-token prompts; the server's context then fits ${MAX_CONTEXT:-INPUT_LEN+OUTPUT_LEN+64}
set -uo pipefail
cd "$(dirname "$0")/../.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1
bin=${LLMBENCH:-build-gpu/llmbench}
out=${OUT_DIR:-out/serve}
tok=${TOKENIZER:-.cache/tokenizers/qwen3}
model=${MODEL:-qwen2.5-7b}
conc=${CONCURRENCY:-1,4,16,64}
in_len=${INPUT_LEN:-512}
out_len=${OUTPUT_LEN:-128}
device=${DEVICE:-cuda}
dtype=${DTYPE:-bfloat16}
max_batch=$(echo "$conc" | tr ',' '\n' | sort -n | tail -1)
[ -x "$bin" ] || { echo "serve_gpu.sh: no llmbench at $bin" >&2; exit 2; }
[ "$tok" = tiny ] || [ -e "$tok" ] || { echo "serve_gpu.sh: no tokenizer at $tok (scripts/fetch-tokenizers.sh)" >&2; exit 2; }
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.log "$out"/*.html
echo "serve_gpu: $(date -u '+%Y-%m-%d %H:%M UTC'), $model, concurrency $conc, prompt $in_len, $out_len new"

"$bin" serve --model "$model" --tokenizer "$tok" --device "$device" --dtype "$dtype" --port 0 \
  --max-batch "$max_batch" --max-context "${MAX_CONTEXT:-$((in_len + out_len + 64))}" --max-queue 1024 \
  --max-prefill-tokens "${MAX_PREFILL_TOKENS:-8192}" ${SERVE_ARGS:-} \
  >"$out/serve.stdout" 2>"$out/serve.log" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null' EXIT
url=""
for _ in $(seq 600); do
  url=$(grep -o 'http://[0-9.:]*' "$out/serve.stdout" 2>/dev/null | head -1)
  [ -n "$url" ] && break
  kill -0 $server 2>/dev/null || { echo "serve_gpu: the server died:"; tail -5 "$out/serve.log"; exit 1; }
  sleep 0.5
done
[ -n "$url" ] || { echo "serve_gpu: the server did not start"; exit 1; }
echo "serve_gpu: server at $url ($(grep -c . "$out/serve.log") log lines)"
# CPU ticks (user + system) of the server's threads named $1 (llmbench-io: HTTP + SSE; llmbench-engine).
cpu_ticks() {
  local sum=0 t
  for t in /proc/$server/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = "$1" ] || continue
    sum=$((sum + $(sed 's/^.*) //' "$t/stat" | awk '{print $12 + $13}')))
  done
  echo $sum
}

per_point=$([ $quick = 1 ] && echo 2 || echo 4)
io0=$(cpu_ticks llmbench-io) eng0=$(cpu_ticks llmbench-engine)
# num-requests: per_point per stream, at least 16; warm-ups fill every slot once.
for c in ${conc//,/ }; do
  n=$(( c * per_point > 16 ? c * per_point : 16 ))
  "$bin" load --endpoint "$url" --concurrency "$c" --num-requests "$n" --warmup-requests "$c" \
    --input-len "$in_len" --output-len "$out_len" --dataset "${DATASET:-synthetic}" --tokenizer "$tok" --timeout-s "${TIMEOUT_S:-300}" \
    --server-metrics -o "$out/load_c$c.json" 2>&1 | tail -4
done
io1=$(cpu_ticks llmbench-io) eng1=$(cpu_ticks llmbench-engine)
curl -s "$url/metrics" >"$out/metrics.txt"
kill -TERM $server; wait $server 2>/dev/null; trap - EXIT

[ "${SKIP_RUN:-0}" = 1 ] || "$bin" run --model "$model" --batch 16 --prompt-len "$in_len" --max-new-tokens "$out_len" --device "$device" \
  --dtype "$dtype" --warmup 2 --runs $([ $quick = 1 ] && echo 3 || echo 5) --trim $([ $quick = 1 ] && echo 0 || echo 1) \
  -o "$out/run_b16.json" >"$out/run.log" 2>&1 || echo "serve_gpu: run --batch 16 failed: $(tail -2 "$out/run.log")"
# One results file for the whole sweep (the points of one server, one invocation), so the report draws one
# latency-throughput curve through them.
python3 - "$out" "$conc" <<'PY'
import json, os, sys
out, conc = sys.argv[1], sys.argv[2].split(",")
docs = [json.load(open(os.path.join(out, f"load_c{c}.json"))) for c in conc]
sweep = dict(docs[0], points=[p for d in docs for p in d["points"]],
             command="scripts/bench/serve_gpu.sh: " + " ; ".join(d["command"] for d in docs))
tmp = os.path.join(out, "load_sweep.json.tmp")
json.dump(sweep, open(tmp, "w"), indent=2)
os.replace(tmp, os.path.join(out, "load_sweep.json"))
PY
"$bin" report "$out/load_sweep.json" -o "$out/serve-report.html" >/dev/null 2>&1 || echo "serve_gpu: report failed"

python3 - "$out" "$conc" "$((io1 - io0))" "$((eng1 - eng0))" "$(getconf CLK_TCK)" <<'PY'
import json, os, sys
out, conc, io, eng, hz = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rows, tokens = [], 0
print("| concurrency | completed | failed | TTFT p50 ms | TTFT p99 ms | ITL mean ms | ITL p99 ms | TPOT p50 ms | e2e p50 ms | output tok/s | req/s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for c in conc:
    p = json.load(open(os.path.join(out, f"load_c{c}.json")))["points"][0]
    s, r, t = p["summary"], p["requests"], p["throughput"]
    tokens += sum(x["output_tokens"] for x in p["request_log"] if x["ok"])
    print(f"| {c} | {r['completed']} | {r['failed']} | {s['ttft_ms']['p50']:.1f} | {s['ttft_ms']['p99']:.1f} | "
          f"{s['itl_ms']['mean']:.2f} | {s['itl_ms']['p99']:.2f} | {s['tpot_ms']['p50']:.2f} | {s['e2e_ms']['p50']:.0f} | "
          f"{t['output_tokens_per_s']:.0f} | {t['requests_per_s']:.2f} |")
    st = p.get("server_stages_ms") or {}
    print("|  | server stages ms: " + ", ".join(f"{k} {v:.2f}" for k, v in st.items()) + " |||||||||")
    sm = (p.get("server_metrics") or {}).get("counters", {})  # the engine over exactly this point (no warm-ups)
    steps = sm.get("llmbench_engine_steps_total", {}).get("increase", 0)
    if steps:
        step, busy, pre = (sm.get(f"llmbench_engine_{k}_seconds_total", {}).get("increase", 0) for k in ("step", "busy", "prefill"))
        print(f"|  | engine over the point: {steps:.0f} decode steps of {1e3 * step / steps:.3f} ms, "
              f"host work {1e3 * (busy - step - pre) / steps:.3f} ms per step, prefill {pre:.2f} s |||||||||")
tok = max(tokens, 1)
print(f"\nserver CPU over the sweep for {tokens} timed streamed tokens (warm-up requests add a few more tokens, "
      f"so these are upper bounds): I/O threads (HTTP + SSE + detokenize) {io / hz:.2f} s = {1e6 * io / hz / tok:.1f} us/token; "
      f"engine thread (scheduling + kernel launches + waiting on the GPU) {eng / hz:.2f} s = {1e6 * eng / hz / tok:.1f} us/token")
try:  # batched prefill over the whole sweep (warm-ups included), from the server's /metrics
    m = {}
    for line in open(os.path.join(out, "metrics.txt")):
        if line.startswith("llmbench_") and " " in line:
            k, v = line.split()[:2]
            m[k] = float(v)
    passes = max(m.get("llmbench_prefill_passes_total", 0), 1)
    print(f"prefill passes {m.get('llmbench_prefill_passes_total', 0):.0f}: "
          f"{m.get('llmbench_prefill_requests_total', 0) / passes:.2f} requests and "
          f"{m.get('llmbench_prefill_tokens_total', 0) / passes:.0f} prompt tokens per pass "
          f"({m.get('llmbench_prefill_padded_tokens_total', 0) / passes:.0f} with padding); "
          f"decode steps {m.get('llmbench_engine_steps_total', 0):.0f}")
    steps = max(m.get("llmbench_engine_steps_total", 0), 1)
    busy, step, pre = (m.get(f"llmbench_engine_{k}_seconds_total", 0) for k in ("busy", "step", "prefill"))
    print(f"engine thread: busy {busy:.2f} s = decode steps {step:.2f} s ({1e3 * step / steps:.3f} ms each) + "
          f"prefill passes {pre:.2f} s + host work {busy - step - pre:.2f} s ({1e3 * (busy - step - pre) / steps:.3f} ms "
          f"per decode step: handing out tokens, admission, freeing rows; the device idles meanwhile)")
except Exception as e:  # noqa: BLE001
    print(f"prefill metrics: {e}")
try:
    if not os.path.exists(os.path.join(out, "run_b16.json")):
        raise SystemExit(0)  # SKIP_RUN=1, or the run failed (said above)
    run = json.load(open(os.path.join(out, "run_b16.json")))["points"][0]
    v = run.get("verification") or {}
    print(f"llmbench run --batch 16: TPOT {run['summary']['tpot_ms']['trimmed_median']:.3f} ms, TTFT "
          f"{run['summary']['ttft_ms']['trimmed_median']:.1f} ms, verification {'ok' if v.get('ok') else v}")
except Exception as e:  # noqa: BLE001
    print(f"run --batch 16: {e}")
PY
