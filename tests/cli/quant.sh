#!/usr/bin/env bash
# End-to-end: `llmbench run --weights` on the tiny model (CPU): an int8 point with quality figures next to
# the unquantized one, the report shows them, and fp8 on the CPU is one clear line.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(--model tiny --device cpu --dtype float32 --batch 2 --prompt-len 12 --max-new-tokens 5 --warmup 0 --runs 3 --trim 1)

"$bin" run "${small[@]}" --weights bf16,int8 --output "$tmp/r.json" >"$tmp/table.txt" 2>"$tmp/err.txt" \
  || fail "run exited non-zero: $(cat "$tmp/err.txt")"
grep -q 'top1 vs ref' "$tmp/table.txt" || fail "table lacks the quality column: $(cat "$tmp/table.txt")"
python3 - "$tmp/r.json" <<'PY' || fail "results JSON"
import json, sys
d = json.load(open(sys.argv[1]))
plain, q = d["points"]
assert plain["params"]["weights"] == "bf16" and plain["quality"] is None, plain["quality"]
assert q["params"]["weights"] == "int8" and q["status"] == "ok"
qu = q["quality"]
assert qu["reference"] == "float32" and qu["positions"] == 10, qu
assert 0.5 <= qu["top1_agreement"] <= 1, qu
assert 0 < qu["logits_rel_err"] < 0.05 and 0 <= qu["kl_divergence_mean"] < 0.05, qu
assert q["memory"]["weights_bytes"] < 0.6 * plain["memory"]["weights_bytes"]
assert q["roofline"]["decode_bytes_per_step"] < plain["roofline"]["decode_bytes_per_step"]
assert q["verification"]["ok"] is True
PY
"$bin" report "$tmp/r.json" --format md >"$tmp/report.md" 2>"$tmp/err.txt" || fail "report: $(cat "$tmp/err.txt")"
grep -q 'n=5 int8 | ok' "$tmp/report.md" || fail "report lacks the int8 point"
grep -q 'int8 vs float32 weights: top-1' "$tmp/report.md" || fail "report lacks the quality figures"

# fp8 needs a CUDA GPU: one line, non-zero exit, no results file.
if "$bin" run "${small[@]}" --weights fp8 --output "$tmp/f.json" >/dev/null 2>"$tmp/err.txt"; then fail "fp8 on cpu succeeded"; fi
[ "$(wc -l <"$tmp/err.txt")" -eq 1 ] || fail "fp8 error is not one line: $(cat "$tmp/err.txt")"
grep -q 'fp8 weights need a CUDA GPU with FP8 (sm_89+) and libtorch >= 2.1' "$tmp/err.txt" || fail "fp8 error: $(cat "$tmp/err.txt")"
[ ! -e "$tmp/f.json" ] || fail "fp8 failure wrote a results file"
if "$bin" run "${small[@]}" --weights int4 >/dev/null 2>"$tmp/err.txt"; then fail "int4 accepted"; fi
grep -q "unknown value 'int4'" "$tmp/err.txt" || fail "int4 error: $(cat "$tmp/err.txt")"
# --kv-dtype fp8 likewise, on run and generate; an unknown KV dtype names the option.
if "$bin" run "${small[@]}" --kv-dtype fp8 --output "$tmp/k.json" >/dev/null 2>"$tmp/err.txt"; then fail "fp8 KV on cpu succeeded"; fi
[ "$(wc -l <"$tmp/err.txt")" -eq 1 ] || fail "fp8 KV error is not one line: $(cat "$tmp/err.txt")"
grep -q -- '--kv-dtype fp8 needs a CUDA GPU with FP8 (sm_89+)' "$tmp/err.txt" || fail "fp8 KV error: $(cat "$tmp/err.txt")"
[ ! -e "$tmp/k.json" ] || fail "fp8 KV failure wrote a results file"
if "$bin" generate --model tiny --device cpu --prompt-ids "1,2,3" --max-new-tokens 2 --kv-dtype fp8 >/dev/null 2>"$tmp/err.txt"; then
  fail "generate with fp8 KV on cpu succeeded"
fi
grep -q -- '--kv-dtype fp8 needs a CUDA GPU' "$tmp/err.txt" || fail "generate fp8 KV error: $(cat "$tmp/err.txt")"
if "$bin" run "${small[@]}" --kv-dtype int8 >/dev/null 2>"$tmp/err.txt"; then fail "kv int8 accepted"; fi
grep -q "kv-dtype" "$tmp/err.txt" || fail "kv int8 error: $(cat "$tmp/err.txt")"
"$bin" run "${small[@]}" --kv-dtype bf16 --output "$tmp/b.json" >/dev/null 2>"$tmp/err.txt" || fail "kv bf16: $(cat "$tmp/err.txt")"
python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['points'][0]; assert p['params']['kv_dtype']=='bf16' and p['quality'] is None, p['params']" "$tmp/b.json" \
  || fail "kv_dtype not in params"
echo ok
