#!/usr/bin/env bash
# scripts/gpu-sanitize.sh on the CPU: a stand-in compute-sanitizer (first on PATH) runs the gtest binary it is
# given and prints the summary line the real tool prints, with as many errors as FAKE_ERRORS says. The script
# must pass each tool its flags and PYTORCH_NO_CUDA_MEMORY_CACHING=1, count the tests, call a run clean only
# when the sanitizer found nothing and some test passed, report a run that ran out of time, and refuse bad use.
# The binary is test_base (torch-free, fast) instead of test_gpu, whose tests skip without CUDA.
set -u
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(dirname "$bin")
gtest=$build/tests/test_base
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out.txt" 2>/dev/null; exit 1; }
[ -x "$gtest" ] || fail "no $gtest"

mkdir -p "$tmp/bin"
cat > "$tmp/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
[ "$1" = --version ] && { echo "Compute Sanitizer stand-in Version 0.0"; exit 0; }
echo "args: $* cache=${PYTORCH_NO_CUDA_MEMORY_CACHING:-unset}" >> "$FAKE_LOG"
[ -n "${FAKE_SLEEP:-}" ] && sleep "$FAKE_SLEEP"
tool=$2
shift 2
while [[ "$1" == --* ]]; do shift 2; done
"$@"
rc=$?
n=${FAKE_ERRORS:-0}
if [ -n "${FAKE_KERNEL:-}" ]; then  # one report naming that kernel, in the real tool's words
  n=1
  if [ "$tool" = racecheck ]; then
    echo "========= Error: Race reported between Read access at $FAKE_KERNEL+0xb00"
    echo "=========     and Write access at $FAKE_KERNEL+0x2820 [512 hazards]"
  else
    echo "========= Invalid __global__ read of size 4 bytes"
    echo "=========     at $FAKE_KERNEL+0x1a0 in /src/kernel.cu:12"
  fi
fi
if [ "$tool" = racecheck ]; then
  echo "========= RACECHECK SUMMARY: $n hazards displayed ($n errors, 0 warnings)"
else
  echo "========= ERROR SUMMARY: $n errors"
fi
[ "$n" != 0 ] && exit 99
exit $rc
EOF
chmod +x "$tmp/bin/compute-sanitizer"
export PATH="$tmp/bin:$PATH" FAKE_LOG="$tmp/calls.txt" BINARY="$gtest"
run() { OUT_DIR="$tmp/o" timeout 120 bash "$root/scripts/gpu-sanitize.sh" "$build" > "$tmp/out.txt" 2>&1; echo $?; }

# Clean: three tools, each given its flags, the allocator's cache off, the tests counted.
rm -f "$FAKE_LOG"
rc=$(FILTER='Gate.*' run)
[ "$rc" = 0 ] || fail "clean run exited $rc"
grep -q "gpu-sanitize.sh: clean" "$tmp/out.txt" || fail "clean run not called clean"
n_gate=$("$gtest" --gtest_filter='Gate.*' | grep -c '^\[       OK \]')
[ "$n_gate" -gt 0 ] || fail "no Gate tests in test_base"
for tool in memcheck racecheck synccheck; do
  line=$(grep -E "^$tool " "$tmp/o/summary.txt") || fail "no $tool row"
  read -r _ trc _ passed failed skipped _ <<< "$line"
  [ "$trc" = 0 ] && [ "$passed" = "$n_gate" ] && [ "$failed" = 0 ] && [ "$skipped" = 0 ] ||
    fail "$tool row: '$line' (want rc 0, $n_gate passed)"
  grep -q -- "--tool $tool --error-exitcode 99" "$FAKE_LOG" || fail "$tool: flags not passed"
done
grep -q -- "--tool racecheck .*--racecheck-report analysis" "$FAKE_LOG" || fail "racecheck without its analysis report"
grep -q -- "--tool memcheck .*--racecheck-report" "$FAKE_LOG" && fail "memcheck given racecheck's flag"
grep -q -- "--tool synccheck .*--num-cuda-barriers 1024" "$FAKE_LOG" || fail "synccheck without its larger barrier table"
grep -q -- "--tool memcheck .*--num-cuda-barriers" "$FAKE_LOG" && fail "memcheck given synccheck's flag"
[ "$(grep -c 'cache=1' "$FAKE_LOG")" = 3 ] || fail "PYTORCH_NO_CUDA_MEMORY_CACHING=1 not set for every tool"
grep -q -- "--gtest_filter=Gate.\*-FusedOps.CudaGraphReplayFollowsDeviceState:Gemv.ReplaysInACudaGraph:" "$FAKE_LOG" ||
  fail "FILTER not passed, or the graph-capturing tests not left out of it"
# A FILTER with its own negative patterns keeps them, and the graph tests are added to them.
: > "$FAKE_LOG"
rc=$(TOOLS=memcheck FILTER='Gate.*-Gate.NoSuchTest' run)
grep -q -- "--gtest_filter=Gate.\*-Gate.NoSuchTest:FusedOps.CudaGraphReplayFollowsDeviceState:" "$FAKE_LOG" ||
  fail "negative FILTER: $(grep -o -- '--gtest_filter=[^ ]*' "$FAKE_LOG")"

# Errors found: not clean, exit 1, the sanitizer's own summary in the table.
rc=$(FAKE_ERRORS=3 TOOLS=memcheck FILTER='Gate.*' run)
[ "$rc" = 1 ] || fail "3 errors: exit $rc, want 1"
grep -q "NOT clean" "$tmp/out.txt" || fail "3 errors called clean"
grep -q "ERROR SUMMARY: 3 errors" "$tmp/o/summary.txt" || fail "summary line not kept"

# racecheck's hazards inside a library's kernel (cuBLAS's nvjet_*) are listed, not held against the run; inside
# llmbench's kernels they are. memcheck's errors count in any kernel.
rc=$(FAKE_KERNEL=nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT TOOLS=racecheck FILTER='Gate.*' run)
[ "$rc" = 0 ] || fail "hazards in cuBLAS only: exit $rc, want 0"
grep -q "racecheck: report lines naming llmbench's kernels 0, library kernels 2 (nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT x2)" \
  "$tmp/o/summary.txt" || fail "library hazards not listed"
rc=$(FAKE_KERNEL='void llmbench::cuda::detail::(anonymous namespace)::mma_kernel<int>(Args)' TOOLS=racecheck FILTER='Gate.*' run)
[ "$rc" = 1 ] || fail "hazards in llmbench's kernel: exit $rc, want 1"
grep -q "naming llmbench's kernels 2, library kernels 0" "$tmp/o/summary.txt" || fail "llmbench hazards not counted"
rc=$(FAKE_KERNEL=nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT TOOLS=memcheck FILTER='Gate.*' run)
[ "$rc" = 1 ] || fail "memcheck error in cuBLAS: exit $rc, want 1"
rc=$(SANITIZER_ARGS="--kernel-name-exclude kns=nvjet" TOOLS=memcheck FILTER='Gate.*' run)
grep -q -- "--tool memcheck .*--kernel-name-exclude kns=nvjet .*test_base" "$FAKE_LOG" || fail "SANITIZER_ARGS not passed"

# No test ran (a filter that matches nothing): not clean.
rc=$(TOOLS=synccheck FILTER='NoSuchSuite.*' run)
[ "$rc" = 1 ] || fail "nothing ran: exit $rc, want 1"

# Out of time: reported as such, not clean.
rc=$(FAKE_SLEEP=5 LIMIT_S=1 TOOLS=memcheck FILTER='Gate.*' run)
[ "$rc" = 1 ] || fail "timed out: exit $rc, want 1"
grep -q "timed out after 1 s" "$tmp/o/summary.txt" || fail "time-out not reported"

# Bad use: exit 2 with one line.
for bad in "TOOLS=valgrind" "LIMIT_S=soon" "BINARY=$tmp/none"; do
  rc=$(env "$bad" bash -c "OUT_DIR='$tmp/o' bash '$root/scripts/gpu-sanitize.sh' '$build' > '$tmp/out.txt' 2>&1; echo \$?")
  [ "$rc" = 2 ] || fail "$bad: exit $rc, want 2"
  [ "$(wc -l < "$tmp/out.txt")" = 1 ] || fail "$bad: not one line"
done
rc=$(PATH=/usr/bin:/bin bash -c "OUT_DIR='$tmp/o' bash '$root/scripts/gpu-sanitize.sh' '$build' > '$tmp/out.txt' 2>&1; echo \$?")
if [ ! -x /usr/local/cuda/bin/compute-sanitizer ]; then
  [ "$rc" = 2 ] || fail "no compute-sanitizer: exit $rc, want 2"
  grep -q "compute-sanitizer not found" "$tmp/out.txt" || fail "no compute-sanitizer: message"
fi
echo "ok"
