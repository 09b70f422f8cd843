#include <chrono>
#include <iostream>
#include <memory>

#include "command.h"
#include "llmbench/base/error.h"
#include "llmbench/dist/dist_env.h"
#include "llmbench/dist/session.h"
#include "llmbench/runner/kernel_profile.h"

namespace llmbench::cli {

void add_profile_command(CLI::App& root, Commands& out) {
  struct State {
    ProfileOptions options;
    bool no_cuda_graph = false, no_fused = false, no_prefill = false;
    int max_rows = 25;
  };
  auto st = std::make_shared<State>();
  ProfileOptions& o = st->options;
  auto* app = root.add_subcommand(
      "profile", "Per-kernel GPU time of one prefill and of a decode step (graph replay and eager), from libtorch's "
                 "profiler (Kineto/CUPTI; no nsys or ncu needed)");
  app->add_option("--model,-m", o.model, "Preset, directory or org/name")->capture_default_str();
  app->add_option("--batch,-b", o.batch, "Sequences per step")->capture_default_str();
  app->add_option("--prompt-len,--prompt-tokens,-p", o.prompt_len, "Prompt tokens (the prefill, then the cache the "
                  "decode steps read)")->capture_default_str();
  app->add_option("--dtype", o.dtype, "bfloat16, float16 or float32")->capture_default_str();
  app->add_option("--weights", o.weights, "Matmul weights: bf16 (the --dtype), int8 or fp8")->capture_default_str();
  app->add_option("--attn", o.attn, "Prefill attention: eager or sdpa (decode on CUDA uses the fused decode kernel)")
      ->capture_default_str();
  app->add_option("--device", o.device, "cuda or cuda:N (auto: cuda where there is one)")->capture_default_str();
  app->add_option("--steps", o.steps, "Decode steps recorded per mode")->capture_default_str();
  app->add_option("--warmup", o.warmup, "Untimed calls before each mode's timing")->capture_default_str();
  app->add_option("--seed", o.seed, "Seed of the prompt ids and random weights")->capture_default_str()->check(not_negative());
  app->add_flag("--no-cuda-graph", st->no_cuda_graph, "Record eager decode steps only (no graph replay)");
  app->add_flag("--no-fused", st->no_fused, "Plain ops instead of the fused decode kernels");
  app->add_flag_function(
      "--gemv,!--no-gemv", [st](std::int64_t n) { st->options.gemv = n > 0; },
      "The GEMV kernel in the decode step (default on, as in run; docs/quantization.md)");
  app->add_flag("--no-prefill", st->no_prefill, "Decode only");
  app->add_flag("--full-names", o.full_names, "Group and print by the full demangled kernel names");
  app->add_option("--max-rows", st->max_rows, "Kernels per table; the rest summed in one row")->capture_default_str();
  app->add_option("--mixed-chunks", o.mixed_chunks, "Also record a chunked-prefill mixed step: the --batch decode "
                  "rows plus this many prompt chunks (docs/serving.md); 0: none")->capture_default_str();
  app->add_option("--chunk-len", o.chunk_len, "Tokens per prompt chunk of --mixed-chunks")->capture_default_str();
  app->add_option("--tp", o.tp, "Tensor-parallel ranks, one GPU each (docs/distributed.md); rank 0's kernels are "
                  "reported, NCCL's among them")->capture_default_str();
  app->add_option("--dist-timeout", o.dist_timeout_s, "Seconds a tensor-parallel collective may wait")
      ->capture_default_str();
  out.push_back({app, [st] {
                   ProfileOptions options = st->options;
                   options.cuda_graph = !st->no_cuda_graph;
                   options.fused = !st->no_fused;
                   options.prefill = !st->no_prefill;
                   if (st->max_rows < 1) throw UsageError(cat("--max-rows must be >= 1, got ", st->max_rows));
                   const ProfileReport report = profile_kernels(options);
                   if (dist::process_rank() != 0) return kExitOk;
                   if (auto failure = dist::finish_tensor_parallel(std::chrono::seconds(30))) throw Error(*failure);
                   for (const auto& line : report.header) std::cout << line << "\n";
                   for (const auto& split : report.splits) std::cout << "\n" << format_kernel_split(split, st->max_rows);
                   std::cout << std::flush;
                   return kExitOk;
                 }});
}

}  // namespace llmbench::cli
