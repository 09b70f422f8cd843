#include "llmbench/model/quantize.h"

#include <algorithm>

#include "llmbench/base/error.h"

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "llmbench/cuda/gemv.h"
#include "kernel_dtype.h"
#endif

namespace llmbench {

namespace {

constexpr double kInt8Max = 127.0;
constexpr double kFp8Max = 448.0;  // largest finite float8 e4m3fn

const char* const kFp8Unsupported = "fp8 weights need a CUDA GPU with FP8 (sm_89+) and libtorch >= 2.1";

bool is_quantized_dtype(torch::Dtype d) {
#ifdef LLMBENCH_TORCH_FP8
  if (d == torch::kFloat8_e4m3fn) return true;
#endif
  return d == torch::kInt8;
}

// int8 → kInt8; fp8 → float8 e4m3fn, or the one-line UsageError where this libtorch has none.
torch::Dtype storage_dtype(WeightFormat format) {
  if (format == WeightFormat::int8) return torch::kInt8;
#ifdef LLMBENCH_TORCH_FP8
  return torch::kFloat8_e4m3fn;
#else
  throw UsageError(kFp8Unsupported);
#endif
}

}  // namespace

WeightFormat parse_weight_format(const std::string& name) {
  if (name == "bf16") return WeightFormat::plain;
  if (name == "int8") return WeightFormat::int8;
  if (name == "fp8") return WeightFormat::fp8;
  throw UsageError(cat("unknown weights '", name, "' (expected bf16, int8 or fp8)"));
}

std::string to_string(WeightFormat format) {
  switch (format) {
    case WeightFormat::plain: return "bf16";
    case WeightFormat::int8: return "int8";
    case WeightFormat::fp8: return "fp8";
  }
  return "bf16";
}

bool torch_has_fp8() {
#ifdef LLMBENCH_TORCH_FP8
  return true;
#else
  return false;
#endif
}

void check_fp8_supported(const torch::Device& device) {
  bool ok = torch_has_fp8() && device.is_cuda();
#ifdef LLMBENCH_WITH_CUDA
  if (ok) {
    const cudaDeviceProp* prop = at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0);
    ok = prop->major * 10 + prop->minor >= 89;
  }
#else
  ok = false;
#endif
  if (!ok) throw UsageError(kFp8Unsupported);
}

QuantizedTensor quantize(const torch::Tensor& w, WeightFormat format, std::int64_t block_elems) {
  torch::NoGradGuard no_grad;
  if (w.dim() != 2) throw Error(cat("quantize: expected a [N, K] weight, got ", w.sizes()));
  if (format == WeightFormat::plain) throw Error("quantize: nothing to do for bf16 weights");
  const double qmax = format == WeightFormat::int8 ? kInt8Max : kFp8Max;
  QuantizedTensor out;
  out.q = torch::empty(w.sizes(), w.options().dtype(storage_dtype(format)));  // [N, K]
  out.scale = torch::empty({w.size(0)}, w.options().dtype(torch::kFloat32));  // [N]
  // Rows are independent: a block of rows at a time bounds the float32 temporaries.
  const std::int64_t block = std::max<std::int64_t>(1, block_elems / std::max<std::int64_t>(1, w.size(1)));
  for (std::int64_t r = 0; r < w.size(0); r += block) {
    const std::int64_t n = std::min(block, w.size(0) - r);
    torch::Tensor wf = w.narrow(0, r, n).to(torch::kFloat32);                          // [n, K]
    torch::Tensor amax = wf.abs().amax(1);                                             // [n]
    torch::Tensor scale = torch::where(amax > 0, amax / qmax, torch::ones_like(amax));  // [n] float32
    torch::Tensor scaled = wf / scale.unsqueeze(1);  // [n, K] in [-qmax, qmax] (a new tensor: wf may be w itself)
    if (format == WeightFormat::int8) scaled.round_();
    out.q.narrow(0, r, n).copy_(scaled.clamp_(-qmax, qmax));  // int8: exact integers; fp8: round to nearest even
    out.scale.narrow(0, r, n).copy_(scale);
  }
  return out;
}

torch::Tensor dequantize(const torch::Tensor& q, const torch::Tensor& scale, torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  if (q.dim() != 2 || scale.dim() != 1 || scale.size(0) != q.size(0) || !is_quantized_dtype(q.scalar_type()))
    throw Error(cat("dequantize: expected q [N, K] int8/float8 and scale [N], got ", q.sizes(), " ",
                    q.scalar_type(), " and ", scale.sizes()));
#ifdef LLMBENCH_WITH_CUDA
  if (q.is_cuda() && q.is_contiguous() && scale.is_contiguous() && scale.scalar_type() == torch::kFloat32 &&
      (dtype == torch::kBFloat16 || dtype == torch::kFloat16 || dtype == torch::kFloat32)) {
    c10::cuda::CUDAGuard guard(q.device());
    torch::Tensor out = torch::empty(q.sizes(), q.options().dtype(dtype));  // [N, K]
    cuda::dequantize(kernel_dtype(dtype), q.scalar_type() == torch::kInt8 ? cuda::WeightType::int8 : cuda::WeightType::fp8_e4m3,
                     out.data_ptr(), q.data_ptr(), scale.data_ptr<float>(), q.size(0), q.size(1),
                     at::cuda::getCurrentCUDAStream().stream());
    return out;
  }
#endif
  return (q.to(torch::kFloat32) * scale.to(torch::kFloat32).unsqueeze(1)).to(dtype);  // [N, K]
}

void quantize_weights(Weights& weights, WeightFormat format) {
  if (format == WeightFormat::plain) return;
  auto replace = [&](torch::Tensor& w, torch::Tensor& scale) {
    QuantizedTensor qt = quantize(w, format);
    w = qt.q;  // the plain tensor is freed here
    scale = qt.scale;
  };
  for (auto& l : weights.layers) {
    replace(l.qkv, l.qkv_scale);
    replace(l.o, l.o_scale);
    replace(l.gate_up, l.gate_up_scale);
    replace(l.down, l.down_scale);
  }
  // A tied head is the embedding, which stays in the model dtype (it is read by index, not streamed).
  if (weights.lm_head.defined() && !weights.lm_head.is_same(weights.embed)) replace(weights.lm_head, weights.lm_head_scale);
}

}  // namespace llmbench
