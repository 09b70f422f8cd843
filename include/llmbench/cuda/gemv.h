#pragma once
#include <cstdint>

#include "llmbench/cuda/kernels.h"

// Decode GEMV for small batches, torch-free (src/cuda/gemv.cu):
//   y [B, N] = x [B, K] · (W [N, K] · scale [N])ᵀ (+ bias [N]),  1 ≤ B ≤ kGemvMaxRows
// with W in the activation dtype, int8 or float8 e4m3 (per-row float scale). Two kernels:
//   mma   (bf16/fp16 activations, K a multiple of 64 / 16-byte W element size, sm_80+): 16 rows of W
//         per block (or per cluster of up to 8 blocks on sm_90, which split K so that a tall-K or small
//         matrix still fills the GPU), its warps splitting K again; each warp streams its rows with
//         16-byte loads and multiplies them on tensor cores (m16n8k16, W converted to the activation
//         dtype, exact for int8 and e4m3), the batch in the MMA's n dimension; partial sums meet in
//         shared memory, then distributed shared memory.
//   simt  everything else: each group of 1–8 warps owns a few rows and keeps B float accumulators per
//         row, the group's warps splitting K (a tall-K matrix: more warps, more bytes in flight).
// automatic: simt for int8 and model-dtype weights at batch 1 (measured faster on the H200, with its K
// split), mma elsewhere (fp8 at batch 1 included) where it applies. Both read x through the L1 cache,
// accumulate in float and write float(acc · scale + bias) rounded once to the activation dtype. Launched
// with programmatic dependent launch (sm_90; see src/cuda/common.cuh), each block first pulls its rows of
// W into L2 (up to 32 MiB per launch), which do not depend on the kernel still running before it. No
// host sync and no allocation: capturable in a CUDA graph.
namespace llmbench::cuda {

enum class WeightType { act, int8, fp8_e4m3 };  // act: the same dtype as x (no scale)
enum class GemvKernel { automatic, simt, mma };

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
  GemvKernel kernel = GemvKernel::automatic;  // mma when it does not apply: Error
  // How many split K, 0: chosen by size. mma: blocks (a cluster, sm_90) per 16-row tile, 1 … 8; simt:
  // warps per row group, 1, 2, 4 or 8.
  int splits = 0;
  // simt: rows of W per warp, 0: chosen (4, but 2 at B ≤ 2 for model-dtype and fp8 W); 2 or 4 at B ≤ 2
  // forces one (A/B runs; 16-byte path), above B = 2 always 4.
  int rows = 0;
  // mma: each warp's last steps (fewer than its unroll) one at a time, as before session 12 (A/B runs);
  // false: as one more unrolled round, their loads in flight together.
  bool mma_serial_tail = false;
  // mma: each warp's next steps of W in flight through a ring of this many slots in shared memory
  // (cp.async, 16 bytes per lane and row: no registers held while they load); 0: in registers, 4 steps
  // at a time. 0, 4, 8 or 12; -1 (default): 0; -2: a ring for the small matrices only (qkv, o; the rule in
  // mma_ring, gemv.cu: measured per matrix with bench_gemv, not yet in the decode step).
  int mma_ring = -1;
  // mma, splits chosen (splits == 0): 2 splits for any matrix with fewer row tiles than 2 per SM (o and
  // down of Qwen2.5-7B and Llama-3-8B), 1 otherwise; true: only where K is also tall (≥ 256 steps: down),
  // the rule before session 25 (A/B runs).
  bool mma_split_tall_only = false;
};

// The kernel gemv(args) runs: simt or mma (never automatic).
GemvKernel gemv_kernel(const GemvArgs& args);
// Blocks (a cluster) per 16-row tile the mma kernel uses for these arguments: args.splits when set, else
// the rule of GemvArgs::mma_split_tall_only; 1 below compute capability 9.0.
int gemv_mma_splits(const GemvArgs& args);
// "auto" | "simt" | "mma"; Error otherwise.
GemvKernel parse_gemv_kernel(const char* name);
// Throws llmbench::Error on bad arguments (B out of range, null pointers) or a failed launch.
void gemv(const GemvArgs& args, Stream stream);

// out [N, K] (dtype) = float(q [N, K]) · scale [N], rounded once; q int8 or float8 e4m3, contiguous.
void dequantize(DType dtype, WeightType weight, void* out, const void* q, const float* scale, std::int64_t rows,
                std::int64_t cols, Stream stream);

}  // namespace llmbench::cuda
