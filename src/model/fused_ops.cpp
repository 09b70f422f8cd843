#include "llmbench/model/fused_ops.h"

#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/base/switch.h"
#include "llmbench/model/attention.h"
#include "llmbench/model/decoder.h"
#include "llmbench/model/kv_cache.h"
#include "llmbench/model/quantize.h"
#include "llmbench/model/rope.h"

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "llmbench/cuda/kernels.h"
#include "kernel_dtype.h"
#endif

namespace llmbench::fused {

namespace {

void expect(bool ok, const char* op, const std::string& what) {
  if (!ok) throw Error(cat(op, ": ", what));
}

std::string shape(const torch::Tensor& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

void same_dtype(const char* op, const torch::Tensor& a, const torch::Tensor& b, const char* name) {
  expect(a.scalar_type() == b.scalar_type(), op,
         cat(name, " is ", b.scalar_type(), " but the input is ", a.scalar_type()));
}

void same_device(const char* op, const torch::Tensor& a, const torch::Tensor& b, const char* name) {
  expect(a.device() == b.device(), op, cat(name, " is on ", b.device(), " but the input is on ", a.device()));
}

[[maybe_unused]] void contiguous(const char* op, const torch::Tensor& t, const char* name) {
  expect(t.is_contiguous(), op, cat(name, " ", shape(t), " must be contiguous"));
}

#ifdef LLMBENCH_WITH_CUDA
cuda::Stream stream() { return at::cuda::getCurrentCUDAStream().stream(); }

// LLMBENCH_DECODE_ATTENTION=split|mma forces one decode-attention kernel (A/B runs and tests); unset or
// "auto": the planner's choice. Read at every call, so a test can switch it between calls.
cuda::DecodeAttnKernel decode_attention_kernel() {
  constexpr cuda::DecodeAttnKernel kKernels[] = {cuda::DecodeAttnKernel::automatic, cuda::DecodeAttnKernel::split,
                                                 cuda::DecodeAttnKernel::mma};
  return kKernels[env_switch("LLMBENCH_DECODE_ATTENTION", {"auto", "split", "mma"})];
}

// LLMBENCH_DECODE_ATTENTION_SPLITS=N forces the planner's split of the cache columns (A/B runs); unset or 0:
// chosen by shape.
int decode_attention_splits() { return static_cast<int>(env_int("LLMBENCH_DECODE_ATTENTION_SPLITS", 0, 64)); }
#endif

bool is_fp8(const torch::Tensor& t) {
#ifdef LLMBENCH_TORCH_FP8
  return t.scalar_type() == torch::kFloat8_e4m3fn;
#else
  (void)t;
  return false;
#endif
}

// keys/values in the input's dtype with no scales, or float8 e4m3 with k/v scales [B, Hkv] float32.
// Returns whether the cache is fp8.
bool check_cache(const char* op, const torch::Tensor& x, const torch::Tensor& keys, const torch::Tensor& values,
                 const torch::Tensor& k_scale, const torch::Tensor& v_scale) {
  const bool fp8 = is_fp8(keys);
  expect(keys.scalar_type() == values.scalar_type(), op,
         cat("keys are ", keys.scalar_type(), " but values are ", values.scalar_type()));
  expect(fp8 == (k_scale.defined() && v_scale.defined()), op,
         fp8 ? "an fp8 cache needs its k and v scales" : "scales are given but the cache is not fp8");
  if (!fp8) {
    same_dtype(op, x, keys, "keys");
    return false;
  }
  for (const torch::Tensor* s : {&k_scale, &v_scale}) {
    expect(s->dim() == 2 && s->size(0) == keys.size(0) && s->size(1) == keys.size(1) &&
               s->scalar_type() == torch::kFloat32 && s->stride(1) == 1,
           op, cat("scales ", shape(*s), " must be [", keys.size(0), ", ", keys.size(1), "] float32, heads contiguous"));
    same_device(op, x, *s, "scales");
  }
  expect(k_scale.stride(0) == v_scale.stride(0), op, "k and v scales must share strides");
  return true;
}

// Bytes of an fp8 tensor (index ops are not implemented for float8 everywhere); other tensors as they are.
torch::Tensor as_bytes(const torch::Tensor& t) { return is_fp8(t) ? t.view(torch::kUInt8) : t; }

}  // namespace

bool uses_kernels(const torch::Tensor& t) {
#ifdef LLMBENCH_WITH_CUDA
  const auto s = t.scalar_type();
  return t.is_cuda() && (s == torch::kFloat32 || s == torch::kFloat16 || s == torch::kBFloat16);
#else
  (void)t;
  return false;
#endif
}

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  const char* op = "fused rms_norm";
  expect(x.dim() >= 1 && weight.dim() == 1 && weight.size(0) == x.size(-1), op,
         cat("x ", shape(x), " and weight ", shape(weight), " disagree on the hidden size"));
  same_dtype(op, x, weight, "weight");
  same_device(op, x, weight, "weight");
  if (!uses_kernels(x)) return llmbench::rms_norm(x, weight, eps);
#ifdef LLMBENCH_WITH_CUDA
  contiguous(op, x, "x");
  contiguous(op, weight, "weight");
  c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor out = torch::empty_like(x);  // [..., H]
  const auto h = x.size(-1);
  cuda::rms_norm(kernel_dtype(x), out.data_ptr(), x.data_ptr(), weight.data_ptr(), x.numel() / h, h,
                 static_cast<float>(eps), stream());
  return out;
#else
  throw Error(cat(op, ": built without CUDA"));  // unreachable: uses_kernels() is false
#endif
}

void add_rms_norm_(torch::Tensor& x, torch::Tensor& residual, const torch::Tensor& weight, double eps) {
  const char* op = "fused add_rms_norm_";
  expect(x.sizes() == residual.sizes(), op, cat("x ", shape(x), " and residual ", shape(residual), " differ"));
  expect(x.dim() >= 1 && weight.dim() == 1 && weight.size(0) == x.size(-1), op,
         cat("x ", shape(x), " and weight ", shape(weight), " disagree on the hidden size"));
  same_dtype(op, x, residual, "residual");
  same_dtype(op, x, weight, "weight");
  same_device(op, x, residual, "residual");
  same_device(op, x, weight, "weight");
  if (!uses_kernels(x)) {
    residual.add_(x);
    x.copy_(llmbench::rms_norm(residual, weight, eps));
    return;
  }
#ifdef LLMBENCH_WITH_CUDA
  contiguous(op, x, "x");
  contiguous(op, residual, "residual");
  contiguous(op, weight, "weight");
  c10::cuda::CUDAGuard guard(x.device());
  const auto h = x.size(-1);
  cuda::add_rms_norm(kernel_dtype(x), x.data_ptr(), residual.data_ptr(), x.data_ptr(), weight.data_ptr(),
                     x.numel() / h, h, static_cast<float>(eps), stream());
#endif
}

torch::Tensor add_rms_norm_partials(const torch::Tensor& partials, torch::Tensor& residual, const torch::Tensor& weight,
                                    double eps) {
  const char* op = "fused add_rms_norm_partials";
  expect(partials.dim() == residual.dim() + 1 && partials.size(0) >= 1 &&
             partials.sizes().slice(1) == residual.sizes(),
         op, cat("partials ", shape(partials), " are not [S] + residual ", shape(residual)));
  expect(partials.scalar_type() == torch::kFloat32, op, cat("partials are ", partials.scalar_type(), ", not float32"));
  expect(residual.dim() >= 1 && weight.dim() == 1 && weight.size(0) == residual.size(-1), op,
         cat("residual ", shape(residual), " and weight ", shape(weight), " disagree on the hidden size"));
  same_dtype(op, residual, weight, "weight");
  same_device(op, residual, partials, "partials");
  same_device(op, residual, weight, "weight");
  if (!uses_kernels(residual)) {
    torch::Tensor x = partials[0].clone();  // the float sum in split order, as the kernel adds
    for (std::int64_t s = 1; s < partials.size(0); ++s) x.add_(partials[s]);
    residual.add_(x.to(residual.scalar_type()));
    return llmbench::rms_norm(residual, weight, eps);
  }
#ifdef LLMBENCH_WITH_CUDA
  contiguous(op, partials, "partials");
  contiguous(op, residual, "residual");
  contiguous(op, weight, "weight");
  c10::cuda::CUDAGuard guard(residual.device());
  const auto h = residual.size(-1);
  torch::Tensor out = torch::empty_like(residual);  // [..., H]
  cuda::add_rms_norm_partials(kernel_dtype(residual), out.data_ptr(), residual.data_ptr(), partials.data_ptr<float>(),
                              static_cast<int>(partials.size(0)), weight.data_ptr(), residual.numel() / h, h,
                              static_cast<float>(eps), stream());
  return out;
#else
  throw Error(cat(op, ": built without CUDA"));  // unreachable: uses_kernels() is false
#endif
}

torch::Tensor silu_mul(const torch::Tensor& gate_up) {
  const char* op = "fused silu_mul";
  expect(gate_up.dim() >= 1 && gate_up.size(-1) % 2 == 0, op, cat("gate_up ", shape(gate_up), " has an odd last dim"));
  if (!uses_kernels(gate_up)) {
    auto gu = gate_up.chunk(2, -1);  // 2 × [..., I]
    return torch::silu(gu[0]) * gu[1];
  }
#ifdef LLMBENCH_WITH_CUDA
  contiguous(op, gate_up, "gate_up");
  c10::cuda::CUDAGuard guard(gate_up.device());
  const auto inter = gate_up.size(-1) / 2;
  std::vector<std::int64_t> sizes(gate_up.sizes().begin(), gate_up.sizes().end());
  sizes.back() = inter;
  torch::Tensor out = torch::empty(sizes, gate_up.options());  // [..., I]
  cuda::silu_mul(kernel_dtype(gate_up), out.data_ptr(), gate_up.data_ptr(), gate_up.numel() / (2 * inter), inter,
                 stream());
  return out;
#else
  throw Error(cat(op, ": built without CUDA"));  // unreachable: uses_kernels() is false
#endif
}

torch::Tensor rope_qkv_cache(const torch::Tensor& qkv, const torch::Tensor& bias, const torch::Tensor& cos_table,
                             const torch::Tensor& sin_table, const torch::Tensor& positions,
                             const torch::Tensor& column, torch::Tensor& keys, torch::Tensor& values,
                             std::int64_t heads_q, std::int64_t heads_kv, const torch::Tensor& k_scale,
                             const torch::Tensor& v_scale) {
  const char* op = "fused rope_qkv_cache";
  expect(keys.dim() == 4 && values.sizes() == keys.sizes(), op,
         cat("keys ", shape(keys), " and values ", shape(values), " must both be [B, Hkv, T_max, D]"));
  const auto b = keys.size(0), d = keys.size(3), n = (heads_q + 2 * heads_kv) * d;
  expect(keys.size(1) == heads_kv, op, cat("keys ", shape(keys), " do not have ", heads_kv, " kv heads"));
  expect(qkv.numel() == b * n && qkv.size(0) == b && qkv.size(-1) == n, op,
         cat("qkv ", shape(qkv), " is not [", b, ", (1,) ", n, "]"));
  expect(!bias.defined() || (bias.dim() == 1 && bias.size(0) == n), op, cat("bias ", shape(bias), " is not [", n, "]"));
  expect(cos_table.dim() == 2 && cos_table.size(1) == d && sin_table.sizes() == cos_table.sizes(), op,
         cat("cos/sin tables ", shape(cos_table), " / ", shape(sin_table), " are not [T, ", d, "]"));
  expect(positions.dim() == 1 && positions.size(0) == b && positions.scalar_type() == torch::kInt64, op,
         cat("positions ", shape(positions), " must be [", b, "] int64"));
  expect(column.dim() == 1 && (column.size(0) == 1 || column.size(0) == b) && column.scalar_type() == torch::kInt64, op,
         cat("column ", shape(column), " must be [1] or [", b, "] int64"));
  for (const torch::Tensor* t : std::initializer_list<const torch::Tensor*>{&bias, &cos_table, &sin_table})
    if (t->defined()) same_dtype(op, qkv, *t, "bias/cos/sin");
  const bool fp8 = check_cache(op, qkv, keys, values, k_scale, v_scale);
  for (const torch::Tensor* t : std::initializer_list<const torch::Tensor*>{&bias, &cos_table, &sin_table, &positions, &column, &keys, &values})
    if (t->defined()) same_device(op, qkv, *t, "bias/cos/sin/positions/column/keys/values");

  if (!uses_kernels(qkv)) {
    torch::Tensor x = qkv.reshape({b, n});                                          // [B, N]
    if (bias.defined()) x = x + bias;
    auto parts = x.split({heads_q * d, heads_kv * d, heads_kv * d}, -1);
    torch::Tensor pos = positions.clamp(0, cos_table.size(0) - 1);                   // [B]
    torch::Tensor cos = cos_table.index_select(0, pos).view({b, 1, 1, d});          // [B, 1, 1, D]
    torch::Tensor sin = sin_table.index_select(0, pos).view({b, 1, 1, d});          // [B, 1, 1, D]
    torch::Tensor q = apply_rope(parts[0].reshape({b, heads_q, 1, d}), cos, sin);    // [B, Hq, 1, D]
    torch::Tensor k = apply_rope(parts[1].reshape({b, heads_kv, 1, d}), cos, sin);   // [B, Hkv, 1, D]
    torch::Tensor v = parts[2].reshape({b, heads_kv, 1, d});                         // [B, Hkv, 1, D]
    if (fp8) {
      k = quantize_kv(k, k_scale);  // [B, Hkv, 1, D] float8 e4m3
      v = quantize_kv(v, v_scale);
    }
    // Rows whose column is outside the cache write nothing, as in the kernel.
    torch::Tensor inside = (column >= 0).logical_and(column < keys.size(2)).expand({b});  // [B] bool
    torch::Tensor index = column.clamp(0, keys.size(2) - 1).expand({b}).view({b, 1, 1, 1}).expand({b, heads_kv, 1, d});
    torch::Tensor keep = inside.view({b, 1, 1, 1});                                   // [B, 1, 1, 1]
    torch::Tensor kb = as_bytes(keys), vb = as_bytes(values);                         // [B, Hkv, T_max, D]
    kb.scatter_(2, index, torch::where(keep, as_bytes(k), kb.gather(2, index)));
    vb.scatter_(2, index, torch::where(keep, as_bytes(v), vb.gather(2, index)));
    return q.view({b, heads_q, d});
  }
#ifdef LLMBENCH_WITH_CUDA
  expect(qkv.stride(-1) == 1 && (b == 1 || qkv.stride(0) >= n), op, cat("qkv ", shape(qkv), " rows must be dense"));
  if (bias.defined()) contiguous(op, bias, "bias");
  contiguous(op, cos_table, "cos table");
  contiguous(op, sin_table, "sin table");
  contiguous(op, positions, "positions");
  expect(keys.strides() == values.strides() && keys.stride(3) == 1, op,
         "keys and values must share strides with D contiguous");
  c10::cuda::CUDAGuard guard(qkv.device());
  torch::Tensor q = torch::empty({b, heads_q, d}, qkv.options());  // [B, Hq, D]
  cuda::RopeQkvArgs a;
  a.dtype = kernel_dtype(qkv);
  a.qkv = qkv.data_ptr();
  a.qkv_row_stride = qkv.stride(0);
  a.bias = bias.defined() ? bias.data_ptr() : nullptr;
  a.cos = cos_table.data_ptr();
  a.sin = sin_table.data_ptr();
  a.rope_len = cos_table.size(0);
  a.positions = positions.data_ptr<std::int64_t>();
  contiguous(op, column, "column");
  a.column = column.data_ptr<std::int64_t>();
  a.column_stride = column.size(0) == 1 ? 0 : 1;
  a.q_out = q.data_ptr();
  a.k_cache = keys.data_ptr();
  a.v_cache = values.data_ptr();
  if (fp8) {
    a.kv = cuda::KvType::fp8_e4m3;
    a.k_scale = k_scale.data_ptr<float>();
    a.v_scale = v_scale.data_ptr<float>();
    a.scale_stride_b = k_scale.stride(0);
  }
  a.cache_stride_b = keys.stride(0);
  a.cache_stride_h = keys.stride(1);
  a.cache_stride_t = keys.stride(2);
  a.max_len = keys.size(2);
  a.batch = static_cast<int>(b);
  a.heads_q = static_cast<int>(heads_q);
  a.heads_kv = static_cast<int>(heads_kv);
  a.head_dim = static_cast<int>(d);
  cuda::rope_qkv_cache(a, stream());
  return q;
#else
  throw Error(cat(op, ": built without CUDA"));  // unreachable: uses_kernels() is false
#endif
}

torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& values,
                               const torch::Tensor& valid, const torch::Tensor& k_scale, const torch::Tensor& v_scale,
                               const torch::Tensor& written_column) {
  const char* op = "fused decode_attention";
  expect(q.dim() == 3 && keys.dim() == 4 && values.sizes() == keys.sizes(), op,
         cat("q ", shape(q), " / keys ", shape(keys), " / values ", shape(values),
             " are not [B, Hq, D] / [B, Hkv, T_max, D]"));
  const auto b = q.size(0), hq = q.size(1), d = q.size(2), hkv = keys.size(1), t_max = keys.size(2);
  expect(keys.size(0) == b && keys.size(3) == d && hq % hkv == 0, op,
         cat("q ", shape(q), " does not fit keys ", shape(keys)));
  expect(valid.dim() == 2 && valid.size(0) == b && valid.size(1) == t_max &&
             (valid.scalar_type() == torch::kBool || valid.scalar_type() == torch::kUInt8),
         op, cat("valid ", shape(valid), " must be [", b, ", ", t_max, "] bool or uint8"));
  const bool fp8 = check_cache(op, q, keys, values, k_scale, v_scale);
  same_device(op, q, keys, "keys");
  same_device(op, q, values, "values");
  same_device(op, q, valid, "valid");
  if (!uses_kernels(q)) {
    torch::Tensor mask = valid.to(torch::kBool).view({b, 1, 1, t_max});              // [B, 1, 1, T_max]
    const auto dtype = q.scalar_type();
    return attention(AttnImpl::eager, q.unsqueeze(2), fp8 ? dequantize_kv(keys, k_scale, dtype) : keys,
                     fp8 ? dequantize_kv(values, v_scale, dtype) : values, mask)
        .view({b, hq, d});
  }
#ifdef LLMBENCH_WITH_CUDA
  contiguous(op, q, "q");
  expect(keys.strides() == values.strides() && keys.stride(3) == 1, op,
         "keys and values must share strides with D contiguous");
  expect(valid.stride(1) == 1, op, "valid rows must be contiguous");
  c10::cuda::CUDAGuard guard(q.device());
  const cuda::DecodeAttnPlan plan =
      cuda::plan_decode_attention(kernel_dtype(q), static_cast<int>(b), static_cast<int>(hq), static_cast<int>(hkv),
                                  static_cast<int>(d), t_max, cuda::sm_count(), decode_attention_splits(),
                                  decode_attention_kernel());
  torch::Tensor workspace = torch::empty({static_cast<std::int64_t>(plan.workspace_bytes)},
                                         q.options().dtype(torch::kUInt8));  // scores and split partials
  torch::Tensor out = torch::empty_like(q);                                  // [B, Hq, D]
  cuda::DecodeAttnArgs a;
  a.dtype = kernel_dtype(q);
  a.q = q.data_ptr();
  a.k = keys.data_ptr();
  a.v = values.data_ptr();
  if (fp8) {
    a.kv = cuda::KvType::fp8_e4m3;
    a.k_scale = k_scale.data_ptr<float>();
    a.v_scale = v_scale.data_ptr<float>();
    a.scale_stride_b = k_scale.stride(0);
  }
  a.kv_stride_b = keys.stride(0);
  a.kv_stride_h = keys.stride(1);
  a.kv_stride_t = keys.stride(2);
  a.valid = static_cast<const std::uint8_t*>(valid.data_ptr());
  a.valid_stride_b = valid.stride(0);
  if (written_column.defined()) {
    expect(written_column.scalar_type() == torch::kLong && written_column.dim() == 1 &&
               (written_column.size(0) == b || written_column.size(0) == 1),
           op, cat("written_column ", shape(written_column), " must be [", b, "] or [1] int64"));
    same_device(op, q, written_column, "written_column");
    a.column = written_column.data_ptr<std::int64_t>();
    a.column_stride = written_column.size(0) == 1 ? 0 : written_column.stride(0);
  }
  a.out = out.data_ptr();
  a.max_len = t_max;
  a.batch = static_cast<int>(b);
  a.heads_q = static_cast<int>(hq);
  a.heads_kv = static_cast<int>(hkv);
  a.head_dim = static_cast<int>(d);
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  cuda::decode_attention(a, plan, workspace.data_ptr(), stream());
  return out;
#else
  throw Error(cat(op, ": built without CUDA"));  // unreachable: uses_kernels() is false
#endif
}

bool decode_attention_uses_mma(const torch::Tensor& like, std::int64_t batch, std::int64_t heads_q,
                               std::int64_t heads_kv, std::int64_t head_dim, std::int64_t t_max) {
  if (!uses_kernels(like)) return false;
#ifdef LLMBENCH_WITH_CUDA
  c10::cuda::CUDAGuard guard(like.device());
  return cuda::plan_decode_attention(kernel_dtype(like), static_cast<int>(batch), static_cast<int>(heads_q),
                                     static_cast<int>(heads_kv), static_cast<int>(head_dim), t_max, cuda::sm_count(),
                                     decode_attention_splits(), decode_attention_kernel())
             .kernel == cuda::DecodeAttnKernel::mma;
#else
  (void)batch, (void)heads_q, (void)heads_kv, (void)head_dim, (void)t_max;
  return false;
#endif
}

}  // namespace llmbench::fused
