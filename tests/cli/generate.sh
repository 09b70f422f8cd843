#!/usr/bin/env bash
# End-to-end: `llmbench generate` on the tiny preset and on an HF fixture checkpoint (ids held to HF),
# plus error cases that must exit non-zero with one `llmbench: error:` line.
set -u
bin=$1
data=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$("$bin" --log-level warn generate --model tiny --device cpu --prompt-ids "1,5,9;7,3" --max-new-tokens 6 --ignore-eos --json) \
  || fail "generate on tiny exited non-zero"
python3 - "$out" <<'PY' || fail "tiny --json: $out"
import json, sys
d = json.loads(sys.argv[1])
assert d["weights"] == "random" and d["preset"] == "tiny", d
assert [len(t) for t in d["token_ids"]] == [6, 6], d["token_ids"]
assert all(0 <= i < 512 for t in d["token_ids"] for i in t)
assert d["kv_cache_bytes"] == 4 * 2 * 2 * 2 * 9 * 32 * 4, d["kv_cache_bytes"]  # L·2·B·Hkv·T·D·4 bytes
PY
txt=$("$bin" --log-level warn generate --model tiny --device cpu --prompt-ids "1,5,9" --max-new-tokens 3) || fail "text output"
grep -q 'weights: random' <<<"$txt" || fail "text output must say weights: random: $txt"

# Same seed, same sampled tokens.
a=$("$bin" --log-level off generate --device cpu --prompt-ids "4,5" --max-new-tokens 8 --ignore-eos --temperature 1 --seed 7 --json)
b=$("$bin" --log-level off generate --device cpu --prompt-ids "4,5" --max-new-tokens 8 --ignore-eos --temperature 1 --seed 7 --json)
[ "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["token_ids"])' "$a")" = \
  "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["token_ids"])' "$b")" ] || fail "seeded sampling not reproducible"

# A fixture checkpoint: greedy ids and dumped logits against HF's reference.json (unequal-length batch).
ref=$data/models/llama3_tied/reference.json
ids=$(python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["float32"][1]; print(";".join(",".join(map(str,p)) for p in b["prompts"]))' "$ref")
out=$("$bin" --log-level warn generate --model "$data/models/llama3_tied" --device cpu --prompt-ids "$ids" \
      --max-new-tokens 24 --ignore-eos --json --dump-logits "$tmp/logits.json") || fail "generate on fixture"
python3 - "$out" "$ref" "$tmp/logits.json" <<'PY' || fail "fixture output differs from HF"
import json, sys
d, ref, dump = json.loads(sys.argv[1]), json.load(open(sys.argv[2]))["float32"][1], json.load(open(sys.argv[3]))
assert d["weights"] == "checkpoint", d
assert d["token_ids"] == ref["greedy_ids"], (d["token_ids"], ref["greedy_ids"])
for ours, hf in zip(dump["last_logits"], ref["last_logits"]):
    assert len(ours) == len(hf)
    assert max(abs(a - b) for a, b in zip(ours, hf)) / max(abs(x) for x in hf) < 1e-4
PY

expect_error() {  # expected exit code, then the generate arguments
  local want=$1; shift
  err=$("$bin" --log-level off generate "$@" 2>&1 >/dev/null); rc=$?
  [ $rc -eq "$want" ] || fail "generate $* should exit $want, got $rc ($err)"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "generate $*: error should be one line: $err"
  grep -q '^llmbench: error: ' <<<"$err" || fail "generate $*: error prefix: $err"
}
expect_error 2 --device cpu --prompt-ids "1,2,x"
expect_error 2 --device cpu --prompt-ids "1,512"                        # outside tiny's 512-token vocabulary
expect_error 2 --device cpu --prompt-ids "1;"                           # empty prompt
expect_error 2 --device cpu --prompt-ids "1" --max-new-tokens 4096      # beyond max_position_embeddings
expect_error 2 --device cpu --prompt-ids "1" --model no-such-model
expect_error 2 --device cpu --prompt-ids "1" --model no-org/no-model
expect_error 2 --device cpu --prompt-ids "1" --dtype int8
expect_error 2 --device cpu --prompt-ids "1" --top-p 0
expect_error 2 --device cpu                                             # --prompt-ids is required
mkdir -p "$tmp/bad" && echo '{"architectures": ["GPT2LMHeadModel"]}' > "$tmp/bad/config.json"
expect_error 1 --device cpu --prompt-ids "1" --model "$tmp/bad"
expect_error 2 --device cpu --prompt-ids "1" --prompt "both"
expect_error 2 --device cpu --model qwen2.5-7b --prompt "no tokenizer without a checkpoint"
expect_error 2 --device cpu --prompt ""
expect_error 1 --device cpu --prompt-ids "1,2" --model qwen2.5-72b --dtype float32  # ~280 GiB: refused before loading
grep -q "out of memory: qwen2.5-72b at batch 1 x 34 positions needs" <<<"$err" || fail "generate memory refusal: $err"

# --prompt goes through the tiny model's tokenizer; the JSON carries the decoded text.
out=$("$bin" generate --model tiny --device cpu --prompt "Hello there" --max-new-tokens 5 --ignore-eos --json 2>/dev/null) \
  || { echo "FAIL: generate --prompt"; exit 1; }
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert len(d["token_ids"][0])==5 and isinstance(d["text"][0], str)' "$out" \
  || { echo "FAIL: generate --prompt JSON: $out"; exit 1; }
# --chat with a tokenizer without a chat format (tiny): the message's text alone, as `serve` renders it, and a
# warning that says so; with a format named, the prompt is wrapped (more prompt tokens).
kv() { "$bin" generate --model tiny --device cpu --prompt "Hello there" --max-new-tokens 1 --json "$@" 2>>"$tmp/warn.txt" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["kv_cache_bytes"])'; }
plain=$(kv) && bare=$(kv --chat) || fail "generate --chat on tiny"
grep -q "has no known chat format: --chat gives the message's text alone" "$tmp/warn.txt" || fail "no warning: $(cat "$tmp/warn.txt")"
chat=$(kv --chat --chat-format chatml) || fail "generate --chat --chat-format chatml"
: >"$tmp/warn.txt"
none=$(kv --chat --chat-format none) || fail "generate --chat --chat-format none"
[ "$none" = "$bare" ] && ! grep -q "chat format" "$tmp/warn.txt" || fail "--chat-format none: $none vs $bare KV bytes, $(cat "$tmp/warn.txt")"
expect_error 2 --device cpu --prompt "hi" --chat-format chatml   # --chat-format needs --chat
grep -q -- "--chat-format needs --chat" <<<"$err" || fail "--chat-format without --chat: $err"
expect_error 2 --device cpu --prompt-ids 1,2 --chat --max-new-tokens 2   # --chat has no text to wrap
grep -q -- "--chat needs a text prompt (--prompt or --prompt-file)" <<<"$err" || fail "--chat without a text prompt: $err"
expect_error 2 --device cpu --prompt-ids 1,2 --kv-dtype int8   # the same check and words as run's
grep -qF -- "--kv-dtype: unknown value 'int8' (expected one of: bf16, fp8)" <<<"$err" || fail "generate --kv-dtype int8: $err"
[ "$bare" -lt "$plain" ] || fail "--chat on tiny should drop the BOS ($bare vs $plain KV bytes)"
[ "$chat" -gt "$plain" ] || fail "--chat --chat-format chatml did not wrap the prompt ($chat vs $plain KV bytes)"
# A HF cache whose refs/main names a missing snapshot: an error naming both, not another snapshot silently.
hf=$tmp/hf/models--meta-llama--Meta-Llama-3-70B-Instruct
mkdir -p "$hf/snapshots/old" "$hf/refs" && echo '{}' >"$hf/snapshots/old/config.json" && printf 'new\n' >"$hf/refs/main"
err=$(HF_HUB_CACHE=$tmp/hf HF_HOME=$tmp/hf "$bin" --log-level off generate --model llama-3-70b --device cpu --dtype float32 \
  --prompt-ids 1,2 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] && grep -q "refs/main names snapshot 'new', but .*snapshots/new has no config.json" <<<"$err" \
  || fail "refs/main to a missing snapshot: rc $rc, $err"
# tie_word_embeddings true while the checkpoint also has lm_head.weight: that tensor is ignored, and a warning
# says so (a checkpoint whose own lm_head differs would otherwise give other logits without a word).
cp -r "$data/models/llama_bf16" "$tmp/tied" && python3 - "$tmp/tied/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["tie_word_embeddings"] = True; json.dump(c, open(sys.argv[1], "w"))
PY
"$bin" generate --model "$tmp/tied" --device cpu --prompt-ids 1,2 --max-new-tokens 1 >/dev/null 2>"$tmp/tied.txt" \
  || fail "generate on a tied config with lm_head.weight: $(cat "$tmp/tied.txt")"
grep -q "tie_word_embeddings true, so the checkpoint's lm_head.weight is ignored" "$tmp/tied.txt" \
  || fail "no warning for an ignored lm_head.weight: $(cat "$tmp/tied.txt")"
echo "generate: all checks passed"
