#pragma once
#include <cstdint>
#include <optional>

#include "llmbench/cuda/kernels.h"

// y [M, N] = x [M, K] · W [N, K]ᵀ (+ bias [N]) in bf16 or fp16 with float accumulation, through cuBLASLt with
// an algorithm chosen per shape, torch-free (src/cuda/lt_gemm.cu). cuBLASLt's heuristic offers several
// algorithms per shape and torch runs its first; on the H200 another one was 2–9 % faster for many of the
// decode and prefill shapes of Qwen2.5-7B (docs/performance.md, session 18). So the first call of a shape
// times every candidate (two warm-up and five timed calls each, on the caller's stream, with a host sync)
// and remembers the fastest; later calls run it. Where timing would mislead, the heuristic's first choice is
// remembered untimed: W smaller than kLtTuneMinWeightBytes at fewer than kLtTuneMinRows rows (W would stay in
// L2 between the timed calls, which a decode step never sees). Up to 64 rows a row count is its own shape;
// more rows share the choice of their power-of-two bucket (65–128, 129–256, …), run where
// cublasLtMatmulAlgoCheck accepts it, so that a server meeting new prompt lengths times each bucket once, not
// each length; where it does not, lt_gemm returns false (the caller's GEMM: torch's) rather than asking the
// heuristic again at every call (LLMBENCH_LT_UNFIT=heuristic: its first candidate, as before session 30). While the stream captures a CUDA graph the
// first choice runs and nothing is remembered (a later call outside the capture times the shape); llmbench's
// graphs are captured after eager warm-up steps of the same shapes, which time them first. Every candidate
// computes the same products; only the summation order differs (split-K candidates only with float partial
// sums: cuBLASLt's in-place and output-type reductions would round them to bf16/fp16). linear() sends
// matmuls of up to 256 rows here (unless LLMBENCH_GEMM=torch), and more rows where tune_lt_gemm timed their bucket
// (llmbench/model/linear.h). One cuBLASLt handle and one 32 MiB workspace
// per device, kept for the life of the process and allocated by the device's first call outside a capture
// (a first call inside one returns false): calls on different streams of one device must not overlap on the
// GPU (llmbench runs each device's work in one stream order).
namespace llmbench::cuda {

constexpr std::int64_t kLtTuneMinWeightBytes = std::int64_t{64} << 20;
constexpr std::int64_t kLtTuneMinRows = 256;

struct LtGemmArgs {
  DType dtype = DType::bf16;      // f16 or bf16: x, W, bias and y
  const void* x = nullptr;        // [M, K], rows x_stride elements apart, K contiguous
  std::int64_t x_stride = 0;
  const void* w = nullptr;        // [N, K] contiguous
  const void* bias = nullptr;     // [N] or null
  void* y = nullptr;              // [M, N] contiguous
  std::int64_t m = 0, n = 0, k = 0;
};

// What the first call of a shape chose.
struct LtChoice {
  int index = 0;         // among the heuristic's candidates (0: its first choice)
  int candidates = 0;    // candidates the heuristic offered
  double first_us = 0;   // the first candidate's µs per call when timed
  double chosen_us = 0;  // the chosen one's
};

// Runs the GEMM. False when cuBLASLt offers no algorithm for it, a pointer is not 16-byte aligned or K, N or
// x_stride is not a multiple of 8, or the device's first call is inside a graph capture (the caller then runs
// its own path); throws
// llmbench::Error on bad arguments or a failed call.
bool lt_gemm(const LtGemmArgs& args, Stream stream);

// The split-K count of the algorithm remembered for the shape of `args` (its row bucket): 0 when nothing is
// remembered yet, 1 when it does not split K. Where it splits, cuBLASLt runs a separate kernel that sums
// the float partial products and rounds them to y's dtype.
int lt_split_k(const LtGemmArgs& args);

// The partial products of that split, left for the caller to reduce (cuda::add_rms_norm_partials folds the
// sum into the next RMSNorm: one kernel fewer): partials [S, M, N] float32, partials[s] = x[:, sK/S, (s+1)K/S)
// · W[:, same]ᵀ, as one strided-batched cuBLASLt matmul (the heuristic's first algorithm without a split-K
// of its own, remembered per shape and S). args.y is ignored; no bias. False where it does not apply
// (S < 2, K not a multiple of 8 S, N or x_stride not a multiple of 8, a pointer not 16-byte aligned, no
// algorithm, or the device's first cuBLASLt call is inside a graph capture).
bool lt_gemm_partials(const LtGemmArgs& args, int splits, float* partials, Stream stream);

// The remembered choice for the shape (or row bucket) of `args`, pointers ignored: timed, or the first
// candidate kept untimed (first_us = chosen_us = 0).
std::optional<LtChoice> lt_choice(const LtGemmArgs& args);

}  // namespace llmbench::cuda
