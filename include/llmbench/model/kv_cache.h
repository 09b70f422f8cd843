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
  // Decode: writes k/v [B, H_kv, 1, D] into column `column` (a device int64 tensor [1]; no host sync).
  void write_column(std::int64_t layer, const torch::Tensor& column, const torch::Tensor& k, const torch::Tensor& v);

  // Zeroes the storage in place (no free, no allocation).
  void reset();

 private:
  torch::Tensor data_;  // [L, 2, B, H_kv, T_max, D] model dtype
  std::int64_t batch_ = 0;
  std::int64_t max_len_ = 0;
};

}  // namespace llmbench
