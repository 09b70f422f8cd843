#!/usr/bin/env bash
# Every subcommand of `llmbench --help` and every long option of each subcommand's --help is documented
# somewhere in README.md or docs/*.md (the GPU-run logs under docs/gpu-runs/ do not count).
set -u
bin=$1
root=$(cd "$2/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
docs=("$root/README.md" "$root"/docs/*.md)

commands=$("$bin" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF { print $1 }')
[ "$(wc -w <<<"$commands")" -ge 8 ] || fail "llmbench --help lists too few subcommands: $commands"
missing=()
for c in $commands; do
  grep -qE "llmbench $c([^a-z-]|$)" "${docs[@]}" || missing+=("llmbench $c")
  help=$("$bin" "$c" --help) || fail "llmbench $c --help exited non-zero"
  # The first long name of each option line (aliases such as --prompt-len,--prompt-tokens: the first).
  options=$(grep -oE '^ +(-[a-zA-Z],)?--[a-z0-9][a-z0-9-]*' <<<"$help" | grep -oE -- '--[a-z0-9-]+' | sort -u)
  [ -n "$options" ] || fail "llmbench $c --help lists no options"
  for o in $options; do
    [ "$o" = --help ] && continue
    grep -qE -- "$o([^a-z0-9-]|$)" "${docs[@]}" || missing+=("llmbench $c $o")
  done
done
[ ${#missing[@]} -eq 0 ] || fail "not in README.md or docs/*.md: ${missing[*]}"
echo "ok: $(wc -w <<<"$commands") subcommands, every option documented"
