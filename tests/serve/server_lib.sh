# Sourced by the serve end-to-end tests: start `llmbench serve` on a free loopback port, always stop it.
# Needs $bin and $tmp ($serve_device: the server's --device, cpu unless set; $serve_log_level: warn unless
# set); sets $server_pid and $base (http://127.0.0.1:PORT). KEEP_TEST_LOGS=dir: the test's files (server
# stdout/stderr, requests, replies) are copied there before they are removed (for runs on the GPU host).
server_pid=""
fail() { echo "FAIL: $*"; [ -f "$tmp/serve.err" ] && tail -5 "$tmp/serve.err"; exit 1; }
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
  [ -n "${KEEP_TEST_LOGS:-}" ] && mkdir -p "$KEEP_TEST_LOGS" && cp -r "$tmp"/. "$KEEP_TEST_LOGS"/ 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

start_server() {  # start_server [serve options…]
  : > "$tmp/serve.out"
  "$bin" --log-level "${serve_log_level:-warn}" serve --model tiny --device "${serve_device:-cpu}" --port 0 "$@" >"$tmp/serve.out" 2>"$tmp/serve.err" &
  server_pid=$!
  local line=""
  for _ in $(seq 1 600); do  # the model loads first: up to 60 s
    line=$(head -n1 "$tmp/serve.out")
    [ -n "$line" ] && break
    kill -0 "$server_pid" 2>/dev/null || fail "server exited before listening: $(cat "$tmp/serve.err")"
    sleep 0.1
  done
  [[ "$line" =~ ^llmbench\ serve:\ listening\ on\ (http://127\.0\.0\.1:[0-9]+)$ ]] || fail "no listening line: '$line'"
  base=${BASH_REMATCH[1]}
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health")" = 200 ] || fail "/health is not 200 once listening"
}

stop_server() {  # SIGTERM: exit 0 within a bounded time
  kill -TERM "$server_pid"
  local rc=0
  timeout 15 tail -s 0.1 --pid="$server_pid" -f /dev/null || fail "server still running 15 s after SIGTERM"
  wait "$server_pid" || rc=$?
  server_pid=""
  [ "$rc" = 0 ] || fail "server exited $rc after SIGTERM: $(tail -3 "$tmp/serve.err")"
  [ "$(wc -l <"$tmp/serve.out")" = 1 ] || fail "stdout must be exactly the listening line: $(cat "$tmp/serve.out")"
}
