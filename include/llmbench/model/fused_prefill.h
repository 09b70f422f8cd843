#pragma once
#include <torch/torch.h>

#include <cstdint>

// Prefill (S ≥ 1) counterpart of fused::rope_qkv_cache: one kernel instead of the split, transposes and
// the ~8 ops of apply_rope on q and k. On the CPU (or any tensor the kernels do not take) the plain ops,
// which give the same numbers.
namespace llmbench::fused {

struct PrefillQkv {
  torch::Tensor q;  // [B, Hq, S, D]
  torch::Tensor k;  // [B, Hkv, S, D]
  torch::Tensor v;  // [B, Hkv, S, D]
};

// Where rope_split_qkv puts its results. k / v: [B, Hkv, S, D] views with D contiguous (the KV cache's
// first S columns) that receive k and v instead of new tensors, so that no copy into the cache follows;
// seq_major_q: q laid out [B, S, Hq, D] in memory (returned as its [B, Hq, S, D] view), so that an attention
// kernel that keeps q's layout for its output (cuDNN's) returns a [B, Hq, S, D] whose [B, S, Hq·D] view
// needs no copy either.
//
// rows / columns ([B·S] int64 on qkv's device, both or neither): the packed tokens of a chunked-prefill
// step, each with its own place. k / v are then whole caches [R, Hkv, T, D] (D contiguous) and token
// i = b·S + s writes its k and v to k[rows[i], :, columns[i]] and v[rows[i], :, columns[i]], nothing where
// that is outside [0, R) × [0, T) (a decode row that is not running: column −1). The returned k / v are
// then the tokens' own [B, Hkv, S, D] values on the CPU path and undefined on the kernel path.
struct PrefillQkvDest {
  torch::Tensor k, v;
  bool seq_major_q = false;
  torch::Tensor rows, columns;
};

// qkv [B, S, (Hq + 2 Hkv) D], tables cos/sin [T_rope, D], positions [B, S] int64, bias [(Hq + 2 Hkv) D] or
// undefined (added to qkv first, as `qkv + bias`) → q and k rotated at their positions, v as is; on the
// kernel path contiguous unless `dest` says otherwise (the same values either way).
PrefillQkv rope_split_qkv(const torch::Tensor& qkv, const torch::Tensor& cos_table, const torch::Tensor& sin_table,
                          const torch::Tensor& positions, std::int64_t heads_q, std::int64_t heads_kv,
                          const torch::Tensor& bias = {}, const PrefillQkvDest& dest = {});

// Attention output a [B, H, S, D] → [B, S, H·D] (what o_proj reads): a view where a's memory is already in
// that order (cuDNN's output for a seq-major q), else one 16-byte-vector copy kernel on CUDA (torch's
// transposing copy moved ≈ 1.3 TB/s), else the plain transpose(1, 2).reshape. The same values.
torch::Tensor merge_heads(const torch::Tensor& a);

// The eager prefill's softmax for one query tile, in place: scores [B, Hkv, G·n, te] (contiguous, the model
// dtype) become dtype(softmax(mask(dtype(scores · scale)))) in float, with allowed [B or 1, 1, P or 1, ≥ te]
// bool giving query row s0 + i's mask (columns before mask_from: allowed). One CUDA kernel instead of
// mul_, masked_fill_, softmax(float32) and .to(dtype). Returns false and leaves scores untouched where the
// kernel does not apply (CPU, other layouts, rows over 16,384 columns): the caller runs those ops.
// triangle: the caller knows allowed is the unpadded causal triangle (query row s0 + i sees columns
// [0, s0 + i]), so the kernel need not read it and skips the columns after each row's last (same results).
bool prefill_softmax_(torch::Tensor& scores, const torch::Tensor& allowed, std::int64_t n, std::int64_t s0,
                      std::int64_t mask_from, double scale, bool triangle = false);

}  // namespace llmbench::fused
