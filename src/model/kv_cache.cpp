#include "llmbench/model/kv_cache.h"

#include "llmbench/base/error.h"

namespace llmbench {

KvCache::KvCache(const ModelConfig& c, std::int64_t batch, std::int64_t max_len, torch::Dtype dtype,
                 torch::Device device)
    : batch_(batch), max_len_(max_len) {
  if (batch < 1 || max_len < 1) throw UsageError(cat("KV cache needs batch >= 1 and length >= 1, got ", batch, " × ", max_len));
  data_ = torch::zeros({c.num_layers, 2, batch, c.num_kv_heads, max_len, c.head_dim},
                       torch::TensorOptions().dtype(dtype).device(device));
}

std::int64_t KvCache::bytes() const {
  return data_.defined() ? data_.numel() * static_cast<std::int64_t>(data_.element_size()) : 0;
}

void KvCache::write_prefix(std::int64_t layer, const torch::Tensor& k, const torch::Tensor& v) {
  const std::int64_t s = k.size(2);
  keys(layer).narrow(2, 0, s).copy_(k);
  values(layer).narrow(2, 0, s).copy_(v);
}

void KvCache::write_column(std::int64_t layer, const torch::Tensor& column, const torch::Tensor& k,
                           const torch::Tensor& v) {
  keys(layer).index_copy_(2, column, k);
  values(layer).index_copy_(2, column, v);
}

void KvCache::reset() {
  if (data_.defined()) data_.zero_();
}

}  // namespace llmbench
