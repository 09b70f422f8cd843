#!/usr/bin/env bash
# End-to-end: `llmbench info` and the CLI's error conventions.
set -u
bin=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$bin" info) || fail "info exited non-zero"
grep -q '^llmbench ' <<<"$out" || fail "info lacks the version line"
grep -q '^libtorch:' <<<"$out" || fail "info lacks libtorch"

json=$("$bin" info --json) || fail "info --json exited non-zero"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["cpu"]["cores"]>0; assert "torch_version" in d' <<<"$json" \
  || fail "info --json is not the expected JSON"

"$bin" --version | grep -q '^[0-9]' || fail "--version"

err=$("$bin" info --no-such-flag 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "unknown flag should exit 2, got $rc"
[ "$(wc -l <<<"$err")" -eq 1 ] || fail "error should be one line: $err"
grep -q '^llmbench: error: ' <<<"$err" || fail "error prefix: $err"

err=$("$bin" info --device tpu 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "bad device should exit 2, got $rc"
grep -q '^llmbench: error: ' <<<"$err" || fail "error prefix: $err"

# --repetitions without --measure repeats nothing: refused, not silently ignored.
err=$("$bin" info --repetitions 5 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && grep -q -- "--repetitions requires --measure" <<<"$err" || fail "--repetitions without --measure: rc $rc, $err"

# A malformed CUDA device is named as malformed, not as "CUDA is not available".
for dev in cuda:x cuda: cuda:1a; do
  err=$("$bin" info --device "$dev" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] && grep -q "invalid device '$dev' (use auto, cpu, cuda or cuda:N)" <<<"$err" || fail "--device $dev: rc $rc, $err"
done

"$bin" 2>/dev/null; [ $? -eq 2 ] || fail "no subcommand should exit 2"
err=$("$bin" frobnicate 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$err" = "llmbench: error: unknown command 'frobnicate' (commands: info, generate, gate, tokenize, report, run, compare, load, serve, profile)" ] \
  || fail "an unknown command: rc $rc, $err"
echo "info: all checks passed"
