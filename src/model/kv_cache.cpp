#include "llmbench/model/kv_cache.h"

#include "llmbench/base/error.h"
#include "llmbench/model/quantize.h"

namespace llmbench {

namespace {

constexpr double kFp8Max = 448.0;  // largest finite float8 e4m3fn

const char* const kKvFp8Unsupported =
    "--kv-dtype fp8 needs a CUDA GPU with FP8 (sm_89+) and libtorch >= 2.1 (float8_e4m3fn); --kv-dtype bf16 runs anywhere";

// The storage as bytes: index ops (scatter, zero, copy) on fp8 tensors are not implemented everywhere.
torch::Tensor bytes_of(const torch::Tensor& t) { return t.view(torch::kUInt8); }

torch::Tensor per_head(const torch::Tensor& scale) { return scale.unsqueeze(-1).unsqueeze(-1); }  // [B, H, 1, 1]

}  // namespace

KvFormat parse_kv_format(const std::string& name) {
  if (name == "bf16") return KvFormat::plain;
  if (name == "fp8") return KvFormat::fp8;
  throw UsageError(cat("unknown KV cache dtype '", name, "' (expected bf16 or fp8)"));
}

std::string to_string(KvFormat format) { return format == KvFormat::fp8 ? "fp8" : "bf16"; }

void check_kv_fp8_supported(const torch::Device& device) {
  if (!torch_has_fp8() || !device.is_cuda()) throw UsageError(kKvFp8Unsupported);
  try {
    check_fp8_supported(device);  // the same test as fp8 weights: compute capability >= 8.9
  } catch (const UsageError&) {
    throw UsageError(kKvFp8Unsupported);
  }
}

torch::Tensor quantize_kv(const torch::Tensor& x, const torch::Tensor& scale) {
#ifdef LLMBENCH_TORCH_FP8
  return (x.to(torch::kFloat32) / per_head(scale)).clamp_(-kFp8Max, kFp8Max).to(torch::kFloat8_e4m3fn);
#else
  (void)x, (void)scale;
  throw UsageError(kKvFp8Unsupported);
#endif
}

torch::Tensor dequantize_kv(const torch::Tensor& q, const torch::Tensor& scale, torch::Dtype dtype) {
  return (q.to(torch::kFloat32) * per_head(scale)).to(dtype);
}

torch::Tensor kv_scale_for(const torch::Tensor& x) {
  torch::Tensor amax = x.abs().amax({2, 3}).to(torch::kFloat32);                         // [B, H]
  return torch::where(amax > 0, amax * (kFp8KvHeadroom / kFp8Max), torch::ones_like(amax));  // [B, H] float32
}

KvCache::KvCache(const ModelConfig& c, std::int64_t batch, std::int64_t max_len, torch::Dtype dtype,
                 torch::Device device, KvFormat format)
    : dtype_(dtype), format_(format), batch_(batch), max_len_(max_len) {
  if (batch < 1 || max_len < 1) throw UsageError(cat("KV cache needs batch >= 1 and length >= 1, got ", batch, " × ", max_len));
  const auto options = torch::TensorOptions().device(device);
  if (format == KvFormat::plain) {
    data_ = torch::zeros({c.num_layers, 2, batch, c.num_kv_heads, max_len, c.head_dim}, options.dtype(dtype));
    return;
  }
  check_kv_fp8_supported(device);
#ifdef LLMBENCH_TORCH_FP8
  data_ = torch::zeros({c.num_layers, 2, batch, c.num_kv_heads, max_len, c.head_dim}, options.dtype(torch::kUInt8))
              .view(torch::kFloat8_e4m3fn);  // 0x00 is +0
  scales_ = torch::ones({c.num_layers, 2, batch, c.num_kv_heads}, options.dtype(torch::kFloat32));
#endif
}

std::int64_t KvCache::bytes() const {
  std::int64_t n = data_.defined() ? data_.numel() * static_cast<std::int64_t>(data_.element_size()) : 0;
  if (scales_.defined()) n += scales_.numel() * static_cast<std::int64_t>(scales_.element_size());
  return n;
}

torch::Tensor KvCache::read_keys(std::int64_t layer) const {
  return fp8() ? dequantize_kv(keys(layer), key_scales(layer), dtype_) : keys(layer);
}

torch::Tensor KvCache::read_values(std::int64_t layer) const {
  return fp8() ? dequantize_kv(values(layer), value_scales(layer), dtype_) : values(layer);
}

void KvCache::write_prefix(std::int64_t layer, const torch::Tensor& k, const torch::Tensor& v) {
  const std::int64_t s = k.size(2);
  if (!fp8()) {
    // k / v may already be these very columns (the fused prefill's RoPE writes them in place): no copy.
    auto put = [&](const torch::Tensor& dst, const torch::Tensor& src) {
      const bool same = src.is_alias_of(dst) && src.storage_offset() == dst.storage_offset() &&
                        src.sizes() == dst.sizes() && src.strides() == dst.strides() && src.dtype() == dst.dtype();
      if (!same) dst.copy_(src);
    };
    put(keys(layer).narrow(2, 0, s), k);
    put(values(layer).narrow(2, 0, s), v);
    return;
  }
  // In place: a captured decode graph reads these very tensors.
  key_scales(layer).copy_(kv_scale_for(k));
  value_scales(layer).copy_(kv_scale_for(v));
  bytes_of(keys(layer).narrow(2, 0, s)).copy_(bytes_of(quantize_kv(k, key_scales(layer))));
  bytes_of(values(layer).narrow(2, 0, s)).copy_(bytes_of(quantize_kv(v, value_scales(layer))));
}

void KvCache::write_column(std::int64_t layer, const torch::Tensor& column, const torch::Tensor& k,
                           const torch::Tensor& v) {
  const auto b = k.size(0), h = k.size(1), d = k.size(3);
  torch::Tensor index = column.view({-1, 1, 1, 1}).expand({b, h, 1, d});  // [B, H_kv, 1, D] int64
  if (!fp8()) {
    keys(layer).scatter_(2, index, k);
    values(layer).scatter_(2, index, v);
    return;
  }
  bytes_of(keys(layer)).scatter_(2, index, bytes_of(quantize_kv(k, key_scales(layer))));
  bytes_of(values(layer)).scatter_(2, index, bytes_of(quantize_kv(v, value_scales(layer))));
}

KvCache KvCache::view(std::int64_t row, std::int64_t rows, std::int64_t columns) const {
  if (row < 0 || rows < 1 || row + rows > batch_ || columns < 1 || columns > max_len_)
    throw Error(cat("KV cache view of rows [", row, ", ", row + rows, ") × columns [0, ", columns,
                    ") is outside the cache of ", batch_, " × ", max_len_));
  KvCache v;
  v.data_ = data_.narrow(2, row, rows).narrow(4, 0, columns);  // [L, 2, rows, H_kv, columns, D]
  if (scales_.defined()) v.scales_ = scales_.narrow(2, row, rows);  // [L, 2, rows, H_kv]
  v.dtype_ = dtype_;
  v.format_ = format_;
  v.batch_ = rows;
  v.max_len_ = columns;
  return v;
}

void KvCache::copy_row(std::int64_t from, std::int64_t to, std::int64_t columns) {
  if (from < 0 || to < 0 || from >= batch_ || to >= batch_ || columns < 0 || columns > max_len_)
    throw Error(cat("KV cache copy of row ", from, " to ", to, " (", columns, " columns) is outside the cache of ",
                    batch_, " × ", max_len_));
  if (from == to || columns == 0) return;
  torch::Tensor data = fp8() ? bytes_of(data_) : data_;
  data.select(2, to).narrow(3, 0, columns).copy_(data.select(2, from).narrow(3, 0, columns));  // [L, 2, H_kv, C, D]
  if (scales_.defined()) scales_.select(2, to).copy_(scales_.select(2, from));                  // [L, 2, H_kv]
}

void KvCache::reset() {
  if (!data_.defined()) return;
  (fp8() ? bytes_of(data_) : data_).zero_();
  if (scales_.defined()) scales_.fill_(1.0);
}

}  // namespace llmbench
