#pragma once
#include <cstdint>

#include "llmbench/cuda/kernels.h"

// The eager prefill attention's softmax in one pass, torch-free (src/cuda/prefill_softmax.cu): in place on
// the scores Q·Kᵀ [R, C] (the dtype, rows row_stride elements apart) of one query tile,
//   s = dtype(s · scale); s = lowest where the mask forbids the column; p = dtype(exp(s − max) / Σ exp)
// with the max and the sum in float: the numbers of `scores.mul_(scale)`, `masked_fill_(…, lowest)`,
// `softmax(-1, float32)` and `.to(dtype)` up to float summation order, with one read and one write of the
// scores instead of about five passes (and the float copy).
namespace llmbench::cuda {

struct PrefillSoftmaxArgs {
  DType dtype = DType::bf16;
  void* scores = nullptr;               // [R, C], C contiguous
  std::int64_t rows = 0, cols = 0, row_stride = 0;
  float scale = 1.0f;
  // Score row r is query row s0 + r % n of batch row r / rows_per_batch; its mask row is
  // allowed + batch · allowed_stride_b + (s0 + r % n) · allowed_stride_row (bool bytes, columns contiguous).
  // Columns before mask_from are allowed to every row (the mask is not read there).
  const std::uint8_t* allowed = nullptr;
  std::int64_t allowed_stride_b = 0, allowed_stride_row = 0;
  std::int64_t rows_per_batch = 1, n = 1, s0 = 0, mask_from = 0;
  // The unpadded causal triangle: query row q = s0 + r % n sees exactly columns [0, q]. The mask is then
  // not read, and the columns after q are neither loaded nor exponentiated (their probabilities are 0, as
  // the masked formula gives them). Same results bit for bit.
  bool causal = false;
};
// Columns per row this kernel takes (longer rows: the caller keeps torch's ops).
constexpr std::int64_t kPrefillSoftmaxMaxCols = 16384;
// Throws llmbench::Error on bad arguments or a failed launch. No allocation: capturable in a graph.
void prefill_softmax(const PrefillSoftmaxArgs& args, Stream stream);

}  // namespace llmbench::cuda
