# Sourced by the load end-to-end tests: start tests/load/scripted_server.py instances that stop by themselves
# (--lifetime-s 600: longer than any test that starts one, on a slow box too) and on exit (trap). Needs $bin; sets $out (a temporary folder) and, per start, $url.
server="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/scripted_server.py"
out="$(mktemp -d)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

start_server() {  # start_server NAME ARGS...: sets $url
  local name="$1"; shift
  python3 "$server" --lifetime-s 600 "$@" >"$out/$name.url" &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$out/$name.url" 2>/dev/null && break; sleep 0.1; done
  url=$(sed 's/.*listening on //' "$out/$name.url")
  [ -n "$url" ] || fail "scripted server $name did not start"
}
