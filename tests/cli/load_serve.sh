#!/usr/bin/env bash
# End-to-end: `llmbench load` against its own `llmbench serve --model tiny` (started on a free loopback port,
# stopped afterwards): closed and open loop, every request completes with exactly the forced output length,
# the server's stage timings reach the results, and no server outlives the command.
set -u
bin=$(realpath "$1")
source "$(dirname "$0")/signal_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"  # the servers started here are found by their working directory
fail() { echo "FAIL: $*"; cat "$tmp/err.txt" 2>/dev/null | tail -20; exit 1; }

timeout 240 "$bin" load --concurrency 1,3 --num-requests 9 --warmup-requests 2 --input-len 24 --output-len 7 \
  --tokenizer tiny --slo ttft_ms=60000,e2e_ms=120000 -o "$tmp/closed.json" >"$tmp/out.txt" 2>"$tmp/err.txt" \
  || fail "closed-loop load exited $?"
timeout 240 "$bin" load --request-rate 20 --arrival poisson --num-requests 8 --input-len 16 --output-len 5 \
  --api chat --tokenizer tiny -o "$tmp/open.json" >>"$tmp/out.txt" 2>>"$tmp/err.txt" \
  || fail "open-loop load exited $?"

timeout 240 "$bin" load --no-stream --concurrency 2 --num-requests 4 --input-len 8 --output-len 6 --tokenizer tiny \
  -o "$tmp/whole.json" >>"$tmp/out.txt" 2>>"$tmp/err.txt" || fail "--no-stream load exited $?"
python3 - "$tmp/whole.json" <<'PY' || fail "--no-stream results"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["status"] == "ok" and p["requests"]["completed"] == 4 and p["load"]["stream"] is False, p["requests"]
assert all(r["output_tokens"] == 6 for r in p["request_log"]), p["request_log"]
# The whole response's stage timings come from its Server-Timing header.
st = p["server_stages_ms"]
assert set(st) == {"http_recv_ms", "queue_ms", "tokenize_ms", "prefill_ms", "decode_ms", "stream_ms"}, st
assert st["decode_ms"] > 0 and st["decode_ms"] < p["summary"]["e2e_ms"]["p50"], (st, p["summary"])
PY
python3 - "$tmp/closed.json" "$tmp/open.json" <<'PY' || fail "results"
import json, sys
closed, opened = (json.load(open(p)) for p in sys.argv[1:3])
pts = closed["points"]
assert [p["load"]["concurrency"] for p in pts] == [1, 3], [p["load"] for p in pts]
for doc, n, out in ((closed, 9, 7), (opened, 8, 5)):
    for p in doc["points"]:
        assert p["mode"] == "load" and p["status"] == "ok", (p["status"], p.get("error"))
        assert p["requests"]["completed"] == n and p["requests"]["failed"] == 0, p["requests"]
        assert p["load"]["token_count_source"] == "usage", p["load"]
        log = p["request_log"]
        assert len(log) == n
        for r in log:
            assert r["output_tokens"] == out, r
            if doc is closed:  # 24 synthetic tokens + the BOS the server's tokenizer adds, as vLLM does
                assert r["prompt_tokens"] == 25, r
        st = p["server_stages_ms"]
        for k in ("http_recv_ms", "queue_ms", "tokenize_ms", "prefill_ms", "decode_ms", "stream_ms"):
            assert k in st and st[k] >= 0, st
        s = p["summary"]
        assert 0 < s["ttft_ms"]["p50"] <= s["e2e_ms"]["p50"], s
        if doc is closed:  # every request meets the generous SLOs given
            assert p["goodput"]["fraction"] == 1.0 and p["goodput"]["requests_per_s"] > 0, p["goodput"]
        else:  # no --slo: no goodput figure
            assert p["goodput"]["fraction"] is None and p["goodput"]["slo"] == {}, p["goodput"]
        assert p["throughput"]["output_tokens_per_s"] > 0
assert opened["points"][0]["load"]["api"] == "chat"
PY
# Conversations (--turns) against our own chat endpoint: each turn's prompt is the history so far, as the
# server's tokenizer counts it: turn 1's 16 tokens (chat: no BOS); each later turn adds the answer (5 tokens) and a
# new prompt (16), so the count grows by 21 a turn at the least (the tiny model has no chat template).
timeout 240 "$bin" load --api chat --turns 3 --turn-delay-ms 20 --concurrency 2 --num-requests 6 --input-len 16 \
  --output-len 5 --tokenizer tiny -o "$tmp/turns.json" >"$tmp/turns.txt" 2>>"$tmp/err.txt" || fail "load --turns exited $?"
grep -q "conversations of 3 turns, think 20 ms, by turn:" "$tmp/turns.txt" || fail "no by-turn block: $(cat "$tmp/turns.txt")"
python3 - "$tmp/turns.json" <<'PY' || fail "--turns results"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["status"] == "ok" and p["requests"]["completed"] == 6, p["requests"]
by = {}
for r in p["request_log"]:
    by.setdefault(r["conversation"], []).append(r)
assert sorted(by) == [0, 1], by.keys()  # 6 requests are two conversations of three turns
for recs in by.values():
    assert [r["turn"] for r in recs] == [1, 2, 3], recs
    assert recs[0]["prompt_tokens"] == 16, recs[0]
    for a, b in zip(recs, recs[1:]):
        assert b["prompt_tokens"] >= a["prompt_tokens"] + 21, (a["prompt_tokens"], b["prompt_tokens"])
        assert b["start_ms"] >= a["start_ms"] + a["e2e_ms"] + 19, (a, b)
turns = p["by_turn"]
assert [t["turn"] for t in turns] == [1, 2, 3] and all(t["completed"] == 2 for t in turns), turns
PY
# Ctrl-C at a terminal signals the whole foreground process group: the server that load starts must not
# die of it (while it loads, that was "exited before it was listening", exit 1). load stops, stops the
# server, writes its (interrupted) file, exits 130.
setsid "$bin" load --concurrency 2 --duration 60 --input-len 8 --output-len 32 --tokenizer tiny -o "$tmp/int.json" \
  >/dev/null 2>"$tmp/err.txt" &
pid=$!
for _ in $(seq 300); do  # the server process started: it is loading its model
  pgrep -P "$pid" >/dev/null && break
  sleep 0.05
done
sleep 0.2
kill -INT -- "-$pid"
wait "$pid"
code=$?
[ "$code" = 130 ] || fail "load under a process-group Ctrl-C exited $code, expected 130"
python3 -c "
import json; r = json.load(open('$tmp/int.json'))
assert r['interrupted'] is True
assert all(p['load']['partial'] for p in r['points']), r['points']" || fail "interrupted results"

# A model directory without a tokenizer of its own (a config only: random weights): the server that `load`
# starts gets --tokenizer too, or it would refuse to start.
mkdir -p "$tmp/m512"
python3 -c "
import json; c = json.load(open('$2/models/llama_bf16/config.json')); c['vocab_size'] = 512
json.dump(c, open('$tmp/m512/config.json', 'w'))"
timeout 240 "$bin" load --model "$tmp/m512" --tokenizer tiny --concurrency 1 --num-requests 2 --input-len 8 \
  --output-len 3 -o "$tmp/own_tok.json" >>"$tmp/out.txt" 2>>"$tmp/err.txt" || fail "load --model DIR --tokenizer exited $?"
python3 -c "
import json; p = json.load(open('$tmp/own_tok.json'))['points'][0]
assert p['status'] == 'ok' and p['requests']['completed'] == 2, p['requests']" || fail "load --model DIR --tokenizer results"

sleep 0.5
left=$(servers_started_in "$tmp")
[ -z "$left" ] || fail "a server outlived the load command (pid $left)"
echo PASS
