#!/usr/bin/env bash
# `cmake --install` gives a tree that works anywhere: installed, then moved, then run from another directory,
# with nothing pointing back into the source or build tree (issue 12: the GPU binary needed .deps/prefix,
# the sentencepiece module was opened at its build path, the report read web/node_modules at run time).
set -u
bin=$1
data=$(cd "$2" && pwd)
build=$(cd "$(dirname "$bin")" && pwd)
root=$(cd "$data/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$tmp/installed" >"$tmp/install.log" 2>&1 || fail "cmake --install: $(cat "$tmp/install.log")"
[ -x "$tmp/installed/bin/llmbench" ] || fail "no bin/llmbench"
[ -f "$tmp/installed/lib/llmbench/libllmbench_spm.so" ] || fail "no lib/llmbench/libllmbench_spm.so"
mv "$tmp/installed" "$tmp/moved"
inst=$tmp/moved/bin/llmbench
mkdir -p "$tmp/elsewhere" && cd "$tmp/elsewhere" || fail "cd"

# Nothing in the dynamic section names the source or build tree; PCRE2 and utf8proc are linked in when the
# build found their archives.
dyn=$(readelf -d "$inst") || fail "readelf"
grep -E 'RPATH|RUNPATH' <<<"$dyn" | grep -qF "$root" && fail "rpath into the source tree: $(grep -E 'RPATH|RUNPATH' <<<"$dyn")"
grep -E 'RPATH|RUNPATH' <<<"$dyn" | grep -qF "$build" && fail "rpath into the build tree"
if grep -q '^LLMBENCH_PCRE2_ARCHIVE:FILEPATH=.*\.a$' "$build/CMakeCache.txt"; then
  grep -E 'NEEDED.*(pcre2|utf8proc)' <<<"$dyn" && fail "PCRE2/utf8proc are still shared libraries"
fi

out=$("$inst" info 2>&1) || fail "installed info: $out"
grep -q '^llmbench ' <<<"$out" || fail "info lacks the version line: $out"

"$inst" run --model tiny --device cpu --batch 1 --prompt-len 8 --max-new-tokens 4 --warmup 0 --runs 3 --trim 0 \
  --no-roofline --prompt "hello installed llmbench" --output r.json >run.log 2>&1 || fail "installed run: $(cat run.log)"
python3 -c 'import json,sys; d=json.load(open("r.json")); assert d["points"][0]["status"] == "ok", d' \
  || fail "installed run wrote no ok point"

# The sentencepiece module comes from the moved tree, not from the build tree's compiled-in path.
json=$(env -u LLMBENCH_SPM_MODULE "$inst" --log-level debug tokenize --tokenizer "$data/tokenizer/spm/tiny_spm.model" \
  --text "Hello world" --json 2>spm.log) || fail "installed sentencepiece tokenize: $(cat spm.log)"
grep -qF "sentencepiece module: $tmp/moved/" spm.log || fail "module not taken from the moved tree: $(cat spm.log)"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["count"] > 0, d' "$json" || fail "spm ids: $json"

# The report's charts: compiled in when web/node_modules had the bundles at build time; otherwise one warning.
env -u LLMBENCH_WEB_ASSETS "$inst" report r.json -o r.html 2>report.err || fail "installed report: $(cat report.err)"
if [ -f "$root/web/node_modules/vega-embed/build/vega-embed.min.js" ]; then
  grep -q '^report charts: embedded' <<<"$out" || fail "info does not say the charts are embedded: $out"
  grep -q 'vegaEmbed' r.html || fail "the report has no chart library"
  grep -q 'id="charts-missing"' r.html && fail "the report says the charts are missing"
  grep -q "charts are missing" report.err && fail "report warned: $(cat report.err)"
else
  echo "note: web/node_modules absent at build time, checking the charts-missing path"
  grep -q '^report charts: not embedded' <<<"$out" || fail "info should say the charts are not embedded: $out"
  [ "$(grep -c 'charts are missing' report.err)" -eq 1 ] || fail "want one warning: $(cat report.err)"
  grep -q 'id="charts-missing"' r.html || fail "the page lacks the notice"
fi
echo "install: all checks passed"
