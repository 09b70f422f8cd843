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
  const auto b = k.size(0), h = k.size(1), d = k.size(3);
  torch::Tensor index = column.view({-1, 1, 1, 1}).expand({b, h, 1, d});  // [B, H_kv, 1, D] int64
  keys(layer).scatter_(2, index, k);
  values(layer).scatter_(2, index, v);
}

KvCache KvCache::view(std::int64_t row, std::int64_t rows, std::int64_t columns) const {
  if (row < 0 || rows < 1 || row + rows > batch_ || columns < 1 || columns > max_len_)
    throw Error(cat("KV cache view of rows [", row, ", ", row + rows, ") × columns [0, ", columns,
                    ") is outside the cache of ", batch_, " × ", max_len_));
  KvCache v;
  v.data_ = data_.narrow(2, row, rows).narrow(4, 0, columns);  // [L, 2, rows, H_kv, columns, D]
  v.batch_ = rows;
  v.max_len_ = columns;
  return v;
}

void KvCache::copy_row(std::int64_t from, std::int64_t to, std::int64_t columns) {
  if (from < 0 || to < 0 || from >= batch_ || to >= batch_ || columns < 0 || columns > max_len_)
    throw Error(cat("KV cache copy of row ", from, " to ", to, " (", columns, " columns) is outside the cache of ",
                    batch_, " × ", max_len_));
  if (from == to || columns == 0) return;
  data_.select(2, to).narrow(3, 0, columns).copy_(data_.select(2, from).narrow(3, 0, columns));  // [L, 2, H_kv, C, D]
}

void KvCache::reset() {
  if (data_.defined()) data_.zero_();
}

}  // namespace llmbench
