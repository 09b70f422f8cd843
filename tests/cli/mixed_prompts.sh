#!/usr/bin/env bash
# scripts/bench/mixed_prompts.py: N JSON lines {"prompt", "output_len"} whose word counts are drawn from
# [MIN, MAX] (several distinct ones), the same file for the same seed, another for another seed, and a
# one-line error for bad arguments.
set -u
script="$2/../../scripts/bench/mixed_prompts.py"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || fail "python3 is needed"

python3 "$script" 60 3 9 7 3 >"$out/a.jsonl" || fail "exit code $?"
python3 "$script" 60 3 9 7 3 >"$out/b.jsonl" || fail "exit code $? (second run)"
python3 "$script" 60 3 9 7 4 >"$out/c.jsonl" || fail "exit code $? (seed 4)"
cmp -s "$out/a.jsonl" "$out/b.jsonl" || fail "the same seed gave two different files"
cmp -s "$out/a.jsonl" "$out/c.jsonl" && fail "seeds 3 and 4 gave the same file"
python3 - "$out/a.jsonl" <<'PY' || fail "content"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 60, f"{len(lines)} lines, expected 60"
counts = set()
for line in lines:
    d = json.loads(line)
    assert set(d) == {"prompt", "output_len"}, d
    assert d["output_len"] == 7, d
    n = len(d["prompt"].split())
    assert 3 <= n <= 9, f"{n} words outside [3, 9]"
    counts.add(n)
assert len(counts) >= 4, f"only {sorted(counts)} word counts in 60 prompts"
PY
for args in "0 3 9 7" "5 9 3 7" "5 3 9 0" "5 3"; do
  python3 "$script" $args >"$out/bad.out" 2>"$out/bad.err" && fail "accepted: $args"
  [ "$(wc -l <"$out/bad.err")" -eq 1 ] || fail "not a one-line error for '$args': $(cat "$out/bad.err")"
  [ -s "$out/bad.out" ] && fail "wrote prompts for bad arguments '$args'"
done
echo ok
