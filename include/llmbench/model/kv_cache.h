#pragma once
#include <cstdint>

#include <torch/torch.h>

#include "llmbench/model/model_config.h"

// The key/value cache: one tensor allocated once per (batch, max length), written by index, never
// reallocated or concatenated; reset() clears it in place between runs.
namespace llmbench {

class KvCache {
 public:
  KvCache() = default;
  KvCache(const ModelConfig& config, std::int64_t batch, std::int64_t max_len, torch::Dtype dtype,
          torch::Device device);

  bool allocated() const { return data_.defined(); }
  std::int64_t batch() const { return batch_; }
  std::int64_t max_len() const { return max_len_; }
  std::int64_t bytes() const;
  const void* data_ptr() const { return data_.data_ptr(); }

  // Views of layer `layer`: [B, H_kv, T_max, D].
  torch::Tensor keys(std::int64_t layer) const { return data_[layer][0]; }
  torch::Tensor values(std::int64_t layer) const { return data_[layer][1]; }

  // Prefill: writes k/v [B, H_kv, S, D] into columns [0, S).
  void write_prefix(std::int64_t layer, const torch::Tensor& k, const torch::Tensor& v);
  // Decode: writes k/v [B, H_kv, 1, D] of row b into column column[b] (device int64 [B], or [1] for all
  // rows). A scatter along T: no host sync, graph-capturable.
  void write_column(std::int64_t layer, const torch::Tensor& column, const torch::Tensor& k, const torch::Tensor& v);

  // Rows [row, row + rows) and columns [0, columns) of this cache as a cache of their own: the same
  // storage, so writes go through (the slot engine's per-request prefill and its bucketed decode steps).
  KvCache view(std::int64_t row, std::int64_t rows, std::int64_t columns) const;
  // Copies columns [0, columns) of row `from` into row `to`, every layer (slot compaction).
  void copy_row(std::int64_t from, std::int64_t to, std::int64_t columns);

  // Zeroes the storage in place (no free, no allocation).
  void reset();

 private:
  torch::Tensor data_;  // [L, 2, B, H_kv, T_max, D] model dtype (a view: strides of the full cache)
  std::int64_t batch_ = 0;
  std::int64_t max_len_ = 0;
};

}  // namespace llmbench
