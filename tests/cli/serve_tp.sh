#!/usr/bin/env bash
# `llmbench serve --tp 2` on the CPU (Gloo, tiny model): rank 0 serves, rank 1 replays its model calls
# (dist/model_mirror.h). Concurrent streamed requests give the same greedy texts as `serve --tp 1` and as
# `llmbench generate`, with batched and with chunked prefill, through slot compaction (requests of different
# lengths); SIGTERM stops both ranks with exit 0; a killed rank 1 ends the server with one clear error in
# bounded time (launched ranks, and torchrun-style ranks where only the collectives can tell), a stopped
# rank 1 within --dist-timeout.
# LLMBENCH_SERVE_TP_DEVICE=cuda runs the same on two GPUs (NCCL, CUDA graphs): tests/gpu/serve_tp.sh.
set -u
bin=$1
serve_device=${LLMBENCH_SERVE_TP_DEVICE:-cpu}
backend=gloo; [ "$serve_device" = cpu ] || backend=nccl
here=$(cd "$(dirname "$0")/../serve" && pwd)
promtool=${PROMTOOL:-$here/../../.cache/prometheus/usr/bin/promtool}  # scripts/fetch-promtool.sh
tmp=$(mktemp -d)
source "$here/server_lib.sh"
export OMP_NUM_THREADS=1
streams() { timeout 120 python3 "$here/sse_streams.py" "$base" "$1"; }
rank1() { pgrep -P "$server_pid"; }  # the launched rank 1 is rank 0's only child
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }  # a zombie is gone
p0=""; p1=""
trap 'for p in $p0 $p1; do kill -9 "$p" 2>/dev/null; done; cleanup' EXIT

# 12 requests: 8 of one 7-token prompt length and 16 new tokens (generate's batch), 4 of 3–60 tokens
# with 5–24 new tokens (rows finish at different steps: compaction moves rows on both ranks).
python3 - >"$tmp/requests.json" <<'PY'
import json, random
r = random.Random(17)
reqs = [{"prompt": [r.randrange(3, 480) for _ in range(7)], "max_tokens": 16} for _ in range(8)]
reqs += [{"prompt": [r.randrange(3, 480) for _ in range(n)], "max_tokens": m} for n, m in ((3, 5), (60, 24), (25, 9), (41, 13))]
print(json.dumps(reqs))
PY
ids=$(python3 -c 'import json,sys; print(";".join(",".join(map(str,q["prompt"])) for q in json.load(open(sys.argv[1]))[:8]))' "$tmp/requests.json")
ref=$("$bin" --log-level off generate --model tiny --device "$serve_device" --dtype float32 --prompt-ids "$ids" --max-new-tokens 16 --ignore-eos --json) \
  || fail "generate batch"

served() {  # label serve-options… → $tmp/<label>.json
  local label=$1; shift
  start_server --dtype float32 --max-batch 8 --max-queue 32 "$@"
  streams "$tmp/requests.json" >"$tmp/$label.json" || fail "$label: streams failed: $(cat "$tmp/$label.json")"
  if [[ " $* " == *" --tp 2 "* ]]; then
    health=$(curl -s "$base/health")
    python3 -c 'import json,sys; h=json.loads(sys.argv[1]); assert h["tp"] == 2 and h["tp_backend"] == sys.argv[2], h' "$health" "$backend" \
      || fail "$label: /health $health"
    curl -s "$base/metrics" >"$tmp/metrics.txt"
    grep -q "^llmbench_tensor_parallel_size{backend=\"$backend\"} 2\$" "$tmp/metrics.txt" || fail "$label: no tp gauge in /metrics"
    [ -x "$promtool" ] || fail "no promtool at $promtool: run scripts/fetch-promtool.sh (scripts/test.sh does)"
    "$promtool" check metrics <"$tmp/metrics.txt" >"$tmp/promtool.txt" 2>&1 || fail "$label: promtool check metrics: $(head -c 600 "$tmp/promtool.txt")"
    if [[ " $* " == *" --chunked-prefill "* ]]; then  # the prompts really went in chunks, mixed into steps
      chunks=$(curl -s "$base/metrics" | awk '$1 == "llmbench_prefill_chunks_total" {print $2}')
      [ "${chunks:-0}" -gt 12 ] || fail "$label: ${chunks:-no} prompt chunks for 12 prompts, some of 25–60 tokens"
    fi
    r1=$(rank1) || fail "$label: rank 0 has no child rank"
    stop_server
    sleep 0.3
    ! alive "$r1" || fail "$label: rank 1 (pid $r1) still runs after the server stopped"
  else
    stop_server
  fi
}
served tp1 --tp 1
served tp2 --tp 2
served tp2c --tp 2 --chunked-prefill --max-step-tokens 20
python3 - "$tmp" "$ref" <<'PY' || fail "serve --tp 2 texts differ"
import json, sys
tmp, ref = sys.argv[1], json.loads(sys.argv[2])["text"]
one, two, chunked = (json.load(open(f"{tmp}/{n}.json")) for n in ("tp1", "tp2", "tp2c"))
assert len(one) == len(two) == len(chunked) == 12
assert one[:8] == ref, [(i, a, b) for i, (a, b) in enumerate(zip(one, ref)) if a != b][:2]
assert two == one, [(i, a, b) for i, (a, b) in enumerate(zip(two, one)) if a != b][:2]
assert chunked == one, [(i, a, b) for i, (a, b) in enumerate(zip(chunked, one)) if a != b][:2]
assert len(set(one)) > 6, one  # the prompts lead to different texts: the comparison can tell them apart
PY

# SIGTERM while streams run: the running requests are cancelled after the grace, rank 1 is told to stop,
# both ranks exit (rank 0 with 0), and the streams end.
python3 -c 'import json; print(json.dumps([{"prompt": [5, 6, 7], "max_tokens": 4000}] * 2))' >"$tmp/long.json"
start_server --tp 2 --max-batch 4 --shutdown-grace-ms 200
r1=$(rank1) || fail "no rank 1"
timeout 60 python3 "$here/sse_streams.py" "$base" "$tmp/long.json" >/dev/null 2>&1 &
client=$!
sleep 1
stop_server
sleep 0.3
! alive "$r1" || fail "SIGTERM mid-stream: rank 1 (pid $r1) still runs"
timeout 10 tail -s 0.1 --pid="$client" -f /dev/null || fail "SIGTERM mid-stream: a stream did not end"

# Rank 1 killed while streams run: the server exits non-zero within seconds, naming the rank.
start_server --tp 2 --max-batch 4
r1=$(rank1) || fail "no rank 1"
timeout 60 python3 "$here/sse_streams.py" "$base" "$tmp/long.json" >/dev/null 2>&1 &
client=$!
sleep 1
kill -9 "$r1"
start=$(date +%s)
timeout 20 tail -s 0.1 --pid="$server_pid" -f /dev/null || fail "server still running 20 s after rank 1 was killed"
rc=0; wait "$server_pid" || rc=$?
server_pid=""
[ "$rc" -ne 0 ] || fail "killed rank 1: server exited 0"
grep -q "llmbench: error: tensor-parallel rank 1 (pid $r1) was killed by signal 9" "$tmp/serve.err" \
  || fail "killed rank 1: no clear error: $(tail -3 "$tmp/serve.err")"
wait "$client" && fail "the stream survived the server's failure"
echo "killed rank 1: server exited $rc after $(( $(date +%s) - start )) s"

# Rank 1 stuck (stopped, not dead: no launcher sees it): the next request's collective times out after
# --dist-timeout, the request gets an error, the server exits with the timeout and ends rank 1.
start_server --tp 2 --dist-timeout 3
r1=$(rank1) || fail "no rank 1"
kill -STOP "$r1"
start=$(date +%s)
reply=$(curl -s -m 30 "$base/v1/completions" -d '{"model": "tiny", "prompt": [5, 6, 7], "max_tokens": 8}')
[ "$backend" = nccl ] || grep -q '"engine_error"' <<<"$reply" || fail "stuck rank 1: the request got $reply"
timeout 20 tail -s 0.1 --pid="$server_pid" -f /dev/null || fail "stuck rank 1: server still running 20 s later"
rc=0; wait "$server_pid" || rc=$?
server_pid=""
[ "$rc" -ne 0 ] || fail "stuck rank 1: server exited 0"
# (NCCL: the watchdog aborts rank 0 at the timeout instead, without an error line of ours.)
[ "$backend" = nccl ] || grep -q "llmbench: error: tensor-parallel prefill_slots failed on rank 0: .*Timed out" "$tmp/serve.err" \
  || fail "stuck rank 1: no clear error: $(tail -3 "$tmp/serve.err")"
sleep 0.3
! alive "$r1" || { kill -9 "$r1"; fail "stuck rank 1 (pid $r1) outlived the server"; }
echo "stuck rank 1: server exited $rc after $(( $(date +%s) - start )) s"

# torchrun-style ranks (RANK, WORLD_SIZE, MASTER_* set; no launcher watches them): a dead rank is found
# by the collectives alone, bounded by --dist-timeout.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ext() {  # rank → runs in the background, sets ext_pid
  RANK=$1 WORLD_SIZE=2 LOCAL_RANK=$1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$bin" --log-level warn serve --model tiny --device "$serve_device" --dtype float32 --port 0 --tp 2 --dist-timeout 4 \
    >"$tmp/ext$1.out" 2>"$tmp/ext$1.err" &
  ext_pid=$!
}
wait_listening() {
  for _ in $(seq 1 300); do grep -q listening "$tmp/ext0.out" && return 0; sleep 0.1; done
  fail "torchrun-style rank 0 never listened: $(cat "$tmp/ext0.err")"
}
ext 0; p0=$ext_pid; ext 1; p1=$ext_pid
wait_listening
base=$(grep -o 'http://[0-9.:]*' "$tmp/ext0.out")
timeout 60 python3 "$here/sse_streams.py" "$base" "$tmp/long.json" >/dev/null 2>&1 &  # rank 0 mid-step
client=$!
sleep 1
kill -9 "$p1"
timeout 20 tail -s 0.1 --pid="$p0" -f /dev/null || fail "torchrun-style rank 0 still runs 20 s after rank 1 died"
rc=0; wait "$p0" 2>/dev/null || rc=$?
[ "$rc" -ne 0 ] || fail "torchrun-style rank 0 exited 0 after rank 1 died"
grep -q "llmbench: error: tensor-parallel" "$tmp/ext0.err" || fail "torchrun-style rank 0: $(tail -3 "$tmp/ext0.err")"
echo "torchrun-style rank 1 killed → rank 0: $(grep 'llmbench: error' "$tmp/ext0.err")"
timeout 10 tail -s 0.1 --pid="$client" -f /dev/null || fail "torchrun-style: a stream outlived rank 0"
# ... and rank 0 gone: rank 1 gives up within the timeout.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
: >"$tmp/ext0.out"
ext 0; p0=$ext_pid; ext 1; p1=$ext_pid
wait_listening
kill -9 "$p0"
timeout 20 tail -s 0.1 --pid="$p1" -f /dev/null || fail "torchrun-style rank 1 still runs 20 s after rank 0 died"
rc=0; wait "$p1" 2>/dev/null || rc=$?
[ "$rc" -ne 0 ] || fail "torchrun-style rank 1 exited 0 after rank 0 died"
grep -q "llmbench: error: rank 1: " "$tmp/ext1.err" || fail "torchrun-style rank 1: $(tail -3 "$tmp/ext1.err")"
echo "torchrun-style rank 0 killed → rank 1: $(grep 'llmbench: error' "$tmp/ext1.err")"
p0=""; p1=""
echo "serve_tp: ok"
