#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmbench {

// Every option of `llmbench run` (and of a model entry in a `compare` YAML file). The list-valued
// fields are sweep axes: their full factorial product is run with the model loaded once.
struct RunOptions {
  std::string model = "tiny";           // preset, directory or org/name in the HF cache
  std::string label;                    // display name; empty: the model string
  std::vector<int> batch{4};
  std::vector<int> prompt_len{512};
  std::vector<int> max_new_tokens{64};
  std::vector<double> temperature{0.0};
  std::vector<std::string> attn{"eager"};      // eager | sdpa
  std::vector<std::string> dtype{"bfloat16"};  // bfloat16 | float16 | float32
  std::vector<std::string> weights{"bf16"};    // bf16 (the dtype, unquantized) | int8 | fp8 (docs/quantization.md)
  std::vector<std::string> kv_dtype{"bf16"};   // KV cache: bf16 (the dtype) | fp8 (e4m3, per-head scales; CUDA only)
  int warmup = 3;
  int runs = 20;
  int trim = 2;
  std::string device = "auto";          // auto | cpu | cuda | cuda:N
  int top_k = 0;                        // 0: off
  double top_p = 1.0;                   // 1: off
  std::uint64_t seed = 0;
  std::optional<std::string> prompt;       // text, tokenized then cut/repeated to prompt_len
  std::optional<std::string> prompt_file;
  bool chat = false;                    // wrap the prompt as a user message
  std::string chat_format;              // empty: from tokenizer_config
  bool cuda_graph = true;               // decode step replayed from a CUDA graph (GPU only)
  bool fused = true;                    // fused kernels (GPU only)
  std::optional<bool> gemv;             // GEMV kernels for the decode step's matmuls (GPU only). Unset: on (bf16
                                        // weights take them only at one row), docs/quantization.md
  std::string fp8_gemm = "dequant";     // fp8 weights in the prefill: dequant | scaled-mm
  bool verify = true;                   // check greedy points' tokens against the reference path
  double max_minutes = 30;              // refuse a run estimated longer than this (0: no limit)
  int tp = 1;                           // tensor-parallel ranks (docs/distributed.md)
  double dist_timeout_s = 300;          // a collective waiting longer fails (tp > 1)
};

// One point of a sweep: a single value of every axis.
struct PointParams {
  std::string model;
  std::string label;
  int batch = 1;
  int prompt_len = 1;
  int max_new_tokens = 1;
  double temperature = 0.0;
  std::string attn = "eager";
  std::string dtype = "bfloat16";
  std::string weights = "bf16";         // bf16 | int8 | fp8
  std::string kv_dtype = "bf16";        // bf16 (the dtype) | fp8
  int top_k = 0;
  double top_p = 1.0;
  std::uint64_t seed = 0;
  std::string device;                   // as resolved ("cpu", "cuda")
  bool cuda_graph = true;
  bool fused = true;
  bool gemv = false;
  std::string fp8_gemm = "dequant";
  int tp = 1;                           // tensor-parallel ranks
};

// Throws UsageError naming the option: empty axis, batch/prompt_len/max_new_tokens < 1, runs <= 2*trim,
// warmup < 0, temperature < 0, top_p outside (0, 1], unknown attn, dtype, weights or kv_dtype, max_minutes < 0.
void validate(const RunOptions& options);

// The factorial product of the axes, in a fixed nesting order (dtype, weights, kv_dtype, attn, batch,
// prompt_len, max_new_tokens, temperature; the last varies fastest). `device` is stored as given.
std::vector<PointParams> expand(const RunOptions& options);

}  // namespace llmbench
