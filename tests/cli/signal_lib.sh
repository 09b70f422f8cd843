# Sourced by the CLI tests that interrupt a background llmbench.
# Waits until process $1 catches signal number $2 (a background job of this script ignores SIGINT until llmbench
# installs its handler, so a signal sent before that is lost: on a loaded machine the run then went on for its
# million runs), then $3 more seconds (for some finished work to interrupt).
wait_for_handler() {
  local mask
  for _ in $(seq 600); do
    mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || break
    [ -z "$mask" ] && break
    (( (16#$mask >> ($2 - 1)) & 1 )) && break
    sleep 0.1
  done
  sleep "$3"
}

# Sends SIGINT to process $1 once file $2 has a line matching $3 (after its handler is installed), $4
# seconds later, waits for it and leaves its exit status in $code.
interrupt_after_line() {
  wait_for_handler "$1" 2 0
  for _ in $(seq 200); do grep -q "$3" "$2" && break; sleep 0.05; done
  sleep "$4"
  kill -INT "$1"
  wait "$1"
  code=$?
}

# Prints the pids of the `llmbench serve` processes still running whose working directory is $1. A test that
# runs its commands in its own temporary directory finds the servers it started, and none of another test's
# (pgrep's plain count failed under `ctest -j` whenever another test's server was up).
servers_started_in() {
  local p
  for p in $(pgrep -f "llmbench serve"); do
    [ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$1" ] && echo "$p"
  done
}
