#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "common.cuh"

namespace llmbench::cuda {
namespace {
using namespace detail;

// Each thread kUnroll groups of kVec outputs over the flattened [N, I/kVec] grid, blockDim.x apart (so a warp's
// loads stay contiguous), all loads issued before any math: kUnroll = 1 is one 16-byte load of gate and one of
// up in flight per thread; 4 keeps four times the bytes in flight for the long rows of a prefill.
template <class T, int kVec, int kUnroll>
__global__ void silu_mul_kernel(T* out, const T* gate_up, std::int64_t inter, std::int64_t total) {
  pdl_enter();
  using V = Vec<T, kVec>;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x;
  const std::int64_t per_row = inter / kVec;
  V g[kUnroll], u[kUnroll];
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const std::int64_t idx = first + static_cast<std::int64_t>(k) * blockDim.x;
    if (idx >= total) break;
    std::int64_t row, i;
    if constexpr (kUnroll > 1) {  // the launch keeps total below 2^31: 32-bit division (fewer registers)
      const auto r32 = static_cast<std::uint32_t>(idx) / static_cast<std::uint32_t>(per_row);
      row = r32;
      i = static_cast<std::uint32_t>(idx) - r32 * static_cast<std::uint32_t>(per_row);
    } else {
      row = idx / per_row;
      i = idx % per_row;
    }
    const T* base = gate_up + row * 2 * inter;
    g[k] = reinterpret_cast<const V*>(base)[i];
    u[k] = reinterpret_cast<const V*>(base + inter)[i];
  }
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const std::int64_t idx = first + static_cast<std::int64_t>(k) * blockDim.x;
    if (idx >= total) break;
    V o;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const float x = to_f(g[k].v[j]);
      const float s = round_f<T>(x / (1.0f + expf(-x)));  // torch::silu: float math, one rounding
      o.v[j] = from_f<T>(s * to_f(u[k].v[j]));            // then the dtype product rounds again
    }
    reinterpret_cast<V*>(out)[idx] = o;  // out [N, I] is contiguous: vector idx of the flattened grid
  }
}

// LLMBENCH_SILU_UNROLL=4: four groups per thread for prefill-sized calls (at least kUnrollMinVectors groups:
// Qwen2.5-7B from about 220 rows; a decode step keeps one per thread, its few rows need every block); A/B
// runs, not yet measured on the GPU. Unset or 1: one. Read at every launch.
constexpr std::int64_t kUnrollMinVectors = std::int64_t{1} << 19;
int silu_unroll() {
  const char* v = std::getenv("LLMBENCH_SILU_UNROLL");
  if (!v || !*v || std::strcmp(v, "1") == 0) return 1;
  if (std::strcmp(v, "4") == 0) return 4;
  throw UsageError(cat("LLMBENCH_SILU_UNROLL must be 1 or 4, got '", v, "'"));
}

template <class T, int kVec>
void launch(void* out, const void* gate_up, std::int64_t rows, std::int64_t inter, Stream stream) {
  const std::int64_t total = rows * (inter / kVec);
  constexpr int kThreads = 256;
  auto go = [&](auto unroll) {
    constexpr int kUnroll = decltype(unroll)::value;
    const std::int64_t per_block = static_cast<std::int64_t>(kThreads) * kUnroll;
    const std::int64_t blocks = (total + per_block - 1) / per_block;
    launch_kernel("silu_mul kernel", silu_mul_kernel<T, kVec, kUnroll>,
                  {dim3(static_cast<unsigned>(blocks)), dim3(kThreads)}, stream, static_cast<T*>(out),
                  static_cast<const T*>(gate_up), inter, total);
  };
  if (kVec > 1 && total >= kUnrollMinVectors && total < (std::int64_t{1} << 31) && silu_unroll() == 4)
    go(std::integral_constant<int, 4>{});
  else
    go(std::integral_constant<int, 1>{});
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
