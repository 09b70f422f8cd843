#pragma once
#include <cstdint>
#include <string>

#include <torch/torch.h>
#include <torch/version.h>

#include "llmbench/model/weights.h"

// Weight-only quantization (docs/quantization.md). The four matmul weights of every layer — qkv, o,
// gate_up and down — are stored as int8 or float8 e4m3 with one float32 scale per output channel (row):
//   int8: scale = max|w_row| / 127, q = clamp(round(w / scale), -127, 127)   (symmetric, zero point 0)
//   fp8:  scale = max|w_row| / 448, q = float8_e4m3fn(w / scale)               (round to nearest even)
// and w ≈ q · scale. So is an untied lm_head (a tied one is the embedding, which stays in the model dtype,
// like the norms and the biases).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define LLMBENCH_TORCH_FP8 1  // torch::kFloat8_e4m3fn exists
#endif

namespace llmbench {

enum class WeightFormat { plain, int8, fp8 };

// "bf16" (the model dtype, unquantized: the name the CLI and the results use), "int8", "fp8"; UsageError
// otherwise.
WeightFormat parse_weight_format(const std::string& name);
std::string to_string(WeightFormat format);  // "bf16" | "int8" | "fp8"

// True when this libtorch has float8_e4m3fn (≥ 2.1).
bool torch_has_fp8();
// Throws the one-line UsageError of docs/quantization.md unless fp8 weights can run on `device`: a CUDA
// device of compute capability ≥ 8.9 and libtorch ≥ 2.1.
void check_fp8_supported(const torch::Device& device);

struct QuantizedTensor {
  torch::Tensor q;      // [N, K] int8 or float8_e4m3fn, same device as the input
  torch::Tensor scale;  // [N] float32
};

// float32 elements quantized per block of rows (256 MiB): bounds quantize()'s temporaries whatever N.
constexpr std::int64_t kQuantizeBlockElems = std::int64_t{1} << 26;

// w [N, K] any float dtype → per-row symmetric quantization, computed in float32 one block of rows
// (≈ block_elems elements, at least one row) at a time; the result does not depend on the block size.
QuantizedTensor quantize(const torch::Tensor& w, WeightFormat format, std::int64_t block_elems = kQuantizeBlockElems);
// q [N, K] int8/float8 and scale [N] float32 → [N, K] `dtype`: float(q) · scale, rounded once.
torch::Tensor dequantize(const torch::Tensor& q, const torch::Tensor& scale, torch::Dtype dtype);

// Replaces qkv, o, gate_up and down of every layer, and an untied lm_head, by their quantized form (their
// *_scale fields set); the plain tensors are freed one at a time. A no-op for WeightFormat::plain.
void quantize_weights(Weights& weights, WeightFormat format);

}  // namespace llmbench
