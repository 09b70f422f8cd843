#include "llmbench/model/fused_prefill.h"

#include <sstream>

#include "llmbench/base/error.h"
#include "llmbench/model/fused_ops.h"
#include "llmbench/model/rope.h"

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "llmbench/cuda/prefill_softmax.h"
#include "llmbench/cuda/rope_prefill.h"
#include "kernel_dtype.h"
#endif

namespace llmbench::fused {

namespace {

std::string shape(const torch::Tensor& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

}  // namespace

PrefillQkv rope_split_qkv(const torch::Tensor& qkv, const torch::Tensor& cos_table, const torch::Tensor& sin_table,
                          const torch::Tensor& positions, std::int64_t heads_q, std::int64_t heads_kv,
                          const torch::Tensor& bias, const PrefillQkvDest& dest) {
  const char* op = "fused rope_split_qkv";
  if (qkv.dim() != 3 || cos_table.dim() != 2 || sin_table.sizes() != cos_table.sizes())
    throw Error(cat(op, ": qkv ", shape(qkv), " / cos ", shape(cos_table), " / sin ", shape(sin_table),
                    " are not [B, S, N] / [T, D] / [T, D]"));
  const auto b = qkv.size(0), s = qkv.size(1), d = cos_table.size(1);
  if (qkv.size(2) != (heads_q + 2 * heads_kv) * d)
    throw Error(cat(op, ": qkv ", shape(qkv), " does not hold ", heads_q, " + 2 × ", heads_kv, " heads of ", d));
  if (positions.sizes() != torch::IntArrayRef({b, s}) || positions.scalar_type() != torch::kInt64)
    throw Error(cat(op, ": positions ", shape(positions), " must be [", b, ", ", s, "] int64"));
  if (cos_table.scalar_type() != qkv.scalar_type() || sin_table.scalar_type() != qkv.scalar_type())
    throw Error(cat(op, ": the tables are ", cos_table.scalar_type(), " but qkv is ", qkv.scalar_type()));
  if (cos_table.device() != qkv.device() || sin_table.device() != qkv.device() || positions.device() != qkv.device())
    throw Error(cat(op, ": tables or positions are not on ", qkv.device()));

  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != qkv.size(2) || bias.scalar_type() != qkv.scalar_type() ||
                         bias.device() != qkv.device()))
    throw Error(cat(op, ": bias ", shape(bias), " ", bias.scalar_type(), " is not [", qkv.size(2), "] ",
                    qkv.scalar_type(), " on ", qkv.device()));

  const std::vector<std::int64_t> kv_shape{b, heads_kv, s, d};
  if (dest.k.defined() != dest.v.defined())
    throw Error(cat(op, ": give both k and v destinations or neither"));
  const bool scatter = dest.rows.defined() || dest.columns.defined();
  if (scatter) {
    if (!dest.k.defined()) throw Error(cat(op, ": per-token places need the k and v caches"));
    for (const torch::Tensor* t : {&dest.rows, &dest.columns})
      if (!t->defined() || t->dim() != 1 || t->size(0) != b * s || t->scalar_type() != torch::kInt64 ||
          t->device() != qkv.device())
        throw Error(cat(op, ": rows / columns must both be [", b * s, "] int64 on ", qkv.device()));
  }
  for (const torch::Tensor* t : {&dest.k, &dest.v}) {
    if (!t->defined()) continue;
    const bool fits = scatter ? t->dim() == 4 && t->size(1) == heads_kv && t->size(3) == d && t->sizes() == dest.k.sizes()
                              : t->sizes() == torch::IntArrayRef(kv_shape);
    if (!fits || t->scalar_type() != qkv.scalar_type() || t->device() != qkv.device() || t->stride(3) != 1)
      throw Error(cat(op, ": a k/v destination ", shape(*t), " ", t->scalar_type(), " is not [",
                      scatter ? "R" : std::to_string(b), ", ", heads_kv, ", ", scatter ? "T" : std::to_string(s), ", ",
                      d, "] ", qkv.scalar_type(), " on ", qkv.device(), " with D contiguous"));
  }

  if (!uses_kernels(qkv)) {  // Decoder::layer's ops
    const torch::Tensor x = bias.defined() ? qkv + bias : qkv;  // [B, S, N]
    auto parts = x.split({heads_q * d, heads_kv * d, heads_kv * d}, -1);
    torch::Tensor flat = positions.reshape({-1}).clamp(0, cos_table.size(0) - 1);         // [B·S]
    torch::Tensor cos = cos_table.index_select(0, flat).view({b, 1, s, d});               // [B, 1, S, D]
    torch::Tensor sin = sin_table.index_select(0, flat).view({b, 1, s, d});               // [B, 1, S, D]
    PrefillQkv out{apply_rope(parts[0].view({b, s, heads_q, d}).transpose(1, 2), cos, sin),   // [B, Hq, S, D]
                   apply_rope(parts[1].view({b, s, heads_kv, d}).transpose(1, 2), cos, sin),  // [B, Hkv, S, D]
                   parts[2].view({b, s, heads_kv, d}).transpose(1, 2)};                       // [B, Hkv, S, D]
    if (scatter) {  // each token's k / v (as [B·S, Hkv, D]) into its place, where that is inside the cache
      const torch::Tensor keep = dest.rows.ge(0) & dest.rows.lt(dest.k.size(0)) & dest.columns.ge(0) &
                                 dest.columns.lt(dest.k.size(2));                  // [B·S] bool
      const torch::Tensor idx = keep.nonzero().view({-1});                         // [M]
      const auto at = [&](const torch::Tensor& t) { return t.index_select(0, idx); };
      using torch::indexing::Slice;
      torch::Tensor keys = dest.k, values = dest.v;  // [R, Hkv, T, D]
      keys.index_put_({at(dest.rows), Slice(), at(dest.columns)},
                      at(out.k.permute({0, 2, 1, 3}).reshape({b * s, heads_kv, d})));  // [M, Hkv, D]
      values.index_put_({at(dest.rows), Slice(), at(dest.columns)},
                        at(out.v.permute({0, 2, 1, 3}).reshape({b * s, heads_kv, d})));
    } else if (dest.k.defined()) {
      out.k = dest.k.copy_(out.k);
      out.v = dest.v.copy_(out.v);
    }
    return out;
  }
#ifdef LLMBENCH_WITH_CUDA
  torch::Tensor x = qkv.reshape({b * s, qkv.size(2)});                                    // [B·S, N]
  if (x.stride(1) != 1) x = x.contiguous();
  const torch::Tensor cos = cos_table.contiguous(), sin = sin_table.contiguous();
  const torch::Tensor pos = positions.contiguous();
  c10::cuda::CUDAGuard guard(qkv.device());
  PrefillQkv out;
  out.q = dest.seq_major_q ? torch::empty({b, s, heads_q, d}, qkv.options()).transpose(1, 2)  // [B, Hq, S, D] view
                           : torch::empty({b, heads_q, s, d}, qkv.options());                // [B, Hq, S, D]
  out.k = dest.k.defined() ? dest.k : torch::empty(kv_shape, qkv.options());  // [B, Hkv, S, D] or the cache
  out.v = dest.v.defined() ? dest.v : torch::empty(kv_shape, qkv.options());
  auto strides = [](const torch::Tensor& t) {
    return cuda::HeadMajorStrides{t.stride(0), t.stride(1), t.stride(2)};
  };
  cuda::RopePrefillArgs a;
  a.dtype = kernel_dtype(qkv);
  a.qkv = x.data_ptr();
  a.qkv_stride = x.stride(0);
  const torch::Tensor b_c = bias.defined() ? bias.contiguous() : bias;
  a.bias = b_c.defined() ? b_c.data_ptr() : nullptr;
  a.cos = cos.data_ptr();
  a.sin = sin.data_ptr();
  a.rope_len = cos.size(0);
  a.positions = pos.data_ptr<std::int64_t>();
  a.q = out.q.data_ptr();
  a.k = out.k.data_ptr();
  a.v = out.v.data_ptr();
  a.q_strides = strides(out.q);
  a.k_strides = strides(out.k);
  a.v_strides = strides(out.v);
  torch::Tensor rows, columns;
  if (scatter) {
    rows = dest.rows.contiguous();
    columns = dest.columns.contiguous();
    a.kv_row = rows.data_ptr<std::int64_t>();
    a.kv_col = columns.data_ptr<std::int64_t>();
    a.kv_rows = out.k.size(0);
    a.kv_cols = out.k.size(2);
  }
  a.batch = b;
  a.seq = s;
  a.heads_q = static_cast<int>(heads_q);
  a.heads_kv = static_cast<int>(heads_kv);
  a.head_dim = static_cast<int>(d);
  cuda::rope_prefill(a, at::cuda::getCurrentCUDAStream().stream());
  if (scatter) out.k = out.v = torch::Tensor();  // written into the caches, each token at its place
  return out;
#else
  throw Error(cat(op, ": built without CUDA"));  // unreachable: uses_kernels() is false
#endif
}

torch::Tensor merge_heads(const torch::Tensor& a) {
  if (a.dim() != 4) throw Error(cat("fused merge_heads: ", shape(a), " is not [B, H, S, D]"));
  const auto b = a.size(0), h = a.size(1), s = a.size(2), d = a.size(3);
  torch::Tensor t = a.transpose(1, 2);  // [B, S, H, D]
  if (t.is_contiguous() || !uses_kernels(a) || a.stride(3) != 1) return t.reshape({b, s, h * d});
#ifdef LLMBENCH_WITH_CUDA
  if (!cuda::prefill_kernels_enabled()) return t.reshape({b, s, h * d});
  const int vec = 16 / static_cast<int>(a.element_size());
  const bool fits = d % vec == 0 && a.stride(0) % vec == 0 && a.stride(1) % vec == 0 && a.stride(2) % vec == 0 &&
                    reinterpret_cast<std::uintptr_t>(a.data_ptr()) % 16 == 0;
  if (!fits) return t.reshape({b, s, h * d});
  torch::Tensor out = torch::empty({b, s, h * d}, a.options());  // [B, S, H·D]
  c10::cuda::CUDAGuard guard(a.device());
  cuda::merge_heads(kernel_dtype(a), out.data_ptr(), a.data_ptr(), b, h, s, d, a.stride(0), a.stride(1), a.stride(2),
                    at::cuda::getCurrentCUDAStream().stream());
  return out;
#else
  return t.reshape({b, s, h * d});
#endif
}

bool prefill_softmax_(torch::Tensor& scores, const torch::Tensor& allowed, std::int64_t n, std::int64_t s0,
                      std::int64_t mask_from, double scale, bool triangle) {
#ifdef LLMBENCH_WITH_CUDA
  if (!uses_kernels(scores) || scores.dim() != 4 || !scores.is_contiguous() || n < 1) return false;
  const auto te = scores.size(3);
  if (te > cuda::kPrefillSoftmaxMaxCols || scores.size(2) % n != 0) return false;
  if (!allowed.defined() || allowed.dim() != 4 || allowed.scalar_type() != torch::kBool ||
      allowed.device() != scores.device() || allowed.size(1) != 1 || allowed.stride(3) != 1 || allowed.size(3) < te ||
      (allowed.size(0) != 1 && allowed.size(0) != scores.size(0)) || (allowed.size(2) != 1 && allowed.size(2) < s0 + n))
    return false;
  cuda::PrefillSoftmaxArgs a;
  a.dtype = kernel_dtype(scores);
  a.scores = scores.data_ptr();
  a.rows = scores.numel() / te;
  a.cols = te;
  a.row_stride = te;
  a.scale = static_cast<float>(scale);  // as mul_ takes a double scalar for a reduced-precision tensor
  a.allowed = static_cast<const std::uint8_t*>(allowed.data_ptr());
  a.allowed_stride_b = allowed.size(0) == 1 ? 0 : allowed.stride(0);
  a.allowed_stride_row = allowed.size(2) == 1 ? 0 : allowed.stride(2);
  a.rows_per_batch = scores.size(1) * scores.size(2);
  a.n = n;
  a.s0 = allowed.size(2) == 1 ? 0 : s0;
  a.mask_from = mask_from;
  if (triangle) {  // row s0 + i sees columns [0, s0 + i]: the kernel needs the row's index, not the mask
    a.causal = true;
    a.s0 = s0;
  }
  c10::cuda::CUDAGuard guard(scores.device());
  cuda::prefill_softmax(a, at::cuda::getCurrentCUDAStream().stream());
  return true;
#else
  (void)scores, (void)allowed, (void)n, (void)s0, (void)mask_from, (void)scale, (void)triangle;
  return false;
#endif
}

}  // namespace llmbench::fused
