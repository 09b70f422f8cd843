#pragma once
#include <cstdint>
#include <memory>

#include <torch/torch.h>

#include "llmbench/model/model.h"

namespace llmbench {

// The whole prefill of one shape (batch = the cache's, prompt_len tokens, no padding) captured once in a
// CUDA graph and replayed for each generate: one launch instead of ~350–470, and no gaps between kernels
// waiting for the host. The same kernels as model.prefill(ids), so the same results bit for bit.
// The runner uses it for prompts of at most kPrefillGraphMaxTokens tokens in all (a graph keeps its own
// memory pool: the prefill's activations stay reserved while it lives).
class PrefillGraph {
 public:
  static constexpr std::int64_t kMaxTokens = 2048;  // batch × prompt_len

  // Captures model.prefill for ids [B, prompt_len] (B = the allocated cache's batch). The capture runs two
  // warm-up prefills; the cache is reset afterwards (call it before a generate, as DecodeGraph).
  // Throws Error where CUDA graphs are unavailable, for tensor parallelism (collectives are not captured)
  // or for a shape the cache does not hold.
  PrefillGraph(Model& model, std::int64_t prompt_len);
  ~PrefillGraph();

  // ids [B, prompt_len] int64 (any device) → last-position logits [B, V] float32 (a static buffer,
  // overwritten by the next replay). Writes the cache and the decode state as model.prefill(ids) does.
  torch::Tensor prefill(const torch::Tensor& ids);
  // The shape it replays.
  std::int64_t batch() const;
  std::int64_t prompt_len() const;
  // Bytes the prefill allocated at its peak during the capture, above what was allocated before it: the
  // activations that the graph's pool keeps and that the allocator's statistics no longer see in a replay.
  std::uint64_t activation_bytes() const;

  // LLMBENCH_PREFILL_GRAPH: unset or 1 → true, 0 → false (A/B); UsageError otherwise.
  static bool enabled();
  static bool available(const torch::Device& device);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmbench
