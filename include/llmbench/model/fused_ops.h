#pragma once
#include <cstdint>

#include <torch/torch.h>

// The decode step's fused ops: on CUDA tensors of a CUDA build they run the kernels of
// llmbench/cuda/kernels.h on the current stream (no host sync, no per-step host values: graph
// capturable); anywhere else they run the plain torch ops they replace, so every function works on
// every build. Both paths give the same numbers within float-accumulation-order noise.
// Bad dtypes, shapes or layouts throw llmbench::Error.
namespace llmbench::fused {

// True when `t` would take the CUDA kernels (CUDA build, CUDA tensor, float32/float16/bfloat16).
bool uses_kernels(const torch::Tensor& t);

// x [..., H] → rms_norm(x) · weight [H] (HF order: float, rsqrt, round, · weight), a new tensor.
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// The residual add and the next norm in one pass, both in place:
// residual [..., H] += x [..., H] (rounded to the dtype), then x ← rms_norm(residual) · weight [H].
void add_rms_norm_(torch::Tensor& x, torch::Tensor& residual, const torch::Tensor& weight, double eps);

// add_rms_norm_ with x given as a split-K GEMM's partial products (llmbench/model/linear.h,
// linear_partials): partials [S, ..., H] float32 (the leading dims of residual), x = their sum in split
// order rounded once to residual's dtype; residual [..., H] += x, and returns rms_norm(residual) · weight [H]
// (a new tensor shaped like residual). One kernel where add_rms_norm_ needs the GEMM's reduce kernel first.
torch::Tensor add_rms_norm_partials(const torch::Tensor& partials, torch::Tensor& residual, const torch::Tensor& weight,
                                    double eps);

// gate_up [..., 2I] (gate | up, as the fused gate_up weight produces) → [..., I] = silu(gate) · up.
torch::Tensor silu_mul(const torch::Tensor& gate_up);

// One decode token per row (S = 1): qkv [B, 1, (Hq + 2 Hkv) D] or [B, (Hq + 2 Hkv) D], plus bias
// [(Hq + 2 Hkv) D] when defined; RoPE from the tables cos/sin [T_rope, D] at positions [B] int64
// (device); writes rotated k and raw v into keys/values [B, Hkv, T_max, D] (cache views, D contiguous)
// at column (device int64: [1] for every row, or [B] one per row; a row whose column is outside
// [0, T_max) writes nothing). Returns rotated q [B, Hq, D].
// An fp8 cache (keys/values float8 e4m3) takes its scales k_scale/v_scale [B, Hkv] float32: k and v are
// rounded to the dtype first, then stored as quantize_kv (llmbench/model/kv_cache.h) does, bit for bit.
torch::Tensor rope_qkv_cache(const torch::Tensor& qkv, const torch::Tensor& bias, const torch::Tensor& cos_table,
                             const torch::Tensor& sin_table, const torch::Tensor& positions,
                             const torch::Tensor& column, torch::Tensor& keys, torch::Tensor& values,
                             std::int64_t heads_q, std::int64_t heads_kv, const torch::Tensor& k_scale = {},
                             const torch::Tensor& v_scale = {});

// Decode attention over the whole cache: q [B, Hq, D], keys/values [B, Hkv, T_max, D], valid [B, T_max]
// bool or uint8 (true: attend) → [B, Hq, D]. Same numbers as attention(AttnImpl::eager, ...) with the
// mask valid.view({B, 1, 1, T_max}).
// An fp8 cache takes its scales k_scale/v_scale [B, Hkv] float32. The plain ops then attend over
// dequantize_kv(keys/values) (each element rounded to the dtype); the kernel dequantizes and rounds each
// element the same way in registers, so the two differ by float summation order only.
// `written_column` [B] int64 (optional): the column of each row that the op just before this call wrote
// (rope_qkv_cache's `column`), with no valid column after it; the kernel may then read the rest of the cache
// before that op ends, and reads nothing past it.
torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& values,
                               const torch::Tensor& valid, const torch::Tensor& k_scale = {},
                               const torch::Tensor& v_scale = {}, const torch::Tensor& written_column = {});
// Whether decode_attention on a [batch, heads_q, head_dim] query like `like` (its device and dtype) over
// [batch, heads_kv, t_max, head_dim] runs the tensor-core (mma) kernel; false where no kernel runs (CPU).
bool decode_attention_uses_mma(const torch::Tensor& like, std::int64_t batch, std::int64_t heads_q,
                               std::int64_t heads_kv, std::int64_t head_dim, std::int64_t t_max);

}  // namespace llmbench::fused
