#pragma once
#include <memory>

#include <torch/torch.h>

#include "llmbench/model/model.h"

namespace llmbench {

// The whole decode step (every layer, the lm_head) captured once in a CUDA graph per (batch, max length)
// and replayed for each token: one launch instead of hundreds. Inputs and outputs live in static device
// buffers; the model's decode state (cache column, positions, mask) is read and advanced on the device,
// so replays need no host values.
class DecodeGraph {
 public:
  // Captures model.decode_step for the model's current cache shape. The capture runs warm-up steps that
  // write the cache, so call model.reset_cache() before the next generate (the runner does).
  // Throws Error where CUDA graphs are unavailable (CPU, or a libtorch without CUDA).
  explicit DecodeGraph(Model& model);
  ~DecodeGraph();

  // tokens [B] int64 on the device → logits [B, V] float32 (a static buffer, overwritten by the next step).
  torch::Tensor step(const torch::Tensor& tokens);

  static bool available(const torch::Device& device);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmbench
