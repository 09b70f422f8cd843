#!/usr/bin/env bash
# Encode throughput (MB/s, one thread) of llmbench and, where python3 has `tokenizers`, of HF on the
# same machine and the same 1 MB text. Usage: scripts/bench/tokenizer_bench.sh [path/to/llmbench]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/llmbench}
corpus=tests/data/tokenizer/corpus.json
scripts/fetch-tokenizers.sh
for name in llama3 qwen3 llama2; do
  if [ -s ".cache/tokenizers/$name/tokenizer.json" ]; then
    echo -n "llmbench $name: "
    "$bin" tokenize --tokenizer ".cache/tokenizers/$name" --bench --corpus "$corpus"
  fi
done
echo -n "llmbench tiny: "
"$bin" tokenize --tokenizer tiny --bench --corpus "$corpus"
if python3 -c 'import tokenizers' 2>/dev/null; then
  out=$(mktemp -d)
  python3 scripts/reference/make_tokenizer_fixtures.py .cache/tokenizers "$corpus" "$out" | sed 's/^/HF tokenizers /'
  rm -rf "$out"
fi
