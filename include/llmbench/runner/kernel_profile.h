#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llmbench/report/kernel_split.h"

// `llmbench profile`: where the GPU time of one prefill and of one decode step goes, kernel by kernel,
// recorded by libtorch's profiler (llmbench/bench/kernel_profiler.h) around the same calls `llmbench run`
// makes (Model::prefill, DecodeGraph::step or Model::decode_step, greedy argmax).
namespace llmbench {

struct ProfileOptions {
  std::string model = "qwen2.5-7b";
  int batch = 1;
  int prompt_len = 512;
  std::string dtype = "bfloat16";
  std::string weights = "bf16";   // bf16 | int8 | fp8 (model/quantize.h)
  std::string attn = "eager";     // the prefill's attention
  std::string device = "cuda";
  int steps = 20;                 // decode steps recorded per mode
  int warmup = 3;                 // untimed calls before each mode's timing
  bool cuda_graph = true;         // also record graph replays (eager steps are always recorded)
  bool fused = true;
  std::optional<bool> gemv;       // unset: as `run` (on)
  bool prefill = true;
  std::uint64_t seed = 0;
  bool full_names = false;        // group and print by the full demangled names
  int tp = 1;                     // tensor-parallel ranks (docs/distributed.md): every rank runs the same
                                  // calls, rank 0's kernels are reported (NCCL's among them)
  double dist_timeout_s = 300;
  // Chunked prefill (docs/serving.md): also record a mixed step (Model::mixed_slots, what the server's
  // --chunked-prefill runs, eagerly) of the `batch` decode rows plus this many prompt chunks of chunk_len
  // tokens in rows of their own; 0: none.
  int mixed_chunks = 0;
  int chunk_len = 512;
};

struct ProfileReport {
  std::vector<std::string> header;  // model, device, torch, shapes, paths
  std::vector<KernelSplit> splits;  // prefill (if asked), decode graph replay (if asked), decode eager, mixed
                                    // step (if asked)
};

// Throws UsageError for bad options or a device that is not CUDA, Error where the profiler is missing or
// recorded no kernel at all (a libtorch without Kineto/CUPTI).
ProfileReport profile_kernels(const ProfileOptions& options);

}  // namespace llmbench
