#!/usr/bin/env bash
# End-to-end: `llmbench run` and `compare` on the tiny model (CPU), results files, errors, interruption.
set -u
bin=$1
data=$2
root=$(cd "$data/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/signal_lib.sh"
small=(--model tiny --device cpu --prompt-len 16 --max-new-tokens 6 --warmup 1 --runs 5 --trim 1)

# A sweep writes one valid point per combination, with the keys tools rely on.
"$bin" run "${small[@]}" --batch 1,2 --temperature 0,0.7 --output "$tmp/r.json" >"$tmp/table.txt" 2>"$tmp/err.txt" \
  || fail "run exited non-zero: $(cat "$tmp/err.txt")"
grep -q 'TTFT' "$tmp/table.txt" || fail "table lacks TTFT"
python3 - "$tmp/r.json" <<'PY' || fail "results JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == 1 and d["interrupted"] is False
assert len(d["points"]) == 4, len(d["points"])
for p in d["points"]:
    assert p["status"] == "ok" and p["weights"] == "random"
    assert len(p["runs"]) == 5
    for r in p["runs"]:
        assert len(r["itl_ms"]) == 5 and r["ttft_ms"] <= r["e2e_ms"]
    for m in ("ttft_ms", "prefill_ms", "tpot_ms", "e2e_ms", "output_tok_s", "decode_tok_s"):
        s = p["summary"][m]
        for k in ("mean", "std", "min", "max", "p50", "p90", "p95", "p99", "trimmed_median", "ci95", "cv"):
            assert k in s, (m, k)
        assert s["min"] <= s["trimmed_median"] <= s["max"]
    for k in ("peak_allocated_bytes", "peak_reserved_bytes", "weights_bytes", "kv_cache_bytes", "peak_rss_bytes"):
        assert k in p["memory"], k
    assert p["cold"]["load_ms"] > 0 and "roofline" in p and "stages" in p
assert {(p["params"]["batch"], p["params"]["temperature"]) for p in d["points"]} == {(1, 0), (1, 0.7), (2, 0), (2, 0.7)}
for p in d["points"]:
    ids = p["outputs"]["first_run_ids"]
    assert len(ids) == p["params"]["batch"] and all(len(row) == 6 for row in ids), ids
    if p["params"]["temperature"] == 0:
        v = p["verification"]
        assert p["outputs"]["consistent"] is True and v["ok"] is True, p
        assert v["tokens"] == 6 * p["params"]["batch"] and v["tolerance"] == 0.1, v  # bfloat16
    else:
        assert p["verification"] is None and p["outputs"]["consistent"] is None
PY
grep -q 'verified' "$tmp/table.txt" || fail "table lacks the verified column"

# The runs below test what does not depend on the device ceilings (the sweep above and compare measure
# them and check MBU): --no-roofline spares each ~3 s of ceiling measurement.
# --no-verify: no verification block, the table says off.
"$bin" run "${small[@]}" --batch 1 --no-roofline --no-verify --output "$tmp/nv.json" >"$tmp/nv.txt" 2>/dev/null || fail "--no-verify"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][0]; assert p["verification"] is None' "$tmp/nv.json" \
  || fail "--no-verify still verified"
grep -q ' off ' "$tmp/nv.txt" || fail "--no-verify: table does not say off"

# Console formats.
"$bin" run "${small[@]}" --batch 1 --no-roofline --format csv 2>/dev/null | head -1 | grep -q ',' || fail "--format csv"
"$bin" run "${small[@]}" --batch 1 --no-roofline --format json 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)' \
  || fail "--format json is not JSON"

# A text prompt is tokenized by the tiny tokenizer and repeated to the length.
"$bin" run "${small[@]}" --batch 1 --no-roofline --prompt "The quick brown fox" --output "$tmp/t.json" >/dev/null 2>&1 || fail "--prompt"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][0]; assert p["prompt_source"]=="text-repeated", p["prompt_source"]' "$tmp/t.json" \
  || fail "prompt_source"
# A 7B preset has no tokenizer without a checkpoint: --prompt is refused in seconds, before the ceilings are
# measured or 15 GB of random weights are drawn.
start=$(date +%s)
"$bin" run --model qwen2.5-7b --prompt hello --batch 1 --prompt-len 16 --max-new-tokens 4 -o "$tmp/q.json" \
  >/dev/null 2>"$tmp/err.txt" && fail "run --prompt on a preset without a tokenizer passed"
grep -q "has no tokenizer (none found with its weights): drop --prompt" "$tmp/err.txt" || fail "--prompt on qwen: $(cat "$tmp/err.txt")"
[ $(( $(date +%s) - start )) -le 20 ] || fail "--prompt on qwen refused only after $(( $(date +%s) - start )) s"
[ ! -e "$tmp/q.json" ] || fail "--prompt on qwen left a results file"
# results.command is the command line, quoted where a shell needs it.
want="llmbench run ${small[*]} --batch 1 --no-roofline --prompt 'The quick brown fox' --output $tmp/t.json"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["command"]; assert c == sys.argv[2], c' "$tmp/t.json" "$want" \
  || fail "results.command"

# Bad input: one line, exit 2, no output file.
check_usage() {
  local what=$1; shift
  rm -f "$tmp/bad.json"
  err=$("$bin" "$@" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc (want 2): $err"
  [ "$(printf '%s\n' "$err" | grep -c 'llmbench: error:')" -eq 1 ] || fail "$what: $err"
  [ ! -e "$tmp/bad.json" ] || fail "$what left an output file"
}
check_usage "batch 0" run "${small[@]}" --batch 0 --output "$tmp/bad.json"
check_usage "runs <= 2 trim" run "${small[@]}" --runs 4 --trim 2 --output "$tmp/bad.json"
check_usage "bad list" run "${small[@]}" --batch 1,x --output "$tmp/bad.json"
check_usage "unknown model" run --model no-such-model-xyz --device cpu --output "$tmp/bad.json"
check_usage "prompt too long" run "${small[@]}" --prompt-len 5000 --output "$tmp/bad.json"
check_usage "unwritable output" run "${small[@]}" --output /nonexistent-dir/x.json
check_usage "unknown dtype" run "${small[@]}" --dtype int3 --output "$tmp/bad.json"
check_usage "--chat without a text prompt" run "${small[@]}" --chat --output "$tmp/bad.json"
grep -q -- "--chat needs a text prompt (--prompt or --prompt-file)" <<<"$err" || fail "--chat without a text prompt: $err"
printf 'defaults: {device: cpu, warmup: 0, runs: 3, trim: 0, batch: 1, prompt_len: 8, max_new_tokens: 2}\nmodels:\n  - {model: tiny, label: a, chat: true}\n' >"$tmp/chat.yaml"
check_usage "compare: chat without a prompt" compare "$tmp/chat.yaml" --no-roofline --output "$tmp/bad.json"
grep -q "chat.yaml:3:5: models\[0\]: --chat needs a text prompt" <<<"$err" || fail "compare chat without a prompt: $err"
# A chat-wrapped prompt cut to --prompt-len loses its assistant header: one warning per length.
"$bin" run --model tiny --device cpu --max-new-tokens 2 --warmup 0 --runs 1 --trim 0 --batch 1,2 --prompt-len 4 --chat --chat-format chatml --prompt "hello there, how are you" \
  --no-roofline >/dev/null 2>"$tmp/err.txt" || fail "cut chat prompt: $(cat "$tmp/err.txt")"
[ "$(grep -c 'the chat-wrapped prompt is longer than --prompt-len 4 and is cut' "$tmp/err.txt")" -eq 1 ] \
  || fail "cut chat prompt: not one warning: $(cat "$tmp/err.txt")"
if [ "$(python3 -c 'import json,sys; print(json.load(sys.stdin)["torch_version"].split(".")[0])' < <("$bin" info --json))" = 1 ]; then
  # libtorch 1.x has no float16 matmul on the CPU: the sweep is refused before its float32 points run.
  check_usage "float16 second" run "${small[@]}" --dtype float32,float16 --output "$tmp/bad.json"
fi

# Impossible size: refused by the estimate before allocating, exit 1, no file.
rm -f "$tmp/bad.json"
err=$("$bin" run "${small[@]}" --batch 50000000 --output "$tmp/bad.json" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "impossible size: exit $rc"
grep -q 'out of memory: .*needs ~' <<<"$err" || fail "impossible size message: $err"
[ ! -e "$tmp/bad.json" ] || fail "impossible size left a file"
# ... in a sweep too: every point is checked before the model loads, and the first that cannot fit is named.
err=$("$bin" run "${small[@]}" --batch 1,50000000 --output "$tmp/bad.json" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "impossible size in a sweep: exit $rc"
grep -q 'out of memory: tiny at batch 50000000 x 22 positions (point 2 of 2: .*) needs ~' <<<"$err" || fail "impossible size in a sweep: $err"
[ "$(grep -c . <<<"$err")" -eq 1 ] || fail "impossible size in a sweep: more than one line: $err"
[ ! -e "$tmp/bad.json" ] || fail "impossible size in a sweep left a file"

# A point that fails after its timed runs (a NaN reference in verification, a NaN quality measurement) keeps
# no metric values: runs, summary and stages are empty, as for a failed verification.
python3 "$root/tests/cli/nan_checkpoint.py" "$data/models/llama_bf16" "$tmp/nan" || fail "making the NaN checkpoint"
nan=(--model "$tmp/nan" --device cpu --no-roofline -p 8 -n 3 --runs 2 --warmup 0 --trim 0)
"$bin" run "${nan[@]}" --batch 1 --temperature 0,0.7 -o "$tmp/nan1.json" >/dev/null 2>&1
"$bin" run "${nan[@]}" --batch 1 --temperature 0.7 --weights bf16,int8 -o "$tmp/nan2.json" >/dev/null 2>&1
python3 - "$tmp/nan1.json" "$tmp/nan2.json" <<'PY' || fail "a failed point kept metric values"
import json, sys
for f in sys.argv[1:]:
    failed = [p for p in json.load(open(f))["points"] if p["status"] == "failed"]
    assert len(failed) == 1, f
    p = failed[0]
    assert p["runs"] == [] and p["summary"] == {} and not any(p["stages"].values()), (f, p["summary"], p["stages"])
PY

# A sweep whose every point fails (here by a NaN reference, which leaves no verification): the file is still
# written with each point's status and reason, and the exit status is 1 (a single point's failure is the error).
"$bin" run "${nan[@]}" --batch 1,2 -o "$tmp/nan3.json" >/dev/null 2>"$tmp/err.txt"; rc=$?
[ $rc -eq 1 ] || fail "every point failed: exit $rc (want 1): $(cat "$tmp/err.txt")"
python3 - "$tmp/nan3.json" <<'PY' || fail "every point failed: no results file with the failed points"
import json, sys
ps = json.load(open(sys.argv[1]))["points"]
assert [p["status"] for p in ps] == ["failed", "failed"] and all("NaN" in p["error"] for p in ps), ps
PY

# SIGINT mid-run keeps the finished runs in a valid file and exits 130 (--max-minutes 0: a million runs
# would be refused by the duration estimate).
"$bin" run --model tiny --device cpu --batch 1 --prompt-len 8 --max-new-tokens 4 --warmup 0 --runs 1000000 --trim 0 \
  --max-minutes 0 \
  --no-roofline --output "$tmp/int.json" >"$tmp/int_out.txt" 2>/dev/null &
pid=$!
wait_for_handler $pid 2 3  # load + a few timed runs
kill -INT $pid
wait $pid; rc=$?
[ $rc -eq 130 ] || fail "SIGINT exit $rc (want 130)"
python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["interrupted"] is True
p=d["points"][0]
assert p["status"]=="interrupted" and len(p["runs"])>0, p["status"]
# Its roofline shape facts are filled as for an ok point (they were all zeros).
assert p["roofline"]["decode_bytes_per_step"] > 0 and p["roofline"]["prefill_flops"] > 0, p["roofline"]
' "$tmp/int.json" || fail "interrupted file"
# Its console row shows the finished runs' figures (TTFT, TPOT, e2e with two decimals), not dashes.
grep 'interrupted after' "$tmp/int_out.txt" | grep -Eq '([0-9]+\.[0-9]{2} +.*){3}' \
  || fail "the interrupted point's row has no figures: $(cat "$tmp/int_out.txt")"
# The readers take what the writer wrote: report shows the interrupted point, gate does not judge it.
"$bin" report "$tmp/int.json" --format md >"$tmp/int.md" 2>"$tmp/err.txt" || fail "report of an interrupted file: $(cat "$tmp/err.txt")"
grep -q 'interrupted' "$tmp/int.md" || fail "report does not show the interrupted point"
"$bin" gate --baseline "$tmp/int.json" --current "$tmp/int.json" >"$tmp/gate.txt" 2>"$tmp/err.txt" \
  || fail "gate of an interrupted file against itself: exit $?: $(cat "$tmp/err.txt")"
grep -q 'not gated, the baseline point interrupted' "$tmp/gate.txt" || fail "gate does not say the point was not judged: $(cat "$tmp/gate.txt")"

# SIGTERM (what CI runners and `timeout` send) does the same and exits 143; the old file is replaced whole.
echo 'previous content' >"$tmp/term.json"
"$bin" run --model tiny --device cpu --batch 1 --prompt-len 8 --max-new-tokens 4 --warmup 0 --runs 1000000 --trim 0 \
  --max-minutes 0 \
  --no-roofline --output "$tmp/term.json" >/dev/null 2>&1 &
pid=$!
wait_for_handler $pid 15 3
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 143 ] || fail "SIGTERM exit $rc (want 143)"
python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
assert d["interrupted"] is True
p=d["points"][0]
assert p["status"]=="interrupted" and len(p["runs"])>0, p["status"]
' "$tmp/term.json" || fail "file after SIGTERM"
[ -z "$(ls "$tmp" | grep '\.tmp\.')" ] || fail "a temporary file was left behind"

# compare: the CI config end to end, and its output passes the gate against itself.
"$bin" compare "$root/configs/tiny-ci.yaml" --output "$tmp/cmp.json" >"$tmp/cmp.txt" 2>"$tmp/err.txt" \
  || fail "compare: $(cat "$tmp/err.txt")"
grep -q 'tiny-bf16' "$tmp/cmp.txt" || fail "compare table lacks the second model"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["points"])==8, len(d["points"])' "$tmp/cmp.json" \
  || fail "compare points"
"$bin" gate --baseline "$tmp/cmp.json" --current "$tmp/cmp.json" >/dev/null || fail "gate of a file against itself"
# The ceilings are measured once and serve every model on the device: MBU for the second model's points too.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert all(p["roofline"]["mbu"] is not None for p in d["points"]), [p["roofline"] for p in d["points"]]' \
  "$tmp/cmp.json" || fail "compare: a model without MBU"

# compare checks every model before the first runs: a later entry that cannot run is refused at once.
cat >"$tmp/late.yaml" <<'EOF'
defaults: {device: cpu, warmup: 0, runs: 3, trim: 0}
matrix: {batch: 1, prompt_len: 8, max_new_tokens: 4}
models: [{model: tiny, label: fine, runs: 200}, {model: tiny, label: too-long, prompt_len: 99999}]
EOF
check_usage "compare: a later entry beyond the model's positions" compare "$tmp/late.yaml" --no-roofline --output "$tmp/bad.json"
grep -q "late.yaml:3:49: models\[1\] (too-long): context of .* max_position_embeddings" <<<"$err" || fail "compare late entry: $err"
# ... as is a tp differing from the first entry's, and a prompt_file that cannot be read: each names its entry.
printf 'defaults: {device: cpu, warmup: 0, runs: 3, trim: 0, batch: 1, prompt_len: 8, max_new_tokens: 2}\nmodels:\n  - {model: tiny, label: a}\n  - {model: tiny, label: b, tp: 2}\n' >"$tmp/tpmix.yaml"
check_usage "compare: tp differing between entries" compare "$tmp/tpmix.yaml" --no-roofline --output "$tmp/bad.json"
grep -q "tpmix.yaml:4:5: models\[1\] (b): tp 2, but the first model entry (a) has tp 1" <<<"$err" || fail "compare tp mix: $err"
printf 'defaults: {device: cpu, warmup: 0, runs: 3, trim: 0, batch: 1, prompt_len: 8, max_new_tokens: 2}\nmodels:\n  - {model: tiny, label: a}\n  - {model: tiny, label: b, prompt_file: absent.txt}\n' >"$tmp/pfabs.yaml"
check_usage "compare: an absent prompt_file" compare "$tmp/pfabs.yaml" --no-roofline --output "$tmp/bad.json"
grep -q "pfabs.yaml:4:5: models\[1\] (b): prompt_file: .*absent.txt" <<<"$err" || fail "compare absent prompt_file: $err"

# compare's ratios: each point against the baseline's point agreeing on the most parameters, weights included
# (the baseline's own int8 rows are 1.00x, not divided by its bf16 rows).
mkdir -p "$tmp/cw"
cat >"$tmp/cw/w.yaml" <<'EOF'
defaults: {device: cpu, warmup: 0, runs: 3, trim: 0}
matrix: {batch: 1, prompt_len: 8, max_new_tokens: 4, weights: [bf16, int8]}
models: [{model: tiny, label: a}, {model: tiny, label: b}]
baseline: a
EOF
"$bin" compare "$tmp/cw/w.yaml" --no-roofline --format json >"$tmp/cw/out.json" 2>"$tmp/err.txt" || fail "compare weights: $(cat "$tmp/err.txt")"
python3 - "$tmp/cw/out.json" <<'PY' || fail "compare: ratios against the wrong baseline point"
import json, sys
rows = json.load(open(sys.argv[1]))
assert [(r["model"], r["weights"]) for r in rows] == [("a", "bf16"), ("a", "int8"), ("b", "bf16"), ("b", "int8")], rows
for r in rows[:2]:
    assert r["ttft_ms_vs_baseline"] == 1.0 and r["tpot_ms_vs_baseline"] == 1.0, r
PY

# compare: a model entry's prompt_file (relative to the YAML) is the prompt, as --prompt-file is for run.
mkdir -p "$tmp/pf"
printf 'The quick brown fox jumps over the lazy dog. ' >"$tmp/pf/p.txt"
printf 'defaults: {device: cpu, warmup: 0, runs: 3, trim: 0, batch: 1, prompt_len: 8, max_new_tokens: 2}\nmodels:\n  - {model: tiny, label: from-file, prompt_file: p.txt}\n' >"$tmp/pf/c.yaml"
"$bin" compare "$tmp/pf/c.yaml" --no-roofline --output "$tmp/pf/r.json" >/dev/null 2>"$tmp/err.txt" || fail "compare with prompt_file: $(cat "$tmp/err.txt")"
"$bin" run --model tiny --device cpu --batch 1 --prompt-len 8 --max-new-tokens 2 --warmup 0 --runs 3 --trim 0 \
  --no-roofline --prompt-file "$tmp/pf/p.txt" --output "$tmp/pf/run.json" >/dev/null 2>&1 || fail "run --prompt-file"
python3 - "$tmp/pf/r.json" "$tmp/pf/run.json" <<'PY' || fail "compare's prompt_file is not the prompt"
import json, sys
c, r = (json.load(open(f))["points"][0] for f in sys.argv[1:])
assert c["prompt_source"] == "text-cut", c["prompt_source"]
assert c["outputs"]["first_run_ids"] == r["outputs"]["first_run_ids"], (c["outputs"], r["outputs"])
PY
echo "run: all checks passed"
