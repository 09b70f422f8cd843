#pragma once
#include <cstdint>
#include <string>

#include <torch/torch.h>

// The matmul of every decoder weight, whatever its storage: y = x · Wᵀ (+ bias), with W in the model
// dtype, or int8 / float8 e4m3 with per-output-channel scales (llmbench/model/quantize.h). Paths:
//   GEMV kernel     CUDA, x with at most cuda::kGemvMaxRows rows (the decode step), when enabled
//                   (tensor cores or CUDA cores: gemv_uses_mma);
//   plain           torch::linear on W; for quantized weights x · dequantize(W, scale)ᵀ, dequantizing W in
//                   equal blocks of rows of at most dequant_block_elems weights into the model dtype, so a
//                   large weight (gate_up, an untied lm_head) never exists whole in the model dtype;
//   scaled_mm       fp8 weights with more rows, when chosen: x quantized per row to fp8, torch::_scaled_mm
//                   (libtorch ≥ 2.5, CUDA, bf16 activations, K and N multiples of 16; else plain).
namespace llmbench {

enum class Fp8Gemm { dequant, scaled_mm };

// "dequant" | "scaled-mm"; UsageError otherwise.
Fp8Gemm parse_fp8_gemm(const std::string& name);
const char* to_string(Fp8Gemm gemm);

// Weights dequantized per block by the plain path of quantized weights, at most: 80 Mi (160 MiB in bf16).
// Large enough that qkv, o and down stay one GEMM and gate_up two halves (Qwen2.5-7B, Llama-3-8B), so the
// prefill's GEMMs keep their shapes; an untied lm_head goes in about 7.
constexpr std::int64_t kDequantBlockElems = std::int64_t{80} << 20;

struct LinearPaths {
  bool gemv = false;                     // the CUDA GEMV kernel for small row counts
  Fp8Gemm fp8_gemm = Fp8Gemm::dequant;   // fp8 weights beyond the GEMV's rows
  std::int64_t dequant_block_elems = kDequantBlockElems;  // plain path of quantized weights (at least one row)
};

// x [..., K] (model dtype), w [N, K] (model dtype; or int8/float8 with scale [N] float32), bias [N] (model
// dtype) or undefined → [..., N] model dtype.
// On CUDA (unless LLMBENCH_GEMM=torch), the model-dtype (bf16/fp16) matmuls that the GEMV does not take run
// through cuBLASLt with the fastest of its algorithms per shape (llmbench/cuda/lt_gemm.h): up to 256 rows
// (decode steps) always, more rows (prefills) where tune_lt_gemm timed their row bucket; the others, and every
// matmul with LLMBENCH_GEMM=torch, run torch's GEMM.
// True when that cuBLASLt path is on: CUDA builds with LLMBENCH_GEMM unset or lt (UsageError for a value other
// than torch or lt).
bool lt_gemm_requested();
// With the cuBLASLt path on (lt_gemm_requested) and w [N, K] in the model dtype on CUDA: one matmul of `rows`
// random rows through it, which times cuBLASLt's candidates for that shape (above 64 rows: its power-of-two
// row bucket) and keeps the fastest, so that later matmuls of w with that many rows take cuBLASLt. A no-op
// otherwise (CPU, quantized w, lt off).
void tune_lt_gemm(const torch::Tensor& w, std::int64_t rows);
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                     const torch::Tensor& bias, const LinearPaths& paths);

// The decode step's o and down projections with their split-K reduction left to the next RMSNorm
// (fused::add_rms_norm_partials, one kernel fewer per matmul): where linear(x, w) would run cuBLASLt (model-dtype
// w, no bias, not the GEMV) and LLMBENCH_SPLITK_FUSE allows it (unset or auto: at most 8 rows, where cuBLASLt's
// chosen algorithm splits K, with its split count S, or the largest count below S that cuts K into slices of
// whole 16-byte vectors; N = 2 … 16: N splits at up to 64 rows, A/B runs; 0: never), the float partial
// products [S, M, N] (llmbench/cuda/lt_gemm.h, lt_gemm_partials); else an
// undefined tensor, and the caller runs linear(). UsageError for another LLMBENCH_SPLITK_FUSE value.
torch::Tensor linear_partials(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                              const torch::Tensor& bias, const LinearPaths& paths);

// True when linear(x, w, ...) takes the GEMV kernel: paths.gemv on, CUDA, 1 to 16 rows, and for weights
// in the model dtype (no scale) only one row (LLMBENCH_GEMV_MODEL_DTYPE=wide: one row of a wide matrix,
// N ≥ 4 K) unless LLMBENCH_GEMV_KERNEL forces a kernel (cuBLAS measured as fast or faster at more rows).
bool gemv_applies(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                  const torch::Tensor& bias, const LinearPaths& paths);
// True when linear(x, w, ...) takes the GEMV kernel on tensor cores (the mma kernel of
// llmbench/cuda/gemv.h: bf16/fp16, K a multiple of 32 (bf16 W) or 64 (int8/fp8), sm_80+; int8 and
// bf16 weights at batch 1 take the simt kernel unless forced), honouring
// LLMBENCH_GEMV_KERNEL=auto|simt|mma (forces a kernel for A/B runs; mma where it cannot run: Error).
bool gemv_uses_mma(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                   const torch::Tensor& bias, const LinearPaths& paths);
// True when this build and libtorch can run the scaled_mm path at all.
bool scaled_mm_available();

}  // namespace llmbench
