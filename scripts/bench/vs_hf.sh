#!/usr/bin/env bash
# GPU host: HF transformers (eager, sdpa, static cache + generate()'s own compile) and llmbench (default fast
# paths, "plain": --no-cuda-graph --no-fused, and --attn sdpa) on the same workloads in one invocation, then
# one Markdown table with every row and column.
# Rows: prompt 512 + 64 new tokens: Qwen2.5-7B batch 1, 4 and 16, Llama-3-8B batch 1 and 4; long context:
# Qwen2.5-7B batch 1, prompt 8192 + 256 new (HF eager and sdpa, llmbench eager and sdpa). bfloat16, random
# weights, eager attention for llmbench unless said. HF is timed as its users run it: plain model.generate()
# timed from outside (primary), cross-checked by per-token CUDA events; the table flags a column whose two
# timings disagree by > 10 % or whose compiled decode is not clearly faster than sdpa. Needs llmbench built
# (scripts/gpu-build.sh) and python3 with torch and transformers.
# Usage: scripts/bench/vs_hf.sh [--quick] [--diagnose | --diagnose-only]
#   --quick          about 6–7 minutes on an H200: 3 timed runs, 1 warm-up, 1 events run (long context: 2 runs);
#                    HF compiled only for Qwen2.5-7B batch 1 (~2 min of compilation), no llmbench plain
#                    column. Default: 10 runs, 3 warm-ups, HF compiled on every 512-token workload.
#   --diagnose       first measure why the old HF figures were slow (hf_baseline.py --diagnose: wall-clock decode
#                    with/without the old StoppingCriteria and min_new_tokens, and the old compile retry), then
#                    the comparison; --diagnose-only: the diagnosis alone (no llmbench needed)
#   LLMBENCH=path    llmbench binary (default build-gpu/llmbench)
#   OUT_DIR=dir      JSON, logs, table.md, diagnose.md (default out/vs_hf)
#   VS_HF_WORKLOADS  "model:batches ..." at prompt 512 + 64 (default "qwen2.5-7b:1,4,16 llama-3-8b:1,4")
#   VS_HF_COMPILED   "model:batches ..." that also get HF compiled (default: all of VS_HF_WORKLOADS;
#                    --quick: "qwen2.5-7b:1"); "" for none
#   VS_HF_LONG       "model:batches:prompt:new ..." long-context rows (default "qwen2.5-7b:1:8192:256"; "" for none)
#   VS_HF_DIAGNOSE   workload of the diagnosis (default "qwen2.5-7b:1"); VS_HF_DIAGNOSE_VARIANTS: comma list of
#                    plain,recorder,min_new_tokens,old,retry (default all)
set -uo pipefail
cd "$(dirname "$0")/../.."
command_line="scripts/bench/vs_hf.sh${*:+ $*}"
runs=10 warmup=3 compile_warmup=3 trim=1 event_runs=10 long_runs=5 long_event_runs=3 diagnose=0 compare=1 quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) runs=3 warmup=1 compile_warmup=3 trim=0 event_runs=1 long_runs=2 long_event_runs=1 quick=1 ;;
    --diagnose) diagnose=1 ;;
    --diagnose-only) diagnose=1 compare=0 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "vs_hf.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
bin=${LLMBENCH:-build-gpu/llmbench}
out=${OUT_DIR:-out/vs_hf}
workloads=${VS_HF_WORKLOADS-"qwen2.5-7b:1,4,16 llama-3-8b:1,4"}
if [ "$quick" = 1 ]; then compiled=${VS_HF_COMPILED-"qwen2.5-7b:1"}; else compiled=${VS_HF_COMPILED-$workloads}; fi
long=${VS_HF_LONG-"qwen2.5-7b:1:8192:256"}
diag_workload=${VS_HF_DIAGNOSE:-"qwen2.5-7b:1"}
diag_variants=${VS_HF_DIAGNOSE_VARIANTS:-"plain,recorder,min_new_tokens,old,retry"}
if [ "$compare" = 1 ] && [ ! -x "$bin" ]; then
  echo "vs_hf.sh: no llmbench at $bin: build it with scripts/gpu-build.sh (or set LLMBENCH)" >&2; exit 2
fi
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.log "$out"/table.md "$out"/diagnose.md  # stale files must not reach the table
date_utc=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "vs_hf: $date_utc, $command_line, runs=$runs (long context $long_runs) warmup=$warmup (compiled HF $compile_warmup)" \
  "trim=$trim, into $out"
if command -v nvidia-smi >/dev/null; then nvidia-smi >"$out/nvidia-smi.txt" 2>&1; fi
[ "$compare" = 1 ] && "$bin" info >"$out/llmbench-info.txt" 2>&1

failed=()
step() {  # step NAME CMD...: runs CMD, output on the console and in $out/NAME.log
  local name="$1"; shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ]; then
    failed+=("$name (exit $rc)")
    echo "== $name FAILED (exit $rc); continuing"
  fi
}

hf_timing=(--prompt-len 512 --max-new-tokens 64 --runs "$runs" --trim "$trim" --warmup "$warmup"
           --compile-warmup "$compile_warmup" --event-runs "$event_runs")
if [ "$diagnose" = 1 ]; then
  step diagnose_hf env PYTHONUNBUFFERED=1 python3 scripts/bench/hf_baseline.py --diagnose \
    --workload "$diag_workload" --diagnose-variants "$diag_variants" "${hf_timing[@]}" \
    --output "$out/diagnose_hf.json"
  # The table hf_baseline.py prints last (after "Diagnosis"), for the docs.
  sed -n '/^Diagnosis/,$p' "$out/diagnose_hf.log" | grep -v '^\[hf\]' >"$out/diagnose.md"
fi

# The batches of `model` listed in a "model:batches ..." list (comma-separated; empty if none).
batches_of() {
  local m="$1" w out=""
  for w in $2; do [ "${w%%:*}" = "$m" ] && out="${out:+$out,}${w#*:}"; done
  echo "$out"
}
# The comma list $1 without the items of the comma list $2.
minus() {
  local b out=""
  for b in ${1//,/ }; do [[ ",$2," == *",$b,"* ]] || out="${out:+$out,}$b"; done
  echo "$out"
}

if [ "$compare" = 1 ]; then
  shape=(--prompt-len 512 --max-new-tokens 64 --dtype bfloat16 --device cuda)
  timing=(--warmup "$warmup" --runs "$runs" --trim "$trim")
  # HF in two processes (Python start-up and imports cost ~15 s each): the compiled batches with eager and
  # sdpa beside them (compiled_not_faster is checked against the sdpa point of the same process), and all
  # other batches with eager and sdpa only.
  with_args=() without_args=()
  for w in $workloads; do
    model=${w%%:*} batches=${w#*:}
    with=$(batches_of "$model" "$compiled")
    with=$(minus "$batches" "$(minus "$batches" "$with")")  # only batches of this workload
    without=$(minus "$batches" "$with")
    [ -n "$with" ] && with_args+=(--workload "$model:$with")
    [ -n "$without" ] && without_args+=(--workload "$model:$without")
  done
  [ ${#with_args[@]} != 0 ] && step hf_compiled env PYTHONUNBUFFERED=1 python3 scripts/bench/hf_baseline.py \
    "${with_args[@]}" --modes eager,sdpa,compiled "${hf_timing[@]}" --output "$out/hf_compiled.json"
  [ ${#without_args[@]} != 0 ] && step hf_eager_sdpa env PYTHONUNBUFFERED=1 python3 scripts/bench/hf_baseline.py \
    "${without_args[@]}" --modes eager,sdpa "${hf_timing[@]}" --output "$out/hf_eager_sdpa.json"
  for w in $workloads; do
    model=${w%%:*} batches=${w#*:}
    step "llmbench_$model" "$bin" run --model "$model" --batch "$batches" --attn eager "${shape[@]}" \
      "${timing[@]}" --output "$out/llmbench_$model.json"
    step "llmbench-sdpa_$model" "$bin" run --model "$model" --batch "$batches" --attn sdpa "${shape[@]}" \
      "${timing[@]}" --output "$out/llmbench-sdpa_$model.json"
    if [ "$quick" = 0 ]; then
      step "llmbench-plain_$model" "$bin" run --model "$model" --batch "$batches" --attn eager "${shape[@]}" \
        "${timing[@]}" --no-cuda-graph --no-fused --no-roofline --output "$out/llmbench-plain_$model.json"
    fi
  done
  # Long context: eager and sdpa on both sides (HF compiled would compile a static cache of that length).
  for w in $long; do
    IFS=: read -r model batches prompt new <<<"$w"
    tag="${model}_long$prompt"
    long_shape=(--prompt-len "$prompt" --max-new-tokens "$new" --dtype bfloat16 --device cuda)
    long_timing=(--warmup 1 --runs "$long_runs" --trim 0)
    step "hf_$tag" env PYTHONUNBUFFERED=1 python3 scripts/bench/hf_baseline.py --workload "$model:$batches" \
      --modes eager,sdpa --prompt-len "$prompt" --max-new-tokens "$new" --runs "$long_runs" --trim 0 --warmup 1 \
      --event-runs "$long_event_runs" --output "$out/hf_$tag.json"
    step "llmbench_$tag" "$bin" run --model "$model" --batch "$batches" --attn eager "${long_shape[@]}" \
      "${long_timing[@]}" --output "$out/llmbench_$tag.json"
    step "llmbench-sdpa_$tag" "$bin" run --model "$model" --batch "$batches" --attn sdpa "${long_shape[@]}" \
      "${long_timing[@]}" --output "$out/llmbench-sdpa_$tag.json"
    if [ "$quick" = 0 ]; then
      step "llmbench-plain_$tag" "$bin" run --model "$model" --batch "$batches" --attn eager "${long_shape[@]}" \
        "${long_timing[@]}" --no-cuda-graph --no-fused --no-roofline --output "$out/llmbench-plain_$tag.json"
    fi
  done

  shopt -s nullglob
  hf=("$out"/hf_*.json) lb=("$out"/llmbench_*.json) plain=("$out"/llmbench-plain_*.json)
  sdpa=("$out"/llmbench-sdpa_*.json)
  echo
  if [ $((${#hf[@]} + ${#lb[@]} + ${#plain[@]} + ${#sdpa[@]})) = 0 ]; then
    echo "vs_hf: no results were written; see the logs in $out" >&2
    exit 1
  fi
  python3 scripts/bench/vs_hf_table.py --hf "${hf[@]}" --llmbench "${lb[@]}" --llmbench-plain "${plain[@]}" \
    --llmbench-sdpa "${sdpa[@]}" --date "$date_utc" --command "$command_line" | tee "$out/table.md"
fi
echo
if [ "$diagnose" = 1 ] && [ -s "$out/diagnose.md" ]; then
  echo "vs_hf: diagnosis of the old HF figures (also in $out/diagnose.md):"
  cat "$out/diagnose.md"
  echo
fi
if [ "$compare" = 1 ]; then echo "vs_hf: JSON and logs in $out, table in $out/table.md"; else echo "vs_hf: JSON and logs in $out"; fi
if [ ${#failed[@]} != 0 ]; then
  printf 'vs_hf: failed step: %s\n' "${failed[@]}" >&2
  exit 1
fi
