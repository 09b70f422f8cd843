#include "common.cuh"

namespace llmbench::cuda {
namespace {
using namespace detail;

// One thread per kVec outputs over the flattened [N, I/kVec] grid.
template <class T, int kVec>
__global__ void silu_mul_kernel(T* out, const T* gate_up, std::int64_t inter, std::int64_t total) {
  pdl_enter();
  using V = Vec<T, kVec>;
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= total) return;
  const std::int64_t per_row = inter / kVec, row = idx / per_row, i = idx % per_row;
  const T* base = gate_up + row * 2 * inter;
  const V g = reinterpret_cast<const V*>(base)[i];
  const V u = reinterpret_cast<const V*>(base + inter)[i];
  V o;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const float x = to_f(g.v[j]);
    const float s = round_f<T>(x / (1.0f + expf(-x)));  // torch::silu: float math, one rounding
    o.v[j] = from_f<T>(s * to_f(u.v[j]));               // then the dtype product rounds again
  }
  reinterpret_cast<V*>(out + row * inter)[i] = o;
}

template <class T, int kVec>
void launch(void* out, const void* gate_up, std::int64_t rows, std::int64_t inter, Stream stream) {
  const std::int64_t total = rows * (inter / kVec);
  constexpr int kThreads = 256;
  const std::int64_t blocks = (total + kThreads - 1) / kThreads;
  launch_kernel("silu_mul kernel", silu_mul_kernel<T, kVec>, {dim3(static_cast<unsigned>(blocks)), dim3(kThreads)}, stream,
                static_cast<T*>(out), static_cast<const T*>(gate_up), inter, total);
}

}  // namespace

void silu_mul(DType dtype, void* out, const void* gate_up, std::int64_t rows, std::int64_t inter, Stream stream) {
  if (rows <= 0 || inter <= 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVec = 16 / sizeof(T);
    if (inter % kVec == 0 && aligned16(out) && aligned16(gate_up))
      launch<T, kVec>(out, gate_up, rows, inter, stream);
    else
      launch<T, 1>(out, gate_up, rows, inter, stream);
  });
}

}  // namespace llmbench::cuda
