#!/usr/bin/env bash
# Tensor parallelism on the CPU (Gloo): `--tp 2` computes what `--tp 1` computes (greedy ids equal, last
# logits within 1e-5 in float32) for generate (tiny random weights; HF fixture checkpoints with a qkv bias
# and split across files, also held to HF's ids) and run; a rank killed mid-run ends the run with one
# error line in bounded time; a tp that does not divide the heads is refused before any rank starts.
set -u
bin=$1
data=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1

# generate: same ids, logits within 1e-5 (float32), tp 1 vs tp 2.
gen() {  # model prompt-ids tp out-prefix [extra flags]
  local model=$1 ids=$2 tp=$3 out=$4; shift 4
  timeout 120 "$bin" --log-level warn generate --model "$model" --device cpu --dtype float32 --prompt-ids "$ids" \
    --max-new-tokens 12 --ignore-eos --json --dump-logits "$out.logits.json" --tp "$tp" "$@" >"$out.json" \
    || fail "generate --model $model --tp $tp exited non-zero: $(cat "$out.json")"
}
same() {  # a b [reference.json]
  python3 - "$1" "$2" "${3:-}" <<'PY' || fail "tp 2 differs from tp 1: $1 vs $2"
import json, sys
a, b = json.load(open(sys.argv[1] + ".json")), json.load(open(sys.argv[2] + ".json"))
assert a["tp"] == 1 and b["tp"] == 2 and b["tp_backend"] == "gloo", (a.get("tp"), b.get("tp"), b.get("tp_backend"))
assert a["token_ids"] == b["token_ids"], (a["token_ids"], b["token_ids"])
la, lb = json.load(open(sys.argv[1] + ".logits.json"))["last_logits"], json.load(open(sys.argv[2] + ".logits.json"))["last_logits"]
gap = max(abs(x - y) for ra, rb in zip(la, lb) for x, y in zip(ra, rb))
assert gap < 1e-5, gap
if sys.argv[3]:
    ref = json.load(open(sys.argv[3]))["float32"][1]
    assert b["token_ids"] == [r[:12] for r in ref["greedy_ids"]], (b["token_ids"], ref["greedy_ids"])
PY
}
gen tiny "1,5,9,33;1,7" 1 "$tmp/tiny1"
gen tiny "1,5,9,33;1,7" 2 "$tmp/tiny2"
same "$tmp/tiny1" "$tmp/tiny2"
for m in qwen2_bias llama_sharded; do
  ref=$data/models/$m/reference.json
  ids=$(python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["float32"][1]; print(";".join(",".join(map(str,p)) for p in b["prompts"]))' "$ref")
  gen "$data/models/$m" "$ids" 1 "$tmp/${m}1"
  gen "$data/models/$m" "$ids" 2 "$tmp/${m}2"
  same "$tmp/${m}1" "$tmp/${m}2" "$ref"
done
# Sampling with one seed: the same tokens on every rank count.
gen tiny "4,5" 1 "$tmp/s1" --temperature 1 --seed 7
gen tiny "4,5" 2 "$tmp/s2" --temperature 1 --seed 7
same "$tmp/s1" "$tmp/s2"

# run: same greedy ids, verification ok, the tensor_parallel record; only rank 0 writes and prints.
runit() {  # tp out
  timeout 120 "$bin" --log-level warn run --model tiny --device cpu --dtype float32 -b 2 -p 16 -n 8 --warmup 1 --runs 3 \
    --trim 0 --no-roofline --tp "$1" -o "$2" >"$2.stdout" 2>&1 || fail "run --tp $1 exited non-zero: $(cat "$2.stdout")"
}
runit 1 "$tmp/r1.json"
runit 2 "$tmp/r2.json"
[ "$(grep -c 'tiny' "$tmp/r2.json.stdout")" -ge 1 ] || fail "run --tp 2 printed no table: $(cat "$tmp/r2.json.stdout")"
python3 - "$tmp/r1.json" "$tmp/r2.json" <<'PY' || fail "run --tp 2 results"
import json, sys
a, b = (json.load(open(p))["points"][0] for p in sys.argv[1:3])
assert a["status"] == b["status"] == "ok", (a["error"], b["error"])
assert a["tensor_parallel"] is None and a["params"]["tp"] == 1
assert b["params"]["tp"] == 2
assert a["outputs"]["first_run_ids"] == b["outputs"]["first_run_ids"]
assert b["verification"]["ok"], b["verification"]
t = b["tensor_parallel"]
assert t["size"] == 2 and t["backend"] == "gloo" and t["devices"] == ["cpu", "cpu"], t
assert len(t["peak_rss_bytes"]) == 2 and all(x > 0 for x in t["peak_rss_bytes"]), t
# Each rank holds the replicated embedding/norms plus half of every split matrix.
assert t["weights_bytes"][0] == t["weights_bytes"][1] < a["memory"]["weights_bytes"], (t, a["memory"])
assert t["allreduce_ms_per_step"] > 0 and "8 all-reduces of [2, 1, 128]" in t["allreduce_method"], t
assert "via gloo)" in t["allreduce_method"], t  # the path the reduces took
PY

# A rank that dies mid-run: every rank stops, one error line naming it, well within the timeout.
start=$(date +%s)
LLMBENCH_TEST_ABORT_RANK=1@40 timeout 60 "$bin" --log-level warn run --model tiny --device cpu --dtype float32 -b 1 -p 8 \
  -n 16 --warmup 1 --runs 3 --trim 0 --no-roofline --tp 2 -o "$tmp/killed.json" >"$tmp/killed.out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "killed rank: exit code $rc (124: hung until timeout): $(cat "$tmp/killed.out")"
[ "$elapsed" -lt 30 ] || fail "killed rank: took ${elapsed}s"
grep -q "llmbench: error: tensor-parallel rank 1 (pid [0-9]*) was killed by signal" "$tmp/killed.out" \
  || fail "killed rank: no clear error: $(cat "$tmp/killed.out")"
[ ! -e "$tmp/killed.json" ] || fail "killed rank: a results file was written"
sleep 0.5
if pgrep -f -- "--tp 2 -o $tmp/killed.json" >/dev/null; then fail "killed rank: a rank is still running"; fi

# A rank that stops (SIGSTOP: alive, so no launcher sees it) mid-run: rank 0's next collective times out after
# --dist-timeout, and the error says so, naming the rank and the timeout, not only Gloo's text.
timeout 60 "$bin" run --model tiny --device cpu --dtype float32 -b 1 -p 8 -n 64 --warmup 1 --runs 500 --trim 0 --no-roofline \
  --tp 2 --dist-timeout 2 -o "$tmp/stuck.json" >"$tmp/stuck.out" 2>&1 &
tpid=$!
for _ in $(seq 1 300); do grep -q "tensor-parallel rank 0 of 2" "$tmp/stuck.out" && break; sleep 0.1; done
sleep 0.5
r0=$(pgrep -P "$tpid") && r1=$(pgrep -P "$r0") || fail "stuck rank: no rank 1: $(cat "$tmp/stuck.out")"
kill -STOP "$r1"
rc=0; wait "$tpid" || rc=$?
[ "$rc" -eq 1 ] || { kill -9 "$r1" 2>/dev/null; fail "stuck rank: exit $rc (124: hung): $(cat "$tmp/stuck.out")"; }
grep -q "^llmbench: error: tensor-parallel rank 0 of 2: a collective timed out after --dist-timeout 2 s (another rank stopped or is stuck): .*Timed out" \
  "$tmp/stuck.out" || fail "stuck rank: no clear error: $(cat "$tmp/stuck.out")"
[ ! -e "$tmp/stuck.json" ] || fail "stuck rank: a results file was written"
for _ in $(seq 1 50); do kill -0 "$r1" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$r1" 2>/dev/null || { kill -9 "$r1"; fail "stuck rank 1 (pid $r1) outlived rank 0"; }

# A tp that does not divide the heads: refused before any rank starts (exit 2, one line with the reason).
out=$(timeout 30 "$bin" run --model tiny --device cpu --tp 4 --runs 3 --trim 0 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "--tp 4 on tiny: exit $rc: $out"
grep -q "does not divide the model's 2 key/value heads" <<<"$out" || fail "--tp 4 reason: $out"
out=$(timeout 30 "$bin" generate --model tiny --device cpu --prompt-ids 1,2 --tp 3 2>&1); rc=$?
[ "$rc" -eq 2 ] && grep -q "does not divide" <<<"$out" || fail "generate --tp 3: exit $rc: $out"
[ "$(grep -c . <<<"$out")" -eq 1 ] || fail "--tp 3: more than one line: $out"
# Bad input that the ranks find after they start (the prompt, the context): one line, exit 2, as without --tp.
for args in "generate --prompt-ids 1,2,999" "run -b 1 -p 5000 -n 4 --runs 1 --warmup 0 --trim 0 --no-roofline"; do
  out=$(timeout 60 "$bin" $args --model tiny --device cpu --tp 2 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "$args --tp 2: exit $rc (want 2): $out"
  [ "$(grep -c 'llmbench: error:' <<<"$out")" -eq 1 ] || fail "$args --tp 2: not one error line: $out"
done
# WORLD_SIZE=1 left in the environment (no RANK): a single process, as without it; WORLD_SIZE=2 without --tp
# (or --tp 2 with WORLD_SIZE=1) is refused, naming both.
for cmd in "run -b 1 -p 8 -n 2 --runs 1 --warmup 0 --trim 0 --no-roofline" "generate --prompt-ids 1,2 --max-new-tokens 2"; do
  out=$(WORLD_SIZE=1 timeout 60 "$bin" $cmd --model tiny --device cpu 2>&1 >/dev/null) || fail "WORLD_SIZE=1 $cmd: $out"
done
out=$(RANK=0 WORLD_SIZE=2 MASTER_PORT=1 timeout 30 "$bin" run --model tiny --device cpu --runs 1 --trim 0 2>&1); rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--tp 1 disagrees with WORLD_SIZE=2" <<<"$out" || fail "WORLD_SIZE=2 without --tp: exit $rc: $out"
out=$(WORLD_SIZE=1 timeout 30 "$bin" run --model tiny --device cpu --runs 1 --trim 0 --tp 2 2>&1); rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--tp 2 disagrees with WORLD_SIZE=1" <<<"$out" || fail "WORLD_SIZE=1 with --tp 2: exit $rc: $out"
echo "tp: ok"
