#pragma once
#include <cstddef>
#include <cstdint>

// Fused CUDA kernels for the decode step, torch-free: raw device pointers, element strides and a
// stream. Each kernel reproduces the rounding order of the plain torch ops it replaces (every
// intermediate torch materialises in the model dtype is rounded to it here too), so the fused path
// matches the plain path within float-accumulation-order noise. Launchers throw llmbench::Error on
// bad arguments or a failed launch. Nothing reads per-step values from the host: a launch can be
// captured in a CUDA graph and replayed while the device tensors it reads change.
struct CUstream_st;

namespace llmbench::cuda {

using Stream = CUstream_st*;  // the same type as cudaStream_t

enum class DType { f32, f16, bf16 };

// KV cache storage: the activation dtype, or float8 e4m3 with a float32 scale per (batch row, kv head):
// stored q = e4m3(clamp(x / scale, ±448)) (round to nearest even), read x ≈ float(q) · scale.
enum class KvType { act, fp8_e4m3 };

// out [N, H] = rms_norm(x [N, H]) · weight [H]: x in float, · rsqrt(mean(x²) + eps), rounded to the
// dtype, then · weight rounded again (HF's order). Rows contiguous; out may alias x.
void rms_norm(DType dtype, void* out, const void* x, const void* weight, std::int64_t rows, std::int64_t hidden,
              float eps, Stream stream);

// residual [N, H] += x [N, H] (rounded to the dtype), then out [N, H] = rms_norm(residual) · weight [H].
// out may alias x (each element of x is read before the same thread writes it).
void add_rms_norm(DType dtype, void* out, void* residual, const void* x, const void* weight, std::int64_t rows,
                  std::int64_t hidden, float eps, Stream stream);

// The same with x = the sum of a split-K GEMM's float partial products partials [S, N, H] (float32, summed
// in split order, rounded to the dtype once: what a split-K GEMM with a float reduction writes). Saves the
// GEMM's separate reduce kernel. H a multiple of 16 bytes / element size, pointers 16-byte aligned.
void add_rms_norm_partials(DType dtype, void* out, void* residual, const float* partials, int splits,
                           const void* weight, std::int64_t rows, std::int64_t hidden, float eps, Stream stream);

// Attention output heads [B, H, S, D] (strides sb, sh, ss elements, D contiguous) → out [B, S, H·D]
// contiguous: the prefill's transpose before o_proj, in 16-byte vectors (D, the strides and both pointers
// must be multiples of 16 bytes).
void merge_heads(DType dtype, void* out, const void* heads, std::int64_t batch, std::int64_t n_heads, std::int64_t seq,
                 std::int64_t head_dim, std::int64_t sb, std::int64_t sh, std::int64_t ss, Stream stream);
// LLMBENCH_PREFILL_KERNELS: session 23's prefill kernels (default) or, with 0, those before them (A/B).
bool prefill_kernels_enabled();

// gate_up [N, 2I] (gate | up) → out [N, I] = dtype(silu(gate)) · up, silu computed in float.
void silu_mul(DType dtype, void* out, const void* gate_up, std::int64_t rows, std::int64_t inter, Stream stream);

// One decode token (S = 1) per row: bias, RoPE (rotate_half layout) on q and k, q out, k/v into the cache.
struct RopeQkvArgs {
  DType dtype = DType::bf16;
  const void* qkv = nullptr;          // [B, (Hq + 2 Hkv) D], rows qkv_row_stride elements apart
  std::int64_t qkv_row_stride = 0;
  const void* bias = nullptr;         // [(Hq + 2 Hkv) D] or null; added (rounded) before RoPE
  const void* cos = nullptr;          // [rope_len, D] contiguous
  const void* sin = nullptr;          // [rope_len, D] contiguous
  std::int64_t rope_len = 0;
  const std::int64_t* positions = nullptr;  // [B] device: each row's position id (clamped into the table)
  const std::int64_t* column = nullptr;     // device: row b writes cache column column[b · column_stride]
  std::int64_t column_stride = 0;           // 0: one column [1] for all rows, 1: a column per row [B]
                                            // (out of range: that row writes nothing)
  void* q_out = nullptr;              // [B, Hq, D] contiguous
  void* k_cache = nullptr;            // [B, Hkv, T_max, D], strides below, D contiguous
  void* v_cache = nullptr;            // [B, Hkv, T_max, D], same strides as k_cache
  std::int64_t cache_stride_b = 0, cache_stride_h = 0, cache_stride_t = 0;
  KvType kv = KvType::act;            // fp8: k (rounded to the dtype after RoPE) and v (after the bias) quantized
  const float* k_scale = nullptr;     // fp8: [B, Hkv] float32, rows scale_stride_b apart, heads contiguous
  const float* v_scale = nullptr;     // fp8: [B, Hkv] float32, same strides
  std::int64_t scale_stride_b = 0;
  std::int64_t max_len = 0;           // T_max
  int batch = 0, heads_q = 0, heads_kv = 0, head_dim = 0;
};
void rope_qkv_cache(const RopeQkvArgs& args, Stream stream);

// Decode attention (S = 1) over the whole preallocated cache (any length), split along T (flash-decoding)
// so that a batch of 1 still fills the GPU; K and V are each read once per kv head for all its query
// heads (up to 8 per block). Same numbers as the eager path: scores rounded to the dtype after
// Q·Kᵀ and after · scale, invalid columns set to the dtype's lowest value, softmax in float, probs
// rounded to the dtype, ·V accumulated in float. GQA: query head h reads kv head h / (Hq / Hkv).
// An fp8 cache: Q·Kᵀ is Σ q · float(k8) times the row's k scale, ·V is Σ p · float(v8) times its v scale
// (the eager path on the dequantized cache rounds every k and v to the dtype first: that rounding is
// the only difference).
// Two kernels compute it (the plan picks one):
//   split: three launches (scores, P·V, combine) with float FMAs; 16 bytes per load (8 for fp8); any dtype.
//   mma:   one launch on tensor cores; the splits of a row form a thread-block cluster that merges
//          its softmax statistics and partial sums on chip (no workspace); tiles of 16 columns with no
//          valid column read no K or V. bf16/fp16, head_dim 64 or 128, compute capability 9.0+, at most
//          8 splits of at most 2048 columns.
struct DecodeAttnArgs {
  DType dtype = DType::bf16;
  const void* q = nullptr;            // [B, Hq, D] contiguous
  const void* k = nullptr;            // [B, Hkv, T_max, D], strides below, D contiguous
  const void* v = nullptr;            // [B, Hkv, T_max, D], same strides as k
  std::int64_t kv_stride_b = 0, kv_stride_h = 0, kv_stride_t = 0;
  KvType kv = KvType::act;
  const float* k_scale = nullptr;     // fp8: [B, Hkv] float32, rows scale_stride_b apart, heads contiguous
  const float* v_scale = nullptr;     // fp8: [B, Hkv] float32, same strides
  std::int64_t scale_stride_b = 0;
  const std::uint8_t* valid = nullptr;  // [B, T_max] bool/uint8, rows valid_stride_b apart (1: attend)
  std::int64_t valid_stride_b = 0;
  // Optional: the cache column the kernel just before this one in the stream writes, per row ([B] int64,
  // column_stride 1, or one for all rows, 0): the row's newest column, after which none is valid. Given, the
  // mma kernel reads the other columns of its first tile while that kernel still runs (programmatic dependent
  // launch) and this one after it ends, and visits no tile past it (unless LLMBENCH_ATTN_BOUND=0): a row in
  // a longer cache bucket costs its own length. That kernel must write the cache at this column only, and
  // neither `column` nor `valid`.
  const std::int64_t* column = nullptr;
  std::int64_t column_stride = 0;
  void* out = nullptr;                // [B, Hq, D] contiguous
  std::int64_t max_len = 0;           // T_max
  int batch = 0, heads_q = 0, heads_kv = 0, head_dim = 0;
  float scale = 0;                    // 1/√D
};

enum class DecodeAttnKernel { automatic, split, mma };

// The launch configuration: a pure function of the shapes and the GPU, so it is the same for every
// replay of a graph captured for (B, T_max).
struct DecodeAttnPlan {
  DecodeAttnKernel kernel = DecodeAttnKernel::split;  // never automatic
  int splits = 1;                     // blocks along T per (row, kv head group)
  std::int64_t chunk = 0;             // columns per split
  std::size_t workspace_bytes = 0;    // device scratch decode_attention needs
};
// `kernel` automatic: mma where it applies, else split; asking for mma where it does not apply throws.
// `force_splits` > 0: that many splits (capped by the columns; for mma also by its limits), for
// benchmarks that compare plans.
DecodeAttnPlan plan_decode_attention(DType dtype, int batch, int heads_q, int heads_kv, int head_dim,
                                     std::int64_t max_len, int sm_count, int force_splits = 0,
                                     DecodeAttnKernel kernel = DecodeAttnKernel::automatic);
// An mma plan's thread-block clusters (of plan.splits blocks) that the current device holds at once; 0 for
// other plans or where unknown. More clusters than that in the grid run as a second wave.
int decode_attention_resident_clusters(DType dtype, int head_dim, const DecodeAttnPlan& plan);
// `workspace`: at least plan.workspace_bytes of device memory, 256-byte aligned; contents don't matter.
void decode_attention(const DecodeAttnArgs& args, const DecodeAttnPlan& plan, void* workspace, Stream stream);

// Multiprocessors of the current device (cached per device).
int sm_count();

}  // namespace llmbench::cuda
