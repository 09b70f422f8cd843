#!/usr/bin/env bash
# `llmbench gate` exit codes and output on the synthetic files in tests/data/gate.
set -u
bin="$1"
data="$2/gate"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

expect() {  # expect CODE ARGS...: runs gate, checks the exit code, leaves stdout in $out/stdout
  local want="$1"; shift
  "$bin" gate "$@" >"$out/stdout" 2>"$out/stderr"
  local got=$?
  [ "$got" = "$want" ] || { cat "$out/stdout" "$out/stderr"; fail "gate $* exited $got, expected $want"; }
}

expect 0 --baseline "$data/baseline.json" --current "$data/baseline.json"
grep -q "## llmbench gate: PASS" "$out/stdout" || fail "no PASS heading"

expect 0 --baseline "$data/baseline.json" --current "$data/noise.json"

expect 1 --baseline "$data/baseline.json" --current "$data/regressed.json"
grep -q "## llmbench gate: FAIL" "$out/stdout" || fail "no FAIL heading"
grep "tiny b2 p16 n8 t0 eager float32 | e2e_ms |" "$out/stdout" | grep -q "regressed" || fail "no e2e row for batch 2"
grep -q "\*\*regressed\*\*" "$out/stdout" || fail "no regressed verdict"

expect 1 --baseline "$data/baseline.json" --current "$data/regressed.json" --json
grep -q '"passed": false' "$out/stdout" || fail "--json does not say passed: false"
grep -q '"exit_code": 1' "$out/stdout" || fail "--json has no exit_code 1"

expect 1 --baseline "$data/baseline.json" --current "$data/missing.json"
grep -q "missing" "$out/stdout" || fail "missing point not reported"
expect 0 --baseline "$data/baseline.json" --current "$data/missing.json" --allow-missing

# A config that only looks at TTFT with a 25 % threshold lets the +20 % through.
printf 'metrics:\n  ttft_ms: 25%%\n' >"$out/gate.yaml"
expect 0 --baseline "$data/baseline.json" --current "$data/regressed.json" --config "$out/gate.yaml"
printf 'metrics:\n  ttft: 25%%\n' >"$out/bad.yaml"
expect 2 --baseline "$data/baseline.json" --current "$data/regressed.json" --config "$out/bad.yaml"
grep -q "bad.yaml:2:3: metrics: unknown metric 'ttft' (did you mean 'ttft_ms'?)" "$out/stderr" || fail "bad config message"

expect 2 --baseline "$data/baseline.json" --current "$data/malformed.json"
grep -q "malformed.json: points\[0\].params.batch: missing" "$out/stderr" || fail "malformed message: $(cat "$out/stderr")"
expect 2 --baseline "$data/schema2.json" --current "$data/baseline.json"
grep -q "schema_version 2 is not supported" "$out/stderr" || fail "schema message"
expect 2 --baseline "$data/baseline.json" --current "$out/nonexistent.json"
expect 2 --baseline "$data/baseline.json"
echo "gate CLI: ok"
