#include "run_options_cli.h"

#include <sstream>

#include "command.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/base/utf8.h"

namespace llmbench::cli {

std::string read_prompt_file(const std::string& path, const std::string& what) {
  std::string text;
  try {
    text = read_file(path, kMaxPromptFileBytes);
  } catch (const Error& e) {
    throw UsageError(cat(what, ": ", e.what()));
  }
  if (text.empty()) throw UsageError(cat(what, ": ", path, " is empty"));
  const std::size_t bad = utf8::first_invalid(text);
  if (bad != text.size()) throw UsageError(cat(what, ": ", path, " is not valid UTF-8 at byte offset ", bad));
  return text;
}

namespace {

std::vector<std::string> split_commas(const std::string& s, const std::string& flag) {
  std::vector<std::string> out;
  if (!s.empty() && s.back() == ',') throw UsageError(cat(flag, ": empty value in '", s, "'"));  // getline drops it
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos) throw UsageError(cat(flag, ": empty value in '", s, "'"));
    out.push_back(item.substr(b, e - b + 1));
  }
  if (out.empty()) throw UsageError(cat(flag, ": no value given"));
  return out;
}

template <class T>
std::vector<T> parse_list(const std::string& s, const std::string& flag) {
  std::vector<T> out;
  for (const auto& item : split_commas(s, flag)) {
    std::istringstream is(item);
    T v{};
    if (!(is >> v) || !is.eof()) throw UsageError(cat(flag, ": '", item, "' is not a number"));
    out.push_back(v);
  }
  return out;
}

}  // namespace

std::vector<int> parse_int_list(const std::string& s, const std::string& flag) { return parse_list<int>(s, flag); }
std::vector<double> parse_double_list(const std::string& s, const std::string& flag) {
  return parse_list<double>(s, flag);
}

void add_run_flags(CLI::App& app, RunFlags& f) {
  RunOptions& o = f.options;
  app.add_option("--model,-m", o.model, "Preset (tiny, deepseek-r1-7b, llama-3-8b, qwen2.5-7b, llama-3-70b, qwen2.5-72b), directory or org/name")
      ->capture_default_str();
  app.add_option("--label", o.label, "Name shown for this model in tables (default: --model)");
  app.add_option("--batch,-b", f.batch, "Prompts per batch; comma list sweeps")->capture_default_str();
  app.add_option("--prompt-len,-p", f.prompt_len, "Prompt tokens; comma list sweeps")->capture_default_str();
  app.add_option("--max-new-tokens,-n", f.max_new_tokens, "Tokens generated per run (EOS ignored); comma list sweeps")
      ->capture_default_str();
  app.add_option("--temperature", f.temperature, "0 = greedy; comma list sweeps")->capture_default_str();
  app.add_option("--attn", f.attn,
                 "Prefill attention: eager or sdpa; comma list sweeps. Decode on CUDA uses the fused decode kernel "
                 "either way (the chosen attention with --no-fused)")->capture_default_str();
  app.add_option("--dtype", f.dtype, "bfloat16, float16 or float32; comma list sweeps")->capture_default_str();
  app.add_option("--weights", f.weights,
                 "Matmul weights: bf16 (the --dtype, unquantized), int8 or fp8 (CUDA sm_89+); comma list sweeps")
      ->capture_default_str();
  app.add_option("--kv-dtype", f.kv_dtype,
                 "KV cache: bf16 (the --dtype) or fp8 (e4m3, per-head scales; CUDA only); comma list sweeps")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed generate loops before the timed ones")->capture_default_str();
  app.add_option("--runs", o.runs, "Timed generate loops")->capture_default_str();
  app.add_option("--trim", o.trim, "Values dropped from each end for the trimmed median")->capture_default_str();
  app.add_option("--device", o.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app.add_option("--top-k", o.top_k, "Sample among the k most likely (0 = off)")->capture_default_str();
  app.add_option("--top-p", o.top_p, "Nucleus sampling mass (1 = off)")->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of prompts, random weights and sampling")->capture_default_str()->check(not_negative());
  app.add_option("--prompt", o.prompt, "Prompt text, tokenized then cut or repeated to --prompt-len");
  app.add_option("--prompt-file", f.prompt_file, "File whose text is the prompt");
  app.add_flag("--chat", o.chat, "Wrap the prompt as a user message in the model's chat format");
  app.add_option("--chat-format", o.chat_format, "With --chat: llama3, chatml, deepseek-r1 or none (no template; default: from tokenizer_config)");
  app.add_flag("--no-cuda-graph", f.no_cuda_graph, "Run the decode step eagerly instead of replaying a CUDA graph");
  app.add_flag("--no-fused", f.no_fused, "Use the plain (unfused) ops instead of fused kernels");
  app.add_flag_function(
      "--gemv,!--no-gemv", [&o](std::int64_t n) { o.gemv = n > 0; },
      "Use the GEMV kernels in the decode step (default on; bf16 weights take them only at one row, quantized weights up to 16 rows; docs/quantization.md)");
  app.add_option("--fp8-gemm", o.fp8_gemm, "fp8 weights in the prefill: dequant (then bf16 GEMM) or scaled-mm (needs fp8 among --weights)")
      ->capture_default_str();
  app.add_flag("--verify,!--no-verify", o.verify,
               "Check each greedy point's tokens against the reference path (default on; a mismatch fails the point)");
  app.add_option("--tp", o.tp, "Tensor-parallel ranks: one process per rank (docs/distributed.md)")->capture_default_str();
  app.add_option("--dist-timeout", o.dist_timeout_s, "With --tp: seconds a collective may wait before the run fails")
      ->capture_default_str();
  app.add_option("--max-minutes", o.max_minutes,
                 "Refuse a run estimated (from the device ceilings) to take longer than this; 0: no limit")
      ->capture_default_str();
}

RunOptions finish_run_flags(RunFlags& f) {
  RunOptions o = f.options;
  o.batch = parse_list<int>(f.batch, "--batch");
  o.prompt_len = parse_list<int>(f.prompt_len, "--prompt-len");
  o.max_new_tokens = parse_list<int>(f.max_new_tokens, "--max-new-tokens");
  o.temperature = parse_list<double>(f.temperature, "--temperature");
  o.attn = split_commas(f.attn, "--attn");
  o.dtype = split_commas(f.dtype, "--dtype");
  o.weights = split_commas(f.weights, "--weights");
  o.kv_dtype = split_commas(f.kv_dtype, "--kv-dtype");
  if (!f.prompt_file.empty()) {
    if (o.prompt) throw UsageError("give --prompt or --prompt-file, not both");
    o.prompt = read_prompt_file(f.prompt_file, "--prompt-file");
  }
  o.cuda_graph = !f.no_cuda_graph;
  o.fused = !f.no_fused;
  validate(o);
  return o;
}

}  // namespace llmbench::cli
