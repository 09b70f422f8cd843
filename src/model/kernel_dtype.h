#pragma once
// The CUDA kernels' dtype (llmbench/cuda/kernels.h, torch-free) of a torch floating dtype; shared by the
// model's callers of src/cuda/ (fused ops, fused prefill, GEMV, dequantize). CUDA builds only.
#ifdef LLMBENCH_WITH_CUDA
#include <torch/torch.h>

#include "llmbench/base/error.h"
#include "llmbench/cuda/kernels.h"

namespace llmbench {

// float32 | float16 | bfloat16 → the kernels' DType; any other dtype: Error.
inline cuda::DType kernel_dtype(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return cuda::DType::f32;
    case torch::kFloat16: return cuda::DType::f16;
    case torch::kBFloat16: return cuda::DType::bf16;
    default: throw Error(cat("cuda kernels: dtype ", t, " is not float32, float16 or bfloat16"));
  }
}
inline cuda::DType kernel_dtype(const torch::Tensor& t) { return kernel_dtype(t.scalar_type()); }

}  // namespace llmbench
#endif
