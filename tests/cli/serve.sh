#!/usr/bin/env bash
# `llmbench serve` on the tiny model with curl: bad inputs and overload answered with OpenAI-style errors
# (400/401/404/408/413/503), a disconnect storm that leaves every slot free, /metrics in the Prometheus
# format, SIGTERM mid-stream → exit 0; the server keeps serving after each. Plus the --tokenizer refusal.
set -u
bin=$1
here=$(cd "$(dirname "$0")/../serve" && pwd)
promtool=${PROMTOOL:-$here/../../.cache/prometheus/usr/bin/promtool}  # scripts/fetch-promtool.sh
tmp=$(mktemp -d)
source "$here/server_lib.sh"

# --max-queue 0 is refused by its range, naming the flag.
err=$(timeout 30 "$bin" serve --model tiny --port 0 --max-queue 0 2>&1 >/dev/null)
[ $? = 2 ] && grep -q -- "--max-queue: Value 0 not in range 1 to" <<<"$err" || fail "--max-queue 0: $err"

# On ::1 the listening line is a URL (the address in brackets), and load reaches the server through it.
timeout 120 "$bin" --log-level warn serve --model tiny --device cpu --host ::1 --port 0 >"$tmp/v6.out" 2>"$tmp/v6.err" &
v6_pid=$!
for _ in $(seq 600); do [ -s "$tmp/v6.out" ] && break; sleep 0.1; done
v6_url=$(head -n1 "$tmp/v6.out")
[[ "$v6_url" =~ ^llmbench\ serve:\ listening\ on\ (http://\[::1\]:[0-9]+)$ ]] || fail "IPv6 listening line: '$v6_url' $(cat "$tmp/v6.err")"
timeout 60 "$bin" load --endpoint "${BASH_REMATCH[1]}" --tokenizer tiny --num-requests 2 --output-len 2 -o "$tmp/v6.json" \
  >/dev/null 2>"$tmp/v6load.err" || fail "load on ${BASH_REMATCH[1]}: $(cat "$tmp/v6load.err")"
python3 -c "import json; p = json.load(open('$tmp/v6.json'))['points'][0]; assert p['requests']['completed'] == 2 and p['load']['endpoint'] == '${BASH_REMATCH[1]}', p['load']['endpoint']" \
  || fail "load results on IPv6"
kill -TERM "$v6_pid"; wait "$v6_pid" || fail "IPv6 server exit"

# A random-weight preset has no tokenizer: one clear line naming --tokenizer, before any weights load.
mkdir -p "$tmp/empty-hf"
err=$(HF_HUB_CACHE=$tmp/empty-hf HF_HOME=$tmp/empty-hf timeout 30 "$bin" serve --model qwen2.5-7b --port 0 2>&1 >/dev/null)
rc=$?
[ "$rc" = 2 ] && grep -q -- "--tokenizer" <<<"$err" && [ "$(wc -l <<<"$err")" = 1 ] \
  || fail "serve without a tokenizer: rc $rc, '$err'"

wait_clients() { for p in $(jobs -p); do [ "$p" = "$server_pid" ] || wait "$p"; done; }
start_server --max-batch 4 --max-queue 16 --read-timeout 1
ctx=$(curl -s "$base/v1/models" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["max_model_len"])')

# expect STATUS CODE CURL-ARGS…: the status and an {"error": {"message", "type", "code"}} body.
expect() {
  local status=$1 code=$2; shift 2
  local out
  out=$(curl -s -w '\n%{http_code}' "$@") || fail "curl $*"
  [ "${out##*$'\n'}" = "$status" ] || fail "$* → ${out##*$'\n'}, want $status: ${out%$'\n'*}"
  python3 -c '
import json, sys
e = json.loads(sys.argv[1])["error"]
assert isinstance(e["message"], str) and e["message"] and isinstance(e["type"], str), e
assert e["code"] == sys.argv[2], (e["code"], sys.argv[2])' "${out%$'\n'*}" "$code" || fail "$* → bad error body: ${out%$'\n'*}"
}
post() { expect "$1" "$2" -H 'Content-Type: application/json' --data-binary "$3" "$base/v1/${4:-completions}"; }
post 400 invalid_json '{"prompt": [1, 2'
post 400 invalid_json '[1, 2]'
post 400 invalid_type '{"prompt": [1], "max_tokens": "ten"}'
post 400 invalid_type '{"prompt": [1], "temperature": []}'
post 400 invalid_type '{"prompt": {"text": "hi"}}'
post 400 invalid_value '{"prompt": [1], "max_tokens": 0}'
post 400 invalid_value '{"prompt": [1], "max_tokens": -5}'
post 400 context_length_exceeded "{\"prompt\": [1], \"max_tokens\": $ctx}"
post 400 context_length_exceeded "{\"prompt\": $(python3 -c "print([5] * $ctx)")}"
post 400 invalid_value '{"prompt": [1, 100000]}'
post 400 invalid_value '{"prompt": [1], "n": 2}'
post 400 missing_field '{"max_tokens": 3}'
post 400 invalid_type '{"messages": [{"role": "user", "content": 5}]}' chat/completions
post 404 model_not_found '{"model": "gpt-4o", "prompt": "hi"}'
post 404 model_not_found '{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}' chat/completions
expect 404 not_found "$base/v1/embeddings"
head -c $((9 << 20)) /dev/zero | tr '\0' 'a' >"$tmp/big.json"
expect 413 request_too_large -H 'Content-Type: application/json' --data-binary @"$tmp/big.json" "$base/v1/completions"
# Slow loris: half a header, then nothing: 408 after --read-timeout.
out=$(timeout 10 python3 - "${base##*:}" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{\"pro")
data = b""
while chunk := s.recv(4096): data += chunk
print(data.decode())
PY
) || fail "slow client: no answer"
grep -q "^HTTP/1.1 408" <<<"$out" && grep -q '"request_timeout"' <<<"$out" || fail "slow client: $out"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health")" = 200 ] || fail "unhealthy after bad inputs"

# Overload: 4 slots + 16 queued; the rest of 28 get 503 with Retry-After.
long="{\"prompt\": [7, 8], \"max_tokens\": $((ctx - 8)), \"ignore_eos\": true, \"stream\": true}"
for i in $(seq 1 28); do
  curl -s -N -D "$tmp/over$i.h" -o /dev/null --max-time 3 -H 'Content-Type: application/json' -d "$long" "$base/v1/completions" &
done
wait_clients
n503=$(grep -l '^HTTP/1.1 503' "$tmp"/over*.h 2>/dev/null | wc -l)
[ "$n503" -ge 8 ] || fail "expected ≥ 8 of 28 refused with 503, got $n503"
grep -q '^Retry-After: 1' $(grep -l '^HTTP/1.1 503' "$tmp"/over*.h | head -1) || fail "503 without Retry-After"

# Disconnect storm: 20 clients (4 streaming, 16 queued) drop at random moments; every slot comes back.
for i in $(seq 1 20); do
  curl -s -N -o /dev/null --max-time 0.$((RANDOM % 9 + 1)) -H 'Content-Type: application/json' -d "$long" "$base/v1/completions" &
done
wait_clients
metric() { curl -s "$base/metrics" | awk -v k="$1" '$1 == k {print $2}'; }
for _ in $(seq 1 100); do
  [ "$(metric llmbench_kv_cache_slots_used)" = 0 ] && [ "$(metric llmbench_requests_waiting)" = 0 ] && break
  sleep 0.1
done
[ "$(metric llmbench_kv_cache_slots_used)" = 0 ] || fail "slots still in use after the storm: $(metric llmbench_kv_cache_slots_used)"
dropped=$(metric 'llmbench_requests_total{code="499"}')
[ "${dropped:-0}" -ge 20 ] || fail "expected ≥ 20 dropped clients counted, got '$dropped'"

# /metrics: every line is a comment or a sample; the histograms are complete.
curl -s "$base/metrics" >"$tmp/metrics.txt"
python3 - "$tmp/metrics.txt" <<'PY' || fail "/metrics is not valid Prometheus text"
import re, sys
sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_]+="[^"]*"(,[a-zA-Z_]+="[^"]*")*\})? (\S+)$')
values = {}
for line in open(sys.argv[1]).read().splitlines():
    if line.startswith("# HELP ") or line.startswith("# TYPE "): continue
    m = sample.match(line)
    assert m, line
    values[m.group(1) + (m.group(2) or "")] = float(m.group(4))
for h in ["time_to_first_token", "inter_token_latency", "e2e_request_latency", "request_queue_time"]:
    name = "llmbench_" + h + "_seconds"
    assert values[name + '_bucket{le="+Inf"}'] == values[name + "_count"], h
assert values["llmbench_requests_total{code=\"400\"}"] >= 13, values
assert values["llmbench_requests_total{code=\"503\"}"] >= 8
assert values["llmbench_generation_tokens_total"] > 0
assert values["llmbench_kv_cache_slots_capacity"] == 4
PY
# The same text through Prometheus' own parser and linter (names, suffixes, types, histograms).
[ -x "$promtool" ] || fail "no promtool at $promtool: run scripts/fetch-promtool.sh (scripts/test.sh does)"
"$promtool" check metrics <"$tmp/metrics.txt" >"$tmp/promtool.txt" 2>&1 || fail "promtool check metrics: $(head -c 600 "$tmp/promtool.txt")"

# Still serving: a plain completion, then SIGTERM while a stream runs: exit 0 within the grace.
code=$(curl -s -o "$tmp/ok.json" -w '%{http_code}' -H 'Content-Type: application/json' -d '{"prompt": "hello", "max_tokens": 4}' "$base/v1/completions")
[ "$code" = 200 ] || fail "completion after the storm: $code $(cat "$tmp/ok.json")"
curl -s -N -o "$tmp/last.sse" -H 'Content-Type: application/json' -d "$long" "$base/v1/completions" &
client=$!
sleep 0.5
stop_server
wait "$client"
tail -c 200 "$tmp/last.sse" | grep -q 'data: \[DONE\]' || fail "the running stream did not end cleanly on SIGTERM: $(tail -c 300 "$tmp/last.sse")"
# Two SIGTERMs back to back (`timeout` signals serve, then its process group) are one request to stop: a
# graceful shutdown, not the "second signal" that exits at once.
start_server
curl -s -N -o "$tmp/last.sse" -H 'Content-Type: application/json' -d "$long" "$base/v1/completions" &
client=$!
sleep 0.5
kill -TERM "$server_pid"
stop_server  # the second SIGTERM
wait "$client"
tail -c 200 "$tmp/last.sse" | grep -q 'data: \[DONE\]' || fail "two SIGTERMs cut the running stream: $(tail -c 300 "$tmp/last.sse")"

# --api-key: /v1 needs it, /health does not.
start_server --api-key sekret
expect 401 invalid_api_key "$base/v1/models"
expect 401 invalid_api_key -H 'Authorization: Bearer wrong' "$base/v1/models"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sekret' "$base/v1/models")" = 200 ] || fail "good key refused"
# load without the key: the model lookup's 401 asks for --api-key, not --model.
err=$(timeout 60 "$bin" load --endpoint "$base" --tokenizer tiny --num-requests 1 2>&1 >/dev/null)
grep -q "/v1/models: HTTP 401 (give --api-key)" <<<"$err" || fail "load without the key: $err"
# The key from an environment variable (--api-key-env): accepted, and nowhere in the results file.
LLMBENCH_TEST_KEY=sekret timeout 60 "$bin" load --endpoint "$base" --api-key-env LLMBENCH_TEST_KEY --tokenizer tiny \
  --num-requests 1 --output-len 2 -o "$tmp/key.json" >/dev/null 2>"$tmp/key.err" || { cat "$tmp/key.err"; fail "load --api-key-env"; }
grep -q sekret "$tmp/key.json" && fail "the key from --api-key-env is in the results file"
grep -q '"completed": 1' "$tmp/key.json" || fail "load --api-key-env: no completed request"

# Out of file descriptors: the server waits for connections to close instead of spinning on accept()
# (one warning while the connections are held, little CPU), then serves again. The count is taken before the
# held sockets close: closing them can start a second, short episode while the server drops them.
prlimit --nofile=48:48 --pid "$server_pid" || fail "prlimit"
python3 - "${base##*:}" "$server_pid" "$tmp/serve.err" <<'PY' || fail "accept with no file descriptor left"
import socket, sys, time
port, pid = int(sys.argv[1]), sys.argv[2]
def cpu_s():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100  # utime + stime, clock ticks
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(80)]  # beyond 48 descriptors
time.sleep(0.5)
c0 = cpu_s(); time.sleep(2); used = cpu_s() - c0
assert used < 0.5, f"{used:.2f} s of CPU in 2 s while out of descriptors"
warnings = [l for l in open(sys.argv[3], errors="replace") if "accept:" in l]
assert len(warnings) == 1, f"expected one accept warning while held, got {len(warnings)}: {warnings[:3]}"
for s in held: s.close()
PY
sleep 0.3
[ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer sekret' "$base/v1/models")" = 200 ] \
  || fail "not serving after the descriptors came back"
stop_server

# Out of file descriptors because idle keep-alive connections hold them all: the server closes the oldest idle
# ones to make room (as nginx does), so a new client is served at once, not after --idle-timeout (60 s).
start_server
prlimit --nofile=48:48 --pid "$server_pid" || fail "prlimit"
python3 - "${base##*:}" <<'PY' || fail "new clients wait while idle connections hold every descriptor"
import socket, subprocess, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]  # idle, beyond 48 descriptors
time.sleep(0.5)
code = subprocess.run(["curl", "-s", "-m", "3", "-o", "/dev/null", "-w", "%{http_code}", f"http://127.0.0.1:{port}/health"],
                      capture_output=True, text=True).stdout
assert code == "200", f"/health while idle connections hold the descriptors: {code!r}"
for s in held: s.close()
PY
stop_server

# 15,000 connections at once: accepting them costs the server little CPU (it swept its whole list of
# connections on every accept past 1,024: 2.2 s of CPU for these, quadratic in the connections). Needs a hard
# descriptor limit of 16,000 (the server and this client each raise their soft limit to it).
if [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 16000 ]; then
  start_server
  python3 - "${base##*:}" "$server_pid" <<'PY' || fail "accepting 15,000 connections"
import resource, socket, sys, time
port, pid = int(sys.argv[1]), sys.argv[2]
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
def cpu_s():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100
c0 = cpu_s()
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(15000)]
time.sleep(1)
used = cpu_s() - c0
assert used < 1.0, f"{used:.2f} s of server CPU to accept 15,000 connections"
for s in held: s.close()
PY
  [ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$base/health")" = 200 ] || fail "not serving after 15,000 connections"
  stop_server
fi
echo "serve: ok"
