#!/usr/bin/env bash
# `llmbench tokenize`: JSON output, --no-special, --text-file, chat wrapping, the real Llama 3 file
# against its HF fixture, and the error conventions.
set -u
bin="$1"
data="$2/tokenizer"
cache="$(cd "$2/../.." && pwd)/.cache/tokenizers"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# tiny: BOS (id 1) is added by default, not with --no-special; decoded text round-trips.
json=$("$bin" tokenize --tokenizer tiny --text "Hello, world!" --json) || fail "tokenize --json exited non-zero"
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["ids"][0] == 1 and d["count"] == len(d["ids"]) > 1, d
assert d["decoded"] == "<|begin_of_text|>Hello, world!", d
' "$json" || fail "tiny --json: $json"
json=$("$bin" tokenize --tokenizer tiny --text "Hello, world!" --no-special --json) || fail "--no-special"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert 1 not in d["ids"] and d["decoded"] == "Hello, world!", d' "$json" \
  || fail "tiny --no-special: $json"

printf 'caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87\n' >"$out/text.txt"
json=$("$bin" tokenize --tokenizer tiny --text-file "$out/text.txt" --no-special --json) || fail "--text-file"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["decoded"] == "café 中文\n", d' "$json" || fail "--text-file: $json"

plain=$("$bin" tokenize --tokenizer tiny --text "ab") || fail "plain output"
[[ "$plain" =~ ^1( [0-9]+)+$ ]] || fail "plain output is not space-separated ids: $plain"

# The real Llama 3 tokenizer, when fetched: ids equal to HF's fixture, chat header tokens.
if [ -s "$cache/llama3/tokenizer.json" ]; then
  python3 - "$bin" "$cache/llama3" "$data/reference/llama3.json" <<'PY' || fail "llama3 ids differ from HF"
import json, subprocess, sys
bin, tok, ref = sys.argv[1:]
for case in json.load(open(ref))["cases"][:6]:
    if not case["text"]:
        continue
    out = subprocess.run([bin, "tokenize", "--tokenizer", tok, "--text", case["text"], "--json"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["ids"] == case["ids"], (case["text"], out)
PY
  # --chat renders what transformers' apply_chat_template rendered (saved in the fixture).
  python3 - "$bin" "$cache/llama3" "$data/reference/llama3.json" <<'PY' || fail "llama3 --chat differs from transformers"
import json, subprocess, sys
bin, tok, ref = sys.argv[1:]
tf = json.load(open(ref))["transformers"]
out = subprocess.run([bin, "tokenize", "--tokenizer", tok, "--text", tf["chat_messages"][0]["content"], "--chat", "--json"],
                     capture_output=True, text=True, check=True).stdout
d = json.loads(out)
assert d["decoded"] == tf["chat_prompt"], d
assert d["ids"][:2] == [128000, 128006], d  # <|begin_of_text|> <|start_header_id|> (added_tokens in the file)
PY
elif [ ! -f "$cache/UNAVAILABLE" ]; then
  fail "missing $cache/llama3: run scripts/fetch-tokenizers.sh"
fi

expect_exit() {  # expect_exit CODE ARGS...
  local want="$1"; shift
  "$bin" tokenize "$@" >"$out/stdout" 2>"$out/stderr"
  local got=$?
  [ "$got" = "$want" ] || fail "tokenize $* exited $got, expected $want: $(cat "$out/stderr")"
  [ "$want" = 0 ] || grep -q '^llmbench: error: ' "$out/stderr" || fail "no one-line error for $*"
}
expect_exit 2 --tokenizer tiny
expect_exit 2 --tokenizer tiny --text a --text-file "$out/text.txt"
expect_exit 1 --tokenizer /nonexistent/tokenizer --text a
printf '{"model": {"type": "BPE", "vocab": {' >"$out/truncated.json"
expect_exit 1 --tokenizer "$out/truncated.json" --text a
grep -q "malformed JSON" "$out/stderr" || fail "truncated json: $(cat "$out/stderr")"
printf 'ab\xffcd' >"$out/bad.txt"
expect_exit 2 --tokenizer tiny --text-file "$out/bad.txt"  # bad input, named by its flag, as run --prompt-file
grep -q -- "--text-file: .*bad.txt is not valid UTF-8 at byte offset 2" "$out/stderr" || fail "invalid UTF-8: $(cat "$out/stderr")"
expect_exit 2 --tokenizer tiny --text $'ab\xffcd'
grep -q -- "--text: not valid UTF-8 at byte offset 2" "$out/stderr" || fail "invalid UTF-8 --text: $(cat "$out/stderr")"
expect_exit 2 --tokenizer tiny --text-file "$out/missing.txt"
grep -q -- "--text-file: .*missing.txt: cannot open" "$out/stderr" || fail "missing --text-file: $(cat "$out/stderr")"
# --bench's own options: sizes it can make, a corpus of strings, no flag that it would ignore.
corpus="$(cd "$2/../.." && pwd)/tests/data/tokenizer/corpus.json"
for mb in -1 nan 0 4096; do
  expect_exit 2 --tokenizer tiny --bench --bench-mb "$mb" --corpus "$corpus"
  grep -q -- "--bench-mb must be in (0, 1024\] MiB" "$out/stderr" || fail "--bench-mb $mb: $(cat "$out/stderr")"
done
echo '["a", 2]' >"$out/numbers.json"
expect_exit 2 --tokenizer tiny --bench --corpus "$out/numbers.json"
grep -q "item 1 is number, not a string" "$out/stderr" || fail "corpus of numbers: $(cat "$out/stderr")"
: >"$out/empty.txt"
expect_exit 2 --tokenizer tiny --bench --text-file "$out/empty.txt"
expect_exit 2 --tokenizer tiny --bench --text a
expect_exit 2 --tokenizer tiny --text a --bench-mb 2
# A size that makes no text (it measured 0 bytes and exited 0), and flags --bench would ignore.
expect_exit 2 --tokenizer tiny --bench --bench-mb 1e-9 --corpus "$corpus"
grep -q -- "--bench-mb 1e-09 is less than one byte of text" "$out/stderr" || fail "--bench-mb 1e-9: $(cat "$out/stderr")"
for flag in --chat --no-special; do
  expect_exit 2 --tokenizer tiny --bench $flag --corpus "$corpus"
  grep -q -- "$flag does not apply to --bench" "$out/stderr" || fail "--bench $flag: $(cat "$out/stderr")"
done
expect_exit 0 --tokenizer tiny --bench --bench-mb 0.01 --repetitions 1 --corpus "$corpus"
grep -q "encode 10487 bytes" "$out/stdout" || fail "--bench-mb 0.01: $(cat "$out/stdout")"
# stdout is the result: a write that fails there fails the command (exit 1, one line).
"$bin" tokenize --tokenizer tiny --text hi >/dev/full 2>"$out/stderr" && fail "a write to /dev/full passed"
grep -q "llmbench: error: stdout: write failed" "$out/stderr" || fail "/dev/full: $(cat "$out/stderr")"
expect_exit 2 --tokenizer tiny --text a --chat
# --chat-format only names the format --chat wraps in; "none" is no template: the text alone, no special tokens.
expect_exit 2 --tokenizer tiny --text a --chat-format chatml
grep -q -- "--chat-format needs --chat" "$out/stderr" || fail "--chat-format without --chat: $(cat "$out/stderr")"
expect_exit 2 --tokenizer tiny --text a --chat --chat-format vicuna
expect_exit 0 --tokenizer tiny --text "Hello there" --chat --chat-format none
[ "$(cat "$out/stdout")" = "$("$bin" tokenize --tokenizer tiny --text "Hello there" --no-special)" ] \
  || fail "--chat-format none is not the bare text: $(cat "$out/stdout")"
# A format that starts with BOS, on a tokenizer without a bos_token: refused, not a prompt silently without BOS.
mkdir -p "$out/nobos" && cp "$(cd "$2/../.." && pwd)/assets/tiny/tokenizer.json" "$out/nobos/" && echo '{}' >"$out/nobos/tokenizer_config.json"
expect_exit 2 --tokenizer "$out/nobos" --text a --chat --chat-format llama3
grep -q "chat format llama3 starts with a BOS token, but tokenizer .*nobos/tokenizer.json has none" "$out/stderr" \
  || fail "llama3 without a BOS: $(cat "$out/stderr")"
expect_exit 0 --tokenizer "$out/nobos" --text a --chat --chat-format chatml
# An empty LLMBENCH_SPM_MODULE is unset: the module is found where it would be without it.
LLMBENCH_SPM_MODULE= expect_exit 0 --tokenizer "$data/spm/tiny_spm.model" --text hi
# A set one that does not exist is refused, naming it (not silently replaced by the module beside the binary),
# and only where the module is needed.
LLMBENCH_SPM_MODULE=/nonexistent/libspm.so expect_exit 2 --tokenizer "$data/spm/tiny_spm.model" --text hi
grep -q "^llmbench: error: LLMBENCH_SPM_MODULE=/nonexistent/libspm.so: no such file" "$out/stderr" \
  || fail "absent LLMBENCH_SPM_MODULE: $(cat "$out/stderr")"
LLMBENCH_SPM_MODULE=/nonexistent/libspm.so expect_exit 0 --tokenizer tiny --text hi
(cd "$out" && expect_exit 2 --tokenizer tiny --bench)  # the default corpus is relative to the repository root
grep -q "give --corpus FILE" "$out/stderr" || fail "--bench outside the repository: $(cat "$out/stderr")"
# A chat_template that is neither a string nor HF's list of {name, template} is named, in one line.
mkdir -p "$out/badtpl" && cp "$(cd "$2/../.." && pwd)/assets/tiny/tokenizer.json" "$out/badtpl/"
echo '{"bos_token": "<|begin_of_text|>", "chat_template": ["<|im_start|>"]}' >"$out/badtpl/tokenizer_config.json"
expect_exit 1 --tokenizer "$out/badtpl" --text a --chat
[ "$(wc -l <"$out/stderr")" = 1 ] && grep -q "badtpl/tokenizer_config.json: chat_template is neither a string nor a list" \
  "$out/stderr" || fail "chat_template of the wrong type: $(cat "$out/stderr")"
echo "tokenize: ok"
