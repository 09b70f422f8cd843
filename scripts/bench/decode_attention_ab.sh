#!/usr/bin/env bash
# GPU host: two settings of the decode attention side by side, in one invocation. By default the two
# kernels (LLMBENCH_DECODE_ATTENTION=split: three launches on CUDA cores; =mma: one launch on tensor
# cores, a cluster per row); AB_ENV / AB_VALUES name another switch of the decode step, e.g.
# AB_ENV=LLMBENCH_PDL AB_VALUES="0 1" (programmatic dependent launch off / on).
#   1. build-gpu/tests/bench_decode_attention: µs per call and KV-read GB/s (default shapes, then batch 64
#      × 1024 columns with 576 valid, the server's column bucket): both kernels by default, else the mma
#      kernel once per value;
#   2. `llmbench run` (prompt 512, 64 new tokens, verification on) of Qwen2.5-7B at batch 1, 4, 16 and 64
#      and Llama-3-8B at batch 1 and 4, once per value, in the order a, b, a, b so that drift hits both;
#      the table gives each value's best TPOT and TTFT.
# Usage: scripts/bench/decode_attention_ab.sh [build-dir]    (OUT_DIR default out/decode_attention_ab;
#        RUNS default 10; ROUNDS default 2; AB_WORKLOADS default "qwen2.5-7b:1,4,16,64 llama-3-8b:1,4";
#        AB_RUN_ARGS: more `llmbench run` options, e.g. "--weights int8"; SKIP_MICRO=1 skips step 1)
#   AB_BINARIES="old=PATH new=PATH": two llmbench binaries instead of two values of AB_ENV (a change with no
#        switch, e.g. a kernel rewrite against the build before it, carried to the GPU host); step 1 is skipped
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
out=${OUT_DIR:-out/decode_attention_ab}
runs=${RUNS:-10}
workloads=${AB_WORKLOADS:-"qwen2.5-7b:1,4,16,64 llama-3-8b:1,4"}
var=${AB_ENV:-LLMBENCH_DECODE_ATTENTION}
values=${AB_VALUES:-split mma}
bins=${AB_BINARIES:-}
if [ -n "$bins" ]; then
  var=binary values=""
  for kv in $bins; do
    [[ "$kv" == ?*=?* && -x "${kv#*=}" ]] || { echo "decode_attention_ab.sh: AB_BINARIES: '$kv' is not LABEL=executable" >&2; exit 2; }
    values="$values ${kv%%=*}"
  done
  values=${values# }
  [ "$(echo $values | wc -w)" = 2 ] || { echo "decode_attention_ab.sh: AB_BINARIES needs two LABEL=PATH" >&2; exit 2; }
fi
bin_of() {  # the llmbench binary that runs value $1
  if [ -z "$bins" ]; then echo "$build/llmbench"; return; fi
  for kv in $bins; do [ "${kv%%=*}" = "$1" ] && echo "${kv#*=}"; done
}
mkdir -p "$out"

echo "## bench_decode_attention"
if [ "${SKIP_MICRO:-0}" = 1 ] || [ -n "$bins" ]; then
  echo "skipped"
elif [ "$var" = LLMBENCH_DECODE_ATTENTION ]; then
  LLMBENCH_BENCH_KERNELS=split,mma "$build/tests/bench_decode_attention" 2>&1 | tee "$out/bench.txt"
  LLMBENCH_BENCH_KERNELS=split,mma LLMBENCH_BENCH_VALID=576 "$build/tests/bench_decode_attention" 64 1024 2>&1 |
    tee -a "$out/bench.txt"
else
  for v in $values; do
    echo "# $var=$v" | tee -a "$out/bench.txt"
    env "$var=$v" LLMBENCH_BENCH_KERNELS=mma "$build/tests/bench_decode_attention" 2>&1 | tee -a "$out/bench.txt"
    env "$var=$v" LLMBENCH_BENCH_KERNELS=mma LLMBENCH_BENCH_VALID=576 "$build/tests/bench_decode_attention" 64 1024 \
      2>&1 | tee -a "$out/bench.txt"
  done
fi

echo "## llmbench run, $var = ${values// / vs }"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for kernel in $values; do
    for w in $workloads; do
      model=${w%%:*} batches=${w#*:}
      f="$out/run_${kernel}_${model}_r$round.json"
      envs=(); [ -z "$bins" ] && envs=("$var=$kernel")
      if ! env "${envs[@]}" timeout 400 "$(bin_of "$kernel")" --log-level warn run --model "$model" \
        --device cuda --dtype bfloat16 --batch "$batches" --prompt-len 512 --max-new-tokens 64 --warmup 2 \
        --runs "$runs" ${AB_RUN_ARGS:-} --output "$f" >"${f%.json}.log" 2>&1; then
        echo "$kernel $model round $round failed: $(tail -1 "${f%.json}.log")"
      fi
    done
  done
done

python3 - "$out" "$var" $values <<'PY'
import glob, json, os, sys
out, var, va, vb = sys.argv[1:5]
best = {}  # (model, batch, kernel) -> (tpot, ttft, verified)
for f in sorted(glob.glob(os.path.join(out, "run_*.json"))):
    name = os.path.basename(f)  # run_<value>_<model>_r<round>.json; a value or model may contain "_"
    kernel = next((v for v in sorted((va, vb), key=len, reverse=True) if name.startswith(f"run_{v}_")), None)
    if kernel is None:
        continue
    for p in json.load(open(f))["points"]:
        if p.get("status") != "ok":
            continue
        s, prm = p["summary"], p["params"]
        key = (prm["model"], prm["batch"], kernel)
        tpot, ttft = s["tpot_ms"]["trimmed_median"], s["ttft_ms"]["trimmed_median"]
        ok = (p.get("verification") or {}).get("ok")
        old = best.get(key)
        if old is None or tpot < old[0]:
            best[key] = (tpot, ttft if old is None else min(ttft, old[1]), ok)
        else:
            best[key] = (old[0], min(ttft, old[1]), old[2] and ok)
print(f"{var}: {va} vs {vb}")
print(f"| model | batch | TPOT ms {va} | TPOT ms {vb} | change | TTFT ms {va} / {vb} | verified ({va} / {vb}) |")
print("|---|---|---|---|---|---|---|")
for (model, batch) in sorted({(m, b) for m, b, _ in best}, key=lambda x: (x[0], x[1])):
    a, b = best.get((model, batch, va)), best.get((model, batch, vb))
    if not a or not b:
        print(f"| {model} | {batch} | {a[0] if a else 'failed'} | {b[0] if b else 'failed'} | | | |")
        continue
    print(f"| {model} | {batch} | {a[0]:.3f} | {b[0]:.3f} | {100 * (b[0] - a[0]) / a[0]:+.1f} % | "
          f"{a[1]:.2f} / {b[1]:.2f} | {a[2]} / {b[2]} |")
PY
