#!/usr/bin/env bash
# scripts/test.sh and scripts/build.sh refuse arguments they do not know before doing anything (a mistyped
# --sanitize used to start the whole install, build and test run; build.sh took --help as its build
# directory and dropped cmake args on a configured one), and print their usage with --help.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect() {  # expect CODE NEEDLE SCRIPT ARGS...: exit CODE within seconds, output containing NEEDLE
  local want=$1 needle=$2; shift 2
  out=$(timeout 20 bash "$root/scripts/$@" 2>&1); local rc=$?
  [ "$rc" = "$want" ] || fail "$* exited $rc, want $want: $out"
  grep -qF -- "$needle" <<<"$out" || fail "$*: output lacks '$needle': $out"
}
expect 2 "unknown argument '--sanitise'" test.sh --sanitise
expect 2 "unknown argument '--tsna'" test.sh --tsna
expect 2 "one argument at most" test.sh --sanitize extra
expect 2 "one argument at most" test.sh --tsan --sanitize
expect 0 "Usage: scripts/test.sh [--sanitize | --tsan]" test.sh --help
expect 2 "the first argument is the build directory, got '--frob'" build.sh --frob
expect 0 "Usage: scripts/build.sh [build-dir]" build.sh --help
mkdir -p "$tmp/configured" && touch "$tmp/configured/build.ninja"
expect 2 "is configured already; cmake args (-DLLMBENCH_CUDA=OFF)" build.sh "$tmp/configured" -DLLMBENCH_CUDA=OFF
echo "script_args: ok"
