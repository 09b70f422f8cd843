#pragma once
#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "llmbench/model/model_config.h"

// The key/value cache: one tensor allocated once per (batch, max length), written by index, never
// reallocated or concatenated; reset() clears it in place between runs.
//
// Storage (`--kv-dtype`, docs/quantization.md): the model dtype, or float8 e4m3 with one float32 scale per
// (layer, K/V, batch row, kv head). An fp8 row's scales are set by the prefill that writes the row:
// scale = amax(prompt's K or V of that head) · kFp8KvHeadroom / 448, so the decode tokens after the prompt
// may grow to kFp8KvHeadroom × the prompt's largest value before they saturate. Values are stored as
// e4m3(clamp(x / scale, ±448)) (round to nearest even) and read as x ≈ float(q) · scale.
namespace llmbench {

enum class KvFormat { plain, fp8 };

// "bf16" (the model dtype, unquantized: the name the CLI and the results use) | "fp8"; UsageError otherwise.
KvFormat parse_kv_format(const std::string& name);
std::string to_string(KvFormat format);  // "bf16" | "fp8"
// Throws a one-line UsageError unless an fp8 cache can live on `device`: a CUDA GPU with FP8 (compute
// capability >= 8.9, as fp8 weights) and a libtorch with float8_e4m3fn (>= 2.1).
void check_kv_fp8_supported(const torch::Device& device);

// Room above the prompt's amax that the fp8 scale leaves for later tokens (e4m3's precision is relative,
// so the headroom costs one binade at the bottom of its range, not precision).
constexpr double kFp8KvHeadroom = 2.0;

class KvCache {
 public:
  KvCache() = default;
  KvCache(const ModelConfig& config, std::int64_t batch, std::int64_t max_len, torch::Dtype dtype,
          torch::Device device, KvFormat format = KvFormat::plain);

  bool allocated() const { return data_.defined(); }
  std::int64_t batch() const { return batch_; }
  std::int64_t max_len() const { return max_len_; }
  KvFormat format() const { return format_; }
  bool fp8() const { return format_ == KvFormat::fp8; }
  // Storage and scales.
  std::int64_t bytes() const;
  const void* data_ptr() const { return data_.data_ptr(); }

  // Storage views of layer `layer`: [B, H_kv, T_max, D] (model dtype, or float8 e4m3 when fp8()).
  torch::Tensor keys(std::int64_t layer) const { return data_[layer][0]; }
  torch::Tensor values(std::int64_t layer) const { return data_[layer][1]; }
  // fp8(): the scales of layer `layer`, [B, H_kv] float32 (updated in place by write_prefix); undefined otherwise.
  torch::Tensor key_scales(std::int64_t layer) const { return fp8() ? scales_[layer][0] : torch::Tensor(); }
  torch::Tensor value_scales(std::int64_t layer) const { return fp8() ? scales_[layer][1] : torch::Tensor(); }
  // Layer `layer` in the model dtype, [B, H_kv, T_max, D]: the storage views, or dequantized copies when fp8().
  torch::Tensor read_keys(std::int64_t layer) const;
  torch::Tensor read_values(std::int64_t layer) const;

  // Prefill: writes k/v [B, H_kv, S, D] (model dtype) into columns [0, S); fp8(): first sets each row's
  // scales from these k/v.
  void write_prefix(std::int64_t layer, const torch::Tensor& k, const torch::Tensor& v);
  // Decode: writes k/v [B, H_kv, 1, D] of row b into column column[b] (device int64 [B], or [1] for all
  // rows). A scatter along T: no host sync, graph-capturable. fp8(): quantized with the row's scales.
  void write_column(std::int64_t layer, const torch::Tensor& column, const torch::Tensor& k, const torch::Tensor& v);

  // Rows [row, row + rows) and columns [0, columns) of this cache as a cache of their own: the same
  // storage, so writes go through (the slot engine's per-request prefill and its bucketed decode steps).
  KvCache view(std::int64_t row, std::int64_t rows, std::int64_t columns) const;
  // Copies columns [0, columns) of row `from` into row `to`, every layer (slot compaction), scales included.
  void copy_row(std::int64_t from, std::int64_t to, std::int64_t columns);

  // Zeroes the storage in place (no free, no allocation); fp8 scales back to 1.
  void reset();

 private:
  torch::Tensor data_;    // [L, 2, B, H_kv, T_max, D] model dtype or float8 e4m3 (a view: strides of the full cache)
  torch::Tensor scales_;  // [L, 2, B, H_kv] float32 (fp8 only; a view like data_)
  torch::Dtype dtype_ = torch::kFloat32;  // the model dtype: what k/v arrive in and read_* return
  KvFormat format_ = KvFormat::plain;
  std::int64_t batch_ = 0;
  std::int64_t max_len_ = 0;
};

// The cache's fp8 encoding with torch ops (the reference the CUDA kernels match):
// x [B, H, S, D] any float dtype, scale [B, H] float32 → float8 e4m3 [B, H, S, D] = e4m3(clamp(x / scale, ±448)).
torch::Tensor quantize_kv(const torch::Tensor& x, const torch::Tensor& scale);
// q [B, H, S, D] float8 e4m3, scale [B, H] float32 → [B, H, S, D] `dtype` = float(q) · scale, rounded once.
torch::Tensor dequantize_kv(const torch::Tensor& q, const torch::Tensor& scale, torch::Dtype dtype);
// The scale a prefill sets: x [B, H, S, D] → [B, H] float32 = amax over (S, D) · kFp8KvHeadroom / 448 (1 where 0).
torch::Tensor kv_scale_for(const torch::Tensor& x);

}  // namespace llmbench
