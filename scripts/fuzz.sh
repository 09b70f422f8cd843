#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan, torch-free sources only) and runs each for a
# bounded time from the committed seeds (fuzz/corpus/). Exits 1 when a target finds a crash; the input
# that triggered it is left in <build>/artifacts/<target>/ (reproduce: <build>/fuzz_<target> FILE).
# Usage: scripts/fuzz.sh [seconds per target, default 30] [target…]   (build dir: $LLMBENCH_FUZZ_BUILD or build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
dir=${LLMBENCH_FUZZ_BUILD:-build-fuzz}
scripts/deps.sh
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S fuzz -B "$dir" -G Ninja >/dev/null
fi
cmake --build "$dir" -j"$(nproc)" >"$dir/build.log" || { tail -30 "$dir/build.log" >&2; echo "fuzz.sh: the build failed" >&2; exit 1; }

# target  seed dir  max input length
all=("safetensors safetensors 4096" "tokenizer tokenizer 20000" "compare_config yaml 4096" "results results 8192" "serve_request serve_request 4096"
     "load_sse load_sse 4096" "load_dataset load_dataset 4096" "chat_template chat_template 4096" "load_http load_http 8192")
wanted=("$@")
status=0
for entry in "${all[@]}"; do
  read -r target seeds max_len <<<"$entry"
  if [ ${#wanted[@]} -gt 0 ] && [[ " ${wanted[*]} " != *" $target "* ]]; then continue; fi
  mkdir -p "$dir/corpus/$target" "$dir/artifacts/$target"
  log=$dir/fuzz_$target.log
  # The first corpus dir collects new inputs; the committed seeds are only read.
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$dir/fuzz_$target" \
      -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$dir/artifacts/$target/" "$dir/corpus/$target" "fuzz/corpus/$seeds" >"$log" 2>&1; then
    result=ok
  else
    result="CRASH (see $log, input in $dir/artifacts/$target/)"
    status=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  printf 'fuzz %-15s %ss: %s executions, %s, corpus %s files: %s\n' "$target" "$seconds" "${execs:-?}" \
    "${cov:-cov: ?}" "$(ls "$dir/corpus/$target" | wc -l)" "$result"
done
exit $status
