#!/usr/bin/env bash
# Bad-input suite: every case runs the real binary on one broken input and asserts exactly one stderr line
# "llmbench: error: ..." naming the culprit, as the last line, with nothing else on stderr but [info] log
# lines (no warning repeating the error, no backtrace, no sanitizer report); an exit code in 1..127; no
# output file and no temporary left beside it, or (every other case) a pre-existing output file left byte
# for byte intact. The cases are independent and each is mostly the binary's start-up (libtorch), so they run
# LLMBENCH_TEST_JOBS at a time (default: the number of CPUs), each in its own folder.
# Usage: run.sh <path-to-llmbench> <tests/data dir>. The damaged inputs come from make_cases.py.
set -u
bin=$1
data=$2
root=$(cd "$data/../.." && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
in=$tmp/in
out=$tmp/out
mkdir -p "$out"
python3 "$here/make_cases.py" "$in" "$root" || { echo "FAIL: make_cases.py"; exit 1; }

cases=0
failed=()
models=$data/models

# One invocation, in the background (at most $par at a time), in its own folder $tmp/c/N: mode "absent": the
# output path does not exist before, "present": it holds a sentinel. A failure leaves its report in
# $tmp/c/N/FAIL, collected (in case order) by finish_cases.
par=${LLMBENCH_TEST_JOBS:-$(nproc)}
runs=0
mkdir -p "$tmp/c"
run_one() {
  runs=$((runs + 1))
  while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n; done
  local dir
  dir=$tmp/c/$(printf '%04d' "$runs")
  mkdir -p "$dir/out"
  run_case "$dir" "$@" &
}
run_case() {
  local dir=$1 name=$2 culprit=$3 mode=$4
  shift 4
  local out=$dir/out
  local o=$out/$name.out sentinel="previous results of $name, must survive"
  [ "$mode" = present ] && printf '%s\n' "$sentinel" >"$o"
  local args=("${@//@OUT@/$o}")
  if [[ $name == fsize_* ]]; then  # a 4 KiB file-size cap stands in for a full disk (SIGXFSZ ignored: EFBIG)
    (trap '' XFSZ; ulimit -f 4; exec timeout 120 "$bin" "${args[@]}") >"$dir/stdout" 2>"$dir/stderr" </dev/null
  else
    timeout 120 "$bin" "${args[@]}" >"$dir/stdout" 2>"$dir/stderr" </dev/null
  fi
  local rc=$? why=""
  local errors others
  errors=$(grep -c '^llmbench: error: ' "$dir/stderr")
  others=$(grep -v '^llmbench: error: ' "$dir/stderr" | grep -cv '^\[[0-9:.]*\] \[info\] ')
  if [ "$rc" -eq 124 ]; then why="timed out"
  elif [ "$rc" -eq 0 ] || [ "$rc" -ge 128 ]; then why="exit code $rc (want 1..127)"
  elif [ "$errors" -ne 1 ]; then why="$errors 'llmbench: error:' lines on stderr (want 1)"
  elif [ "$others" -ne 0 ]; then why="$others stderr lines that are neither the error nor [info]"
  elif ! tail -1 "$dir/stderr" | grep -q '^llmbench: error: '; then why="the error is not the last line"
  elif ! tail -1 "$dir/stderr" | grep -qF -- "$culprit"; then why="the message does not name '$culprit'"
  elif [ "$mode" = absent ] && [ -e "$o" ]; then why="an output file was created"
  elif [ "$mode" = present ] && [ "$(cat "$o")" != "$sentinel" ]; then why="the previous output file was changed"
  elif [ "$(ls -A "$out" | grep -v "^$name.out\$" | wc -l)" -ne 0 ]; then why="left files behind: $(ls -A "$out")"
  fi
  if [ -n "$why" ]; then
    { echo "FAIL $name ($mode): $why"; sed 's/^/    stderr: /' "$dir/stderr" | head -20; } >"$dir/FAIL"
    echo "$name" >"$dir/NAME"
  fi
}
# Waits for the cases in flight and adds the failed ones to $failed (each report printed once).
finish_cases() {
  wait
  local f
  for f in "$tmp"/c/*/FAIL; do
    [ -e "$f" ] || continue
    cat "$f"
    failed+=("$(cat "${f%FAIL}NAME")")
    mv "$f" "$f.seen"
  done
}

# expect NAME CULPRIT ARGS...: @OUT@ in ARGS stands for the output path. Such cases alternate between a
# missing and a pre-existing output (LLMBENCH_BAD_INPUTS_BOTH=1: both, twice the time).
expect() {
  local name=$1 culprit=$2
  shift 2
  cases=$((cases + 1))
  case " $* " in
    *@OUT@*)
      if [ "${LLMBENCH_BAD_INPUTS_BOTH:-0}" = 1 ] || [ $((cases % 2)) -eq 1 ]; then run_one "$name" "$culprit" absent "$@"; fi
      if [ "${LLMBENCH_BAD_INPUTS_BOTH:-0}" = 1 ] || [ $((cases % 2)) -eq 0 ]; then run_one "$name" "$culprit" present "$@"; fi
      ;;
    *) run_one "$name" "$culprit" absent "$@" ;;
  esac
}

# Small, fast runs: failures must come before any timing anyway.
small=(--device cpu --prompt-len 4 --max-new-tokens 2 --warmup 0 --runs 3 --trim 0 --no-roofline)
run_dir() { local name=$1 culprit=$2; expect "$name" "$culprit" run --model "$in/$name" "${small[@]}" --output @OUT@; }
gen_dir() {
  local name=$1 culprit=$2
  expect "$name" "$culprit" generate --model "$in/$name" --device cpu --prompt-ids 1,2,3 --max-new-tokens 2 --dump-logits @OUT@
}

# ---- safetensors: corrupt files (file, tensor named)
run_dir st_header_beyond "st_header_beyond/model.safetensors: header length"
run_dir st_garbage_json "st_garbage_json/model.safetensors: malformed JSON header"
gen_dir st_header_not_object "st_header_not_object/model.safetensors"
run_dir st_unknown_dtype "'model.layers.1.mlp.up_proj.weight': unsupported dtype 'Q4_K'"
gen_dir st_missing_dtype "'model.norm.weight': missing dtype"
run_dir st_offsets_out_of_range "'model.norm.weight': data_offsets"
gen_dir st_offsets_negative "'model.norm.weight': data_offsets"
run_dir st_offsets_reversed "'model.norm.weight': data_offsets [224896, 224768] out of range"
run_dir st_overlap "'model.layers.0.self_attn.k_proj.weight' and 'model.layers.0.self_attn.o_proj.weight' overlap"
gen_dir st_span_vs_shape "'model.layers.0.input_layernorm.weight': data_offsets span"
run_dir st_shape_not_sizes "'model.layers.0.input_layernorm.weight': shape"
gen_dir st_shape_overflow "'model.layers.0.input_layernorm.weight': shape"
run_dir st_data_short "st_data_short/model.safetensors: tensor 'model.norm.weight'"
gen_dir st_trailing_bytes "st_trailing_bytes/model.safetensors: data section is"
run_dir st_tiny_file "st_tiny_file/model.safetensors: file of 3 bytes"
gen_dir st_dangling_link "st_dangling_link/model.safetensors: cannot open: No such file or directory"
run_dir st_is_directory "st_is_directory/model.safetensors: not a regular file"
gen_dir st_empty_file "st_empty_file/model.safetensors: file of 0 bytes"
run_dir st_missing_tensor "st_missing_tensor/model.safetensors: missing tensor 'model.layers.1.self_attn.v_proj.weight'"
gen_dir st_wrong_shape "st_wrong_shape/model.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight' has shape [32, 128]"
run_dir st_nan_norm "the reference path's logits are NaN or infinite"
expect st_nan_norm_int8 "quality: the model's logits are NaN or infinite" \
  run --model "$in/st_nan_norm_int8" "${small[@]}" --weights int8 --no-verify --output @OUT@

# ---- shards and the index
run_dir shard_missing "shard 'model-00002-of-00002.safetensors'"
gen_dir index_absent_file "shard 'model-00009-of-00009.safetensors'"
run_dir index_malformed "model.safetensors.index.json: malformed JSON"
gen_dir index_no_weight_map "model.safetensors.index.json: missing weight_map"
run_dir index_wrong_shard "tensor 'lm_head.weight' is not in its shard"
gen_dir index_path_escape "shard name '../llama_bf16/model.safetensors'"

# ---- config.json
run_dir cfg_missing_hidden "config.json: field 'hidden_size' is missing"
gen_dir cfg_zero_layers "field 'num_hidden_layers' = 0"
run_dir cfg_heads_not_dividing "field 'num_attention_heads' = 6 does not divide hidden_size = 64"
gen_dir cfg_kv_not_dividing "field 'num_key_value_heads' = 3"
run_dir cfg_negative_size "field 'intermediate_size' = -128"
gen_dir cfg_huge_float "field 'vocab_size'"
run_dir cfg_string_size "field 'hidden_size' must be an integer"
gen_dir cfg_odd_head_dim "field 'head_dim' = 15"
run_dir cfg_architecture "unsupported architecture 'GPT2LMHeadModel'"
gen_dir cfg_rope_type "unsupported rope type 'yarn'"
run_dir cfg_rope_disagree "fields 'rope_parameters' and 'rope_scaling' disagree"
gen_dir cfg_rope_theta_disagree "fields 'rope_theta' (5) and 'rope_parameters.rope_theta' (10000) disagree"
run_dir cfg_hidden_act "field 'hidden_act'"
gen_dir cfg_eps_nan "field 'rms_norm_eps'"
run_dir cfg_malformed "cfg_malformed/config.json: malformed JSON"
gen_dir cfg_absent "config.json"

# ---- tokenizer.json (tokenize writes no file)
tok() { expect "$1" "$2" tokenize --tokenizer "$in/$1/tokenizer.json" --text "hello world"; }
tok tok_malformed "tok_malformed/tokenizer.json"
tok tok_unknown_model "Unigram2"
tok tok_unknown_pretokenizer "Whatever"
tok tok_unknown_normalizer "Frobnicate"
tok tok_bad_regex "tok_bad_regex/tokenizer.json"
tok tok_merge_unknown "tok_merge_unknown/tokenizer.json"
tok tok_vocab_not_object "vocab"
tok tok_added_bad_id "tok_added_bad_id/tokenizer.json"
# tokenizer_config.json beside a good tokenizer.json: the config file is the one named.
tok tok_config_malformed "tok_config_malformed/tokenizer_config.json: malformed JSON"
tok tok_config_bad_bos "tok_config_bad_bos/tokenizer_config.json: bos_token"
expect tok_absent "no-such-tokenizer.json" tokenize --tokenizer "$in/no-such-tokenizer.json" --text hi

# ---- prompts
expect utf8_tokenize "byte offset 10" tokenize --tokenizer tiny --text-file "$in/bad_utf8.txt"
expect utf8_run "bad_utf8.txt is not valid UTF-8 at byte offset 10" run --model tiny "${small[@]}" --prompt-file "$in/bad_utf8.txt" --output @OUT@
expect prompt_empty "--prompt: the prompt is empty" run --model tiny "${small[@]}" --prompt "" --output @OUT@
expect prompt_file_empty "empty.txt is empty" run --model tiny "${small[@]}" --prompt-file "$in/empty.txt" --output @OUT@
expect prompt_file_absent "no-such-prompt.txt" run --model tiny "${small[@]}" --prompt-file "$in/no-such-prompt.txt" --output @OUT@
expect prompt_too_long "max_position_embeddings = 4096" run --model "$models/llama_bf16" --device cpu --prompt-len 4090 --max-new-tokens 7 \
  --warmup 0 --runs 3 --trim 0 --no-roofline --output @OUT@
expect ids_outside_vocab "99999" generate --model tiny --device cpu --prompt-ids 1,2,99999 --max-new-tokens 2 --dump-logits @OUT@
expect ids_negative "-5" generate --model "$models/qwen2_bias" --device cpu --prompt-ids "3;1,-5" --max-new-tokens 2 --dump-logits @OUT@
expect ids_not_numbers "'x7'" generate --model tiny --device cpu --prompt-ids 1,x7 --max-new-tokens 2 --dump-logits @OUT@
expect ids_empty_prompt "--prompt-ids" generate --model tiny --device cpu --prompt-ids "1,2;" --max-new-tokens 2 --dump-logits @OUT@

# ---- run options
expect batch_zero "--batch" run --model tiny "${small[@]}" --batch 0 --output @OUT@
expect runs_le_2trim "--trim" run --model tiny --device cpu --prompt-len 4 --max-new-tokens 2 --runs 4 --trim 2 --output @OUT@
expect seed_negative "--seed: must not be negative" run --model tiny "${small[@]}" --seed -1 --output @OUT@
expect runs_negative "--runs: -1 is not allowed" run --model tiny --device cpu --prompt-len 4 --max-new-tokens 2 --runs -1 --trim 0 --output @OUT@
expect runs_zero "--runs" run --model tiny --device cpu --prompt-len 4 --max-new-tokens 2 --runs 0 --trim 0 --output @OUT@
expect temperature_negative "--temperature" run --model tiny "${small[@]}" --temperature -1 --output @OUT@
expect top_p_above_one "--top-p" run --model tiny "${small[@]}" --top-p 2 --output @OUT@
expect dtype_unknown "int3" run --model tiny "${small[@]}" --dtype int3 --output @OUT@
expect format_unknown "xml" run --model tiny "${small[@]}" --format xml --output @OUT@
expect chat_format_no_chat "--chat-format needs --chat" run --model tiny "${small[@]}" --prompt hi --chat-format chatml --output @OUT@
expect chat_no_prompt "--chat needs a text prompt (--prompt or --prompt-file)" run --model tiny "${small[@]}" --chat --output @OUT@
expect fp8_gemm_int8 "--fp8-gemm scaled-mm: applies to fp8 weights only" run --model tiny "${small[@]}" --weights int8 \
  --fp8-gemm scaled-mm --output @OUT@
expect model_unknown "no-such-model-xyz" run --model no-such-model-xyz "${small[@]}" --output @OUT@
# Hours by the duration estimate: refused before loading anything.
expect too_long "more than --max-minutes 30" run --model tiny --device cpu --prompt-len 4 --max-new-tokens 64 \
  --warmup 0 --runs 10000000 --trim 0 --no-roofline --output @OUT@
# Out of memory by the estimate: refused before allocating anything.
expect oom_estimate "out of memory" run --model tiny "${small[@]}" --batch 50000000 --output @OUT@
expect batch_twice "--batch: 1 is given twice" run --model tiny "${small[@]}" --batch 1,2,1 --output @OUT@
expect option_twice "--batch: given 2 times; give it once" run --model tiny "${small[@]}" --batch 1 --batch 2 --output @OUT@
expect temperature_twice "--temperature: 0 is given twice" run --model tiny "${small[@]}" --temperature 0,0.0 --output @OUT@
expect batch_trailing_comma "--batch: empty value" run --model tiny "${small[@]}" --batch 1, --output @OUT@
# A prompt "file" that never ends: refused at its size limit, not read until memory runs out.
expect prompt_file_endless "/dev/zero: larger than 64 MiB" run --model tiny "${small[@]}" --prompt-file /dev/zero --output @OUT@

# ---- compare: YAML
cmp_case() { expect "$1" "$2" compare "$in/$1.yaml" --output @OUT@; }
cmp_case yaml_syntax "yaml_syntax.yaml:"
cmp_case yaml_unknown_key "warmpu"
cmp_case yaml_wrong_type "runs"
cmp_case yaml_wrong_shape "defaults"
cmp_case yaml_no_models "models"
cmp_case yaml_baseline "baseline"
cmp_case yaml_duplicate "label"
cmp_case yaml_bad_batch "batch"
cmp_case yaml_tabs "yaml_tabs.yaml"
cmp_case yaml_binary "yaml_binary.yaml"
cmp_case yaml_prompt_file_absent "absent-prompt.txt"
cmp_case yaml_batch_twice "1 is given twice"
cmp_case yaml_two_documents "2 YAML documents"
expect yaml_absent "no-such.yaml" compare "$in/no-such.yaml" --output @OUT@

# ---- results JSON for gate and report
good=$data/gate/baseline.json
gate() { expect "gate_$1" "$1" gate --baseline "$good" --current "$in/$1"; }
gate res_schema9.json
gate res_no_schema.json
gate res_points_object.json
gate res_point_no_params.json
gate res_runs_string.json
gate res_truncated.json
gate res_not_json.json
gate res_1e400.json
# Every results file gate cannot read is bad input: exit 2 (docs/ci.md), not 1 (a regression).
for f in res_schema9.json res_truncated.json res_not_json.json res_1e400.json; do
  cases=$((cases + 1))
  "$bin" gate --baseline "$good" --current "$in/$f" >/dev/null 2>&1
  rc=$?
  [ "$rc" = 2 ] || { failed+=("gate_exit_$f"); echo "FAIL gate_exit_$f: exit $rc, want 2"; }
done
expect gate_baseline_absent "absent.json" gate --baseline "$in/absent.json" --current "$good"
expect gate_config_bad "gate_config_bad.yaml" gate --baseline "$good" --current "$good" --config "$in/gate_config_bad.yaml"
report() { expect "report_$1" "$1" report "$good" "$in/$1" -o @OUT@; }
report res_schema9.json
report res_no_schema.json
report res_points_object.json
report res_runs_string.json
report res_truncated.json
report res_not_json.json
expect report_md_schema9 "res_schema9.json" report "$in/res_schema9.json" --format md -o @OUT@
expect report_gate_bad "gate_verdict_bad.json" report "$good" --gate "$in/gate_verdict_bad.json" -o @OUT@
expect report_gate_deep "gate_verdict_deep.json: nested 100001 levels deep" report "$good" --gate "$in/gate_verdict_deep.json" -o @OUT@

# ---- unwritable output paths (the run must not start)
expect out_no_dir "/nonexistent-dir-llmbench/r.json" run --model tiny "${small[@]}" --output /nonexistent-dir-llmbench/r.json
expect out_is_dir "$in" run --model tiny "${small[@]}" --output "$in"
expect out_under_file "empty.txt/r.json" compare "$root/configs/tiny-ci.yaml" --output "$in/empty.txt/r.json"
expect out_report_no_dir "/nonexistent-dir-llmbench/r.html" report "$good" -o /nonexistent-dir-llmbench/r.html
# The output path is one of the inputs: refused, the input left intact.
cp "$good" "$in/self.json"
printf 'a prompt\n' >"$in/self_prompt.txt"
expect out_is_input_report "self.json: is also an input" report "$in/self.json" -o "$in/self.json"
expect out_is_input_run "self_prompt.txt: is also an input" run --model tiny "${small[@]}" --prompt-file "$in/self_prompt.txt" \
  --output "$in/self_prompt.txt"
cp "$root/configs/tiny-ci.yaml" "$in/self.yaml"
expect out_is_input_compare "self.yaml: is also an input" compare "$in/self.yaml" --output "$in/self.yaml"
finish_cases
if ! cmp -s "$good" "$in/self.json" || [ "$(cat "$in/self_prompt.txt")" != "a prompt" ] ||
   ! cmp -s "$root/configs/tiny-ci.yaml" "$in/self.yaml"; then
  failed+=(out_is_input_intact)
  echo "FAIL out_is_input_intact: an input given as the output was changed"
fi
# The disk fills during the final write (a file-size cap, or /dev/full): one error line, the previous file
# intact, no temporary left.
expect fsize_run "fsize_run.out: write failed: File too large" run --model tiny "${small[@]}" --output @OUT@
expect fsize_report "fsize_report.out: write failed: File too large" report "$good" -o @OUT@
expect dev_full_run "/dev/full: write failed: No space left on device" run --model tiny "${small[@]}" --output /dev/full
expect dev_full_report "/dev/full: write failed: No space left on device" report "$good" -o /dev/full
expect out_logits_no_dir "/nonexistent-dir-llmbench/l.json" generate --model tiny --device cpu --prompt-ids 1,2 \
  --dump-logits /nonexistent-dir-llmbench/l.json

finish_cases

# ---- a real allocation failure mid-sweep (address space capped with ulimit -v, below the estimate's view
# of free memory): the point fails with the estimate and what is free, the next point still runs, exit 1.
# Batch 1024 × 512 (~3.8 GiB estimated): the eager prefill's scores are tiled (attention.h), so it is the
# activations and the KV cache of that many tokens that pass the cap.
cases=$((cases + 1))
(ulimit -v 2500000 && exec "$bin" run --model tiny --device cpu --batch 1024,1 --prompt-len 512 --max-new-tokens 2 \
  --warmup 0 --runs 3 --trim 0 --no-roofline --output "$out/oom.json") >/dev/null 2>"$tmp/stderr"
rc=$?
if [ $rc -ne 1 ] || ! python3 - "$out/oom.json" <<'PY'; then
import json, re, sys
points = json.load(open(sys.argv[1]))["points"]
assert [p["status"] for p in points] == ["failed", "ok"], [p["status"] for p in points]
assert re.fullmatch(r"out of memory: needed ~\d+\.\d\d GiB, \d+\.\d\d GiB free", points[0]["error"]), points[0]["error"]
assert points[0]["runs"] == [] and len(points[1]["runs"]) == 3
PY
  failed+=(oom_real)
  echo "FAIL oom_real: exit $rc"
  sed 's/^/    stderr: /' "$tmp/stderr" | head -20
fi

if [ ${#failed[@]} -ne 0 ]; then
  echo "bad inputs: ${#failed[@]} of $cases cases failed: ${failed[*]}"
  exit 1
fi
echo "bad inputs: all $cases cases passed"
