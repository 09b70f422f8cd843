#pragma once
#include <cstdint>

#include "llmbench/cuda/kernels.h"

// Decode GEMV for small batches, torch-free (src/cuda/gemv.cu):
//   y [B, N] = x [B, K] · (W [N, K] · scale [N])ᵀ (+ bias [N]),  1 ≤ B ≤ kGemvMaxRows
// with W in the activation dtype, int8 or float8 e4m3 (per-row float scale). Each warp streams a few
// rows of W with 16-byte loads and keeps B accumulators per row in float; x is read through the L1
// cache, which all blocks of an SM share. The output is float(acc · scale + bias) rounded once to the
// activation dtype. No host sync and no allocation: capturable in a CUDA graph.
namespace llmbench::cuda {

enum class WeightType { act, int8, fp8_e4m3 };  // act: the same dtype as x (no scale)

constexpr int kGemvMaxRows = 16;

struct GemvArgs {
  DType dtype = DType::bf16;            // x, y, bias (and W when weight == act)
  WeightType weight = WeightType::act;
  const void* x = nullptr;              // [B, K], rows x_stride elements apart, K contiguous
  std::int64_t x_stride = 0;
  const void* w = nullptr;              // [N, K] contiguous
  const float* scale = nullptr;         // [N] float32: required for int8/fp8, ignored for act
  const void* bias = nullptr;           // [N] in dtype, or null
  void* y = nullptr;                    // [B, N], rows y_stride elements apart
  std::int64_t y_stride = 0;
  int batch = 0;                        // B in [1, kGemvMaxRows]
  std::int64_t n = 0, k = 0;
};
// Throws llmbench::Error on bad arguments (B out of range, null pointers) or a failed launch.
void gemv(const GemvArgs& args, Stream stream);

// out [N, K] (dtype) = float(q [N, K]) · scale [N], rounded once; q int8 or float8 e4m3, contiguous.
void dequantize(DType dtype, WeightType weight, void* out, const void* q, const float* scale, std::int64_t rows,
                std::int64_t cols, Stream stream);

}  // namespace llmbench::cuda
