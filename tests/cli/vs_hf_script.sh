#!/usr/bin/env bash
# scripts/bench/vs_hf.sh against stub llmbench and hf_baseline.py (no GPU): which steps --quick and the full
# mode run, with which arguments, and that every column reaches one table (the stubs copy the fabricated
# results of tests/data/vs_hf, the table is printed by the real vs_hf_table.py).
set -u
data="$2/vs_hf"
root=$(cd "$2/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/log" 2>/dev/null; exit 1; }
command -v python3 >/dev/null || fail "python3 is needed"
real_python=$(command -v python3)

mkdir -p "$tmp/stubs"
# python3: hf_baseline.py is logged and writes a fabricated file (long context or 512 tokens); anything else
# (vs_hf_table.py) runs for real.
cat >"$tmp/stubs/python3" <<SH
#!/bin/bash
if [ "\$1" = scripts/bench/hf_baseline.py ]; then
  echo "hf \${*:2}" >>"$tmp/log"
  out=""; prev=""
  for a in "\$@"; do [ "\$prev" = --output ] && out=\$a; prev=\$a; done
  case "\$out" in *long*) cp "$data/hf_qwen_long.json" "\$out" ;; *) cp "$data/hf_qwen.json" "\$out" ;; esac
  exit 0
fi
exec "$real_python" "\$@"
SH
cat >"$tmp/stubs/llmbench" <<SH
#!/bin/bash
echo "llmbench \$*" >>"$tmp/log"
out=""; prev=""
for a in "\$@"; do [ "\$prev" = --output ] && out=\$a; prev=\$a; done
case "\$out" in
  "") ;;
  *llmbench-sdpa_*long*) cp "$data/llmbench-sdpa_qwen_long.json" "\$out" ;;
  *long*) cp "$data/llmbench_qwen_long.json" "\$out" ;;
  *llama*) cp "$data/llmbench_llama.json" "\$out" ;;  # (a column holds one point per shape: no Qwen copies)
  *llmbench-sdpa_*) cp "$data/llmbench_qwen.json" "\$out" ;;
  *llmbench-plain_*) cp "$data/llmbench-plain_qwen.json" "\$out" ;;
  *) cp "$data/llmbench_qwen.json" "\$out" ;;
esac
SH
chmod +x "$tmp/stubs/"*

run() {  # run ARGS...: vs_hf.sh with the stubs into $tmp/out
  : >"$tmp/log"
  rm -rf "$tmp/out"
  (cd "$root" && PATH="$tmp/stubs:$PATH" LLMBENCH="$tmp/stubs/llmbench" OUT_DIR="$tmp/out" \
    bash scripts/bench/vs_hf.sh "$@") >"$tmp/stdout" 2>&1 || fail "vs_hf.sh $* exited $?: $(cat "$tmp/stdout")"
}
logged() { grep -qF -- "$1" "$tmp/log" || fail "not run: $1"; }
count() { [ "$(grep -c -- "$1" "$tmp/log")" = "$2" ] || fail "expected $2 lines matching '$1'"; }

run --quick
# HF: compiled only for Qwen2.5-7B batch 1, every other 512-token batch in one eager+sdpa process.
logged "hf --workload qwen2.5-7b:1 --modes eager,sdpa,compiled --prompt-len 512 --max-new-tokens 64 --runs 3"
logged "hf --workload qwen2.5-7b:4,16 --workload llama-3-8b:1,4 --modes eager,sdpa --prompt-len 512"
logged "hf --workload qwen2.5-7b:1 --modes eager,sdpa --prompt-len 8192 --max-new-tokens 256 --runs 2"
count "^hf " 3
logged "llmbench run --model qwen2.5-7b --batch 1,4,16 --attn eager --prompt-len 512 --max-new-tokens 64"
logged "llmbench run --model llama-3-8b --batch 1,4 --attn eager --prompt-len 512"
logged "llmbench run --model qwen2.5-7b --batch 1 --attn eager --prompt-len 8192 --max-new-tokens 256"
logged "llmbench run --model qwen2.5-7b --batch 1 --attn sdpa --prompt-len 8192 --max-new-tokens 256"
logged "llmbench run --model qwen2.5-7b --batch 1,4,16 --attn sdpa --prompt-len 512 --max-new-tokens 64"
logged "llmbench run --model llama-3-8b --batch 1,4 --attn sdpa --prompt-len 512"
count "no-fused" 0  # --quick leaves the plain column out
grep -qF "| workload | HF eager | HF sdpa | HF compiled | llmbench plain | llmbench | llmbench sdpa |" "$tmp/out/table.md" \
  || fail "table.md lacks the llmbench sdpa column: $(cat "$tmp/out/table.md")"
grep -qF "| Qwen2.5-7B, batch 1, prompt 8192 + 256 new, TTFT ms |" "$tmp/out/table.md" || fail "no long-context row"
# The 512-token rows get the llmbench sdpa column and its ratio to HF sdpa too (not "—").
grep -E "^\| Qwen2.5-7B, batch 1, prompt 512 \+ 64 new, TTFT ms \|" "$tmp/out/table.md" | grep -qE "× \|$" \
  || fail "the 512-token TTFT row has no sdpa vs HF sdpa ratio: $(cat "$tmp/out/table.md")"

run
logged "hf --workload qwen2.5-7b:1,4,16 --workload llama-3-8b:1,4 --modes eager,sdpa,compiled --prompt-len 512 --max-new-tokens 64 --runs 10"
count "^hf " 2
count "no-fused" 3  # plain column: both 512-token workloads and the long context
logged "llmbench run --model qwen2.5-7b --batch 1 --attn eager --prompt-len 8192 --max-new-tokens 256 --dtype bfloat16 --device cuda --warmup 1 --runs 5"

VS_HF_LONG="" VS_HF_WORKLOADS="qwen2.5-7b:1,4" VS_HF_COMPILED="" run --quick
logged "hf --workload qwen2.5-7b:1,4 --modes eager,sdpa --prompt-len 512"
count "^hf " 1
count "8192" 0
echo "vs_hf_script: all checks passed"
