#!/usr/bin/env bash
# End-to-end: `llmbench report` as a user runs it (tables, Markdown, escaping, errors, atomic writes).
# The charts themselves are checked in a real browser by report_browser.sh.
set -u
bin=$1
data=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sample=$data/results/sample-sweep.json
here=$(cd "$(dirname "$0")" && pwd)

# Tables only, with the notice, when the bundles are absent.
LLMBENCH_WEB_ASSETS=$tmp/no-such-dir "$bin" report "$sample" -o "$tmp/r.html" 2>"$tmp/err" \
  || fail "report exited non-zero: $(cat "$tmp/err")"
grep -q 'charts are missing' "$tmp/err" || fail "stderr does not say the charts are missing: $(cat "$tmp/err")"
grep -q 'id="charts-missing"' "$tmp/r.html" || fail "page lacks the charts-missing notice"
grep -q '<caption>Summary: ' "$tmp/r.html" || fail "page lacks the summary table"
grep -q 'vegaEmbed' "$tmp/r.html" && fail "page without bundles still calls vegaEmbed"
# The sample's command line holds <b>, & and quotes: they must arrive as text.
grep -qF "&#39;Tell me about &lt;b&gt;bold&lt;/b&gt; &amp; &quot;quotes&quot;&#39;" "$tmp/r.html" \
  || fail "command line not escaped"
grep -qF '<b>bold' "$tmp/r.html" && fail "raw <b> from the results file reached the page"

# --format md: the tables on stdout, with the file's trimmed medians (formatted as the report does).
md=$("$bin" report "$sample" --format md) || fail "--format md exited non-zero"
grep -q '<html' <<<"$md" && fail "--format md printed HTML"
expect=$(python3 - "$sample" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
s = p["summary"]
f = lambda v: "%.*f" % (0 if v >= 1000 else 1 if v >= 100 else 2 if v >= 10 else 3 if v >= 1 else 4, v)
print("| qwen2.5-0.5b b=1 p=128 n=16 | ok | %d | %s | %s | %s |" % (
    len(p["runs"]), f(s["ttft_ms"]["trimmed_median"]), f(s["tpot_ms"]["trimmed_median"]),
    f(s["e2e_ms"]["trimmed_median"])))
PY
)
grep -qF "$expect" <<<"$md" || fail "markdown summary lacks the row: $expect"
"$bin" report "$sample" --format md -o "$tmp/r.md" >"$tmp/out" || fail "--format md -o exited non-zero"
[ -s "$tmp/out" ] && fail "--format md -o also printed to stdout"
grep -qF "$expect" "$tmp/r.md" || fail "--format md -o file lacks the summary row"

# Usage errors: exit 2, one line.
err=$("$bin" report "$sample" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "html without -o should exit 2, got $rc"
[ "$(wc -l <<<"$err")" -eq 1 ] || fail "error should be one line: $err"
"$bin" report "$tmp/absent.json" -o "$tmp/x.html" 2>/dev/null; [ $? -eq 2 ] || fail "missing input should exit 2"
"$bin" report "$sample" -o "$tmp/x.html" --format pdf 2>/dev/null; [ $? -eq 2 ] || fail "bad --format should exit 2"

# Malformed input: one-line error naming the file, no output written, an existing output kept.
echo 'old report' >"$tmp/keep.html"
echo '{"schema_version": 1, "points": [' >"$tmp/bad.json"
err=$("$bin" report "$sample" "$tmp/bad.json" -o "$tmp/keep.html" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "malformed JSON should exit 1, got $rc"
[ "$(wc -l <<<"$err")" -eq 1 ] || fail "error should be one line: $err"
grep -q '^llmbench: error: .*bad.json' <<<"$err" || fail "error should name the file: $err"
[ "$(cat "$tmp/keep.html")" = 'old report' ] || fail "a failed report replaced the existing output"
"$bin" report "$tmp/bad.json" -o "$tmp/new.html" 2>/dev/null
[ -e "$tmp/new.html" ] && fail "a failed report left an output file"
ls "$tmp" | grep -q '\.tmp\.' && fail "a temporary file was left behind"

python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); d["points"][0]["runs"][2]["ttft_ms"] = "fast"
json.dump(d, open(sys.argv[2], "w"))' "$sample" "$tmp/typed.json"
err=$("$bin" report "$tmp/typed.json" -o "$tmp/t.html" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || fail "wrong type should exit 1, got $rc"
grep -qF 'points[0].runs[2].ttft_ms' <<<"$err" || fail "error should give the JSON path: $err"
[ -e "$tmp/t.html" ] && fail "a failed report left an output file"

# Two files side by side, with the gate's verdicts when the gate subcommand is there.
python3 "$here/../report/slow_down.py" "$sample" "$tmp/slow.json" 1 1.25
gate_args=()
if "$bin" gate --help >/dev/null 2>&1; then
  "$bin" gate --baseline "$sample" --current "$tmp/slow.json" --json >"$tmp/gate.json"
  [ $? -eq 1 ] || fail "gate should find the 25 % slow-down"
  gate_args=(--gate "$tmp/gate.json")
fi
LLMBENCH_WEB_ASSETS=$tmp/no-such-dir "$bin" report "$sample" "$tmp/slow.json" "${gate_args[@]}" -o "$tmp/both.html" \
  2>/dev/null || fail "report of two files exited non-zero"
grep -q '<caption>Side by side' "$tmp/both.html" || fail "no side-by-side table"
grep -qF '<td>qwen2.5-0.5b b=2 p=128 n=16</td><td>TTFT ms</td>' "$tmp/both.html" || fail "side-by-side lacks a row"
grep -qF '+25.00 %' "$tmp/both.html" || fail "side-by-side lacks the +25 % change"
if [ ${#gate_args[@]} -gt 0 ]; then
  grep -q 'Gate verdicts' "$tmp/both.html" || fail "no gate section"
  grep -q '<tr class="bad">.*regressed' "$tmp/both.html" || fail "gate regression row not shown"
  echo '{"passed": ' >"$tmp/badgate.json"
  "$bin" report "$sample" --gate "$tmp/badgate.json" -o "$tmp/g.html" 2>/dev/null; [ $? -eq 1 ] || fail "bad gate JSON should exit 1"
fi
# -o through a symbolic link replaces the link's target and keeps the link; -o to a FIFO (or a device:
# /dev/stdout, /dev/null) writes into it and leaves it what it was.
echo old >"$tmp/target.md"
ln -s target.md "$tmp/link.md"
"$bin" report "$sample" --format md -o "$tmp/link.md" || fail "report -o a symbolic link exited non-zero"
[ -L "$tmp/link.md" ] || fail "the symbolic link was replaced by a file"
grep -q '| TTFT' "$tmp/target.md" || fail "the link's target was not written: $(head -3 "$tmp/target.md")"
# A dangling link (its target not there yet) is followed too: the target is created, the link stays.
ln -s new/target.md "$tmp/dangling.md"
mkdir "$tmp/new"
"$bin" report "$sample" --format md -o "$tmp/dangling.md" || fail "report -o a dangling link exited non-zero"
[ -L "$tmp/dangling.md" ] && grep -q '| TTFT' "$tmp/new/target.md" || fail "a dangling link was not followed"
# The global options work after the subcommand too.
"$bin" report "$sample" --format md -o "$tmp/g.md" --log-level warn 2>"$tmp/err" || fail "--log-level after report: $(cat "$tmp/err")"
# Files with runs but no summary (tests/data/gate): the summary is computed from the runs, not shown as "–".
"$bin" report "$data/gate/baseline.json" --format md 2>/dev/null | grep -q '| tiny b=1 p=16 n=8 | ok | 10 | 20.04 |' \
  || fail "a file without summaries reports no figures"
mkfifo "$tmp/fifo"
timeout 20 cat "$tmp/fifo" >"$tmp/from_fifo" &
reader=$!
timeout 20 "$bin" report "$sample" --format md -o "$tmp/fifo" || fail "report -o a FIFO exited non-zero"
wait "$reader"
[ -p "$tmp/fifo" ] || fail "the FIFO was replaced by a file"
cmp -s "$tmp/from_fifo" "$tmp/target.md" || fail "the FIFO's reader did not get the tables"
# stdout closed before anything is written (`| head` that has quit): not death by SIGPIPE (141).
{ sleep 0.3; "$bin" report "$sample" --format md 2>/dev/null; } | true
rc=${PIPESTATUS[0]}
[ "$rc" -lt 128 ] || fail "report into a closed pipe exited $rc (killed by a signal)"
echo "report: all checks passed"
