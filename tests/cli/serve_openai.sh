#!/usr/bin/env bash
# `llmbench serve` on the tiny model against the official OpenAI Node client (tests/serve/openai_client.mjs):
# models.list, completions and chat completions, streamed and not, stop strings, typed errors; greedy text
# equal to `llmbench generate`; 32 simultaneous streams, each equal to generate's text for its prompt, with
# batched and with chunked prefill.
set -u
bin=$1
here=$(cd "$(dirname "$0")/../serve" && pwd)
tmp=$(mktemp -d)
source "$here/server_lib.sh"
"$here/../../scripts/fetch-serve-client.sh" || fail "cannot install the openai npm client"

start_server --max-batch 32 --max-queue 64
client() { node "$here/openai_client.mjs" "$base" tiny "$@"; }

prompt="Once upon a time"
got=$(client api "$prompt" 12) || fail "openai client checks: $got"
ref=$("$bin" --log-level off generate --model tiny --device cpu --prompt "$prompt" --max-new-tokens 12 --ignore-eos --json) \
  || fail "generate"
ref_chat=$("$bin" --log-level off generate --model tiny --device cpu --prompt "$prompt" --chat --max-new-tokens 12 --ignore-eos --json) \
  || fail "generate --chat"
python3 - "$got" "$ref" "$ref_chat" <<'PY' || fail "served text differs from llmbench generate"
import json, sys
got, ref, chat = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
assert got["completion"] == ref["text"][0], (got["completion"], ref["text"][0])
assert got["chat"] == chat["text"][0], (got["chat"], chat["text"][0])
PY

# 32 streams at once (equal-length prompts: generate runs them as one batch).
python3 - >"$tmp/prompts.json" <<'PY'
import json, random
r = random.Random(13)
print(json.dumps([[r.randrange(3, 480) for _ in range(7)] for _ in range(32)]))
PY
texts=$(client streams "$tmp/prompts.json" 16) || fail "32 streams: $texts"
ids=$(python3 -c 'import json,sys; print(";".join(",".join(map(str,p)) for p in json.load(open(sys.argv[1]))))' "$tmp/prompts.json")
ref=$("$bin" --log-level off generate --model tiny --device cpu --prompt-ids "$ids" --max-new-tokens 16 --ignore-eos --json) \
  || fail "generate batch"
python3 - "$texts" "$ref" <<'PY' || fail "32 concurrent streams differ from llmbench generate"
import json, sys
got, ref = json.loads(sys.argv[1]), json.loads(sys.argv[2])["text"]
assert len(got) == 32
bad = [i for i in range(32) if got[i] != ref[i]]
assert not bad, [(i, got[i], ref[i]) for i in bad[:3]]
PY
stop_server

# The same 32 streams with chunked prefill: 40 tokens per step, so prompts are split across steps while
# other streams decode; the texts must not change.
start_server --max-batch 32 --max-queue 64 --chunked-prefill --max-step-tokens 40
texts=$(client streams "$tmp/prompts.json" 16) || fail "32 streams (chunked prefill): $texts"
python3 - "$texts" "$ref" <<'PY' || fail "32 concurrent streams with chunked prefill differ from llmbench generate"
import json, sys
got, ref = json.loads(sys.argv[1]), json.loads(sys.argv[2])["text"]
assert len(got) == 32
bad = [i for i in range(32) if got[i] != ref[i]]
assert not bad, [(i, got[i], ref[i]) for i in bad[:3]]
PY
chunks=$(curl -s "$base/metrics" | awk '$1 == "llmbench_prefill_chunks_total" {print $2}')
[ "${chunks:-0}" -gt 32 ] || fail "chunked prefill fed ${chunks:-no} chunks for 32 prompts split across steps"
stop_server
echo "serve_openai: ok"
