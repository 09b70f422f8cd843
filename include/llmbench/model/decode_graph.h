#pragma once
#include <memory>

#include <torch/torch.h>

#include "llmbench/model/model.h"

namespace llmbench {

// The whole decode step (every layer, the lm_head) captured once in a CUDA graph per (batch, max length)
// (or per (rows, columns) bucket of the slot engine)
// and replayed for each token: one launch instead of hundreds. Inputs and outputs live in static device
// buffers; the model's decode state (cache column, positions, mask) is read and advanced on the device,
// so replays need no host values.
class DecodeGraph {
 public:
  // Captures model.decode_step for the model's current cache shape (rows = 0), or model.decode_slots for
  // rows [0, rows) over columns [0, columns) (the slot engine's bucket). The capture runs warm-up steps
  // that write the cache and reset it afterwards: capture before any slot holds a request, and call
  // model.reset_cache() before the next generate (the runner does).
  // Throws Error where CUDA graphs are unavailable (CPU, or a libtorch without CUDA).
  explicit DecodeGraph(Model& model, std::int64_t rows = 0, std::int64_t columns = 0);
  ~DecodeGraph();

  // tokens [n] int64 (n ≤ the captured rows; rows beyond n keep their last tokens) → logits [n, V] float32
  // (a view of a static buffer, overwritten by the next step).
  torch::Tensor step(const torch::Tensor& tokens);
  std::int64_t rows() const;

  static bool available(const torch::Device& device);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmbench
