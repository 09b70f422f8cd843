#include <cuda_fp8.h>

#include <type_traits>

#include "common.cuh"

namespace llmbench::cuda {
namespace {
using namespace detail;

// What the cache holds for a k or v element whose float value is x: the dtype, or (fp8, TKV e4m3) the
// dtype-rounded value divided by the scale, rounded to nearest even and saturated to ±448 (as torch's
// clamp then .to(float8_e4m3fn)).
template <class T, class TKV>
__device__ __forceinline__ TKV to_cache(float x, float scale) {
  if constexpr (std::is_same_v<TKV, T>) {
    return from_f<T>(x);
  } else {
    return TKV(__fdiv_rn(round_f<T>(x), scale));  // __nv_fp8_e4m3(float): round to nearest even, satfinite
  }
}

// Block (head, b) of the Hq + 2 Hkv heads in qkv; thread i owns the rotate_half pair (i, i + D/2).
template <class T, class TKV>
__global__ void rope_qkv_kernel(RopeQkvArgs a) {
  pdl_enter();
  const int head = blockIdx.x, b = blockIdx.y, half = a.head_dim / 2, i = threadIdx.x;
  if (i >= half) return;
  const int d = a.head_dim, nq = a.heads_q, nkv = a.heads_kv;
  const T* src = static_cast<const T*>(a.qkv) + b * a.qkv_row_stride + static_cast<std::int64_t>(head) * d;
  float x1 = to_f(src[i]), x2 = to_f(src[i + half]);
  if (a.bias) {  // qkv + bias as a dtype add
    const T* bias = static_cast<const T*>(a.bias) + static_cast<std::int64_t>(head) * d;
    x1 = round_f<T>(x1 + to_f(bias[i]));
    x2 = round_f<T>(x2 + to_f(bias[i + half]));
  }
  const std::int64_t col = a.column[b * a.column_stride];
  const bool write_cache = col >= 0 && col < a.max_len;
  if (head >= nq + nkv) {  // v: no rotation
    if (!write_cache) return;
    const int h = head - nq - nkv;
    const float scale = a.v_scale ? a.v_scale[b * a.scale_stride_b + h] : 1.0f;
    TKV* dst = static_cast<TKV*>(a.v_cache) + b * a.cache_stride_b + h * a.cache_stride_h + col * a.cache_stride_t;
    dst[i] = to_cache<T, TKV>(x1, scale);
    dst[i + half] = to_cache<T, TKV>(x2, scale);
    return;
  }
  std::int64_t pos = a.positions[b];
  pos = pos < 0 ? 0 : (pos >= a.rope_len ? a.rope_len - 1 : pos);
  const T* c = static_cast<const T*>(a.cos) + pos * d;
  const T* s = static_cast<const T*>(a.sin) + pos * d;
  // x·cos + rotate_half(x)·sin, each product and the sum rounded to the dtype as torch does.
  const float y1 = round_f<T>(x1 * to_f(c[i])) + round_f<T>(-x2 * to_f(s[i]));
  const float y2 = round_f<T>(x2 * to_f(c[i + half])) + round_f<T>(x1 * to_f(s[i + half]));
  if (head < nq) {
    T* dst = static_cast<T*>(a.q_out) + (static_cast<std::int64_t>(b) * nq + head) * d;
    dst[i] = from_f<T>(y1);
    dst[i + half] = from_f<T>(y2);
    return;
  }
  if (!write_cache) return;
  const int h = head - nq;
  const float scale = a.k_scale ? a.k_scale[b * a.scale_stride_b + h] : 1.0f;
  TKV* dst = static_cast<TKV*>(a.k_cache) + b * a.cache_stride_b + h * a.cache_stride_h + col * a.cache_stride_t;
  dst[i] = to_cache<T, TKV>(y1, scale);
  dst[i + half] = to_cache<T, TKV>(y2, scale);
}

}  // namespace

void rope_qkv_cache(const RopeQkvArgs& a, Stream stream) {
  if (a.batch <= 0) return;
  if (a.head_dim <= 0 || a.head_dim % 2 != 0 || a.head_dim > 2048)
    throw Error(cat("rope_qkv_cache kernel: head_dim ", a.head_dim, " must be even and at most 2048"));
  if (a.heads_q <= 0 || a.heads_kv <= 0 || a.rope_len <= 0 || a.max_len <= 0)
    throw Error("rope_qkv_cache kernel: empty heads, rope table or cache");
  if (a.column_stride != 0 && a.column_stride != 1)
    throw Error(cat("rope_qkv_cache kernel: column_stride ", a.column_stride, " must be 0 (shared) or 1 (per row)"));
  if (!a.qkv || !a.cos || !a.sin || !a.positions || !a.column || !a.q_out || !a.k_cache || !a.v_cache)
    throw Error("rope_qkv_cache kernel: null pointer argument");
  const bool fp8 = a.kv == KvType::fp8_e4m3;
  if (fp8 != (a.k_scale && a.v_scale))
    throw Error("rope_qkv_cache kernel: an fp8 cache needs k and v scales (and only an fp8 cache takes them)");
  const dim3 grid(static_cast<unsigned>(a.heads_q + 2 * a.heads_kv), static_cast<unsigned>(a.batch));
  const int threads = (a.head_dim / 2 + 31) / 32 * 32;
  detail::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const detail::LaunchShape shape{grid, dim3(threads)};
    if (fp8)
      detail::launch_kernel("rope_qkv_cache kernel", rope_qkv_kernel<T, __nv_fp8_e4m3>, shape, stream, a);
    else
      detail::launch_kernel("rope_qkv_cache kernel", rope_qkv_kernel<T, T>, shape, stream, a);
  });
}

}  // namespace llmbench::cuda
