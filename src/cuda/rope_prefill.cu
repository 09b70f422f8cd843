#include "common.cuh"
#include "llmbench/cuda/rope_prefill.h"

namespace llmbench::cuda {
namespace {
using namespace detail;

constexpr int kThreads = 256;

// Where token `token` (= b·S + s) puts its k and v: (b, s), or its kv_row / kv_col entry; false: nowhere.
__device__ __forceinline__ bool kv_place(const RopePrefillArgs& a, std::int64_t token, std::int64_t& b,
                                         std::int64_t& s) {
  if (!a.kv_row) return true;
  b = a.kv_row[token];
  s = a.kv_col[token];
  return b >= 0 && b < a.kv_rows && s >= 0 && s < a.kv_cols;
}

// One block per token (b, s); its threads walk the (head, i) pairs of the token, pair i being the
// rotate_half partners (i, i + D/2) of one head.
template <class T>
__global__ void __launch_bounds__(kThreads) rope_prefill_kernel(RopePrefillArgs a) {
  pdl_enter();
  const std::int64_t token = blockIdx.x, b = token / a.seq, s = token % a.seq;
  const int d = a.head_dim, half = d / 2, nq = a.heads_q, nkv = a.heads_kv, heads = nq + 2 * nkv;
  const T* src = static_cast<const T*>(a.qkv) + token * a.qkv_stride;
  std::int64_t pos = a.positions[token];
  pos = pos < 0 ? 0 : (pos >= a.rope_len ? a.rope_len - 1 : pos);
  const T* c = static_cast<const T*>(a.cos) + pos * d;
  const T* sn = static_cast<const T*>(a.sin) + pos * d;
  std::int64_t kv_b = b, kv_s = s;
  const bool kv_ok = kv_place(a, token, kv_b, kv_s);
  for (int p = threadIdx.x; p < heads * half; p += kThreads) {
    const int head = p / half, i = p % half;
    if (head >= nq && !kv_ok) continue;
    float x1 = to_f(src[head * d + i]), x2 = to_f(src[head * d + i + half]);
    if (a.bias) {  // qkv + bias as a dtype add
      const T* bias = static_cast<const T*>(a.bias) + head * d;
      x1 = round_f<T>(x1 + to_f(bias[i]));
      x2 = round_f<T>(x2 + to_f(bias[i + half]));
    }
    T* dst;
    float y1 = x1, y2 = x2;
    if (head < nq + nkv) {
      // x·cos + rotate_half(x)·sin, each product and the sum rounded to the dtype as torch does.
      y1 = round_f<T>(x1 * to_f(c[i])) + round_f<T>(-x2 * to_f(sn[i]));
      y2 = round_f<T>(x2 * to_f(c[i + half])) + round_f<T>(x1 * to_f(sn[i + half]));
    }
    if (head < nq) {
      dst = static_cast<T*>(a.q) + b * a.q_strides.b + head * a.q_strides.h + s * a.q_strides.s;
    } else if (head < nq + nkv) {
      dst = static_cast<T*>(a.k) + kv_b * a.k_strides.b + (head - nq) * a.k_strides.h + kv_s * a.k_strides.s;
    } else {
      dst = static_cast<T*>(a.v) + kv_b * a.v_strides.b + (head - nq - nkv) * a.v_strides.h + kv_s * a.v_strides.s;
    }
    dst[i] = from_f<T>(y1);
    dst[i + half] = from_f<T>(y2);
  }
}


// Session 23: each thread takes kVec neighbouring pairs (i, i + D/2) of one head of one token in 16-byte
// loads and stores (the kernel above moves 2 bytes per load: 29–37 µs per call at 2,048 tokens against
// ≈ 11 µs of traffic, H200). The same operations per element, so the same bits.
template <class T, int kVec>
__global__ void __launch_bounds__(kThreads) rope_prefill_vec_kernel(RopePrefillArgs a, std::int64_t items) {
  pdl_enter();
  using V = Vec<T, kVec>;
  const std::int64_t item = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (item >= items) return;
  const int d = a.head_dim, half = d / 2, nq = a.heads_q, nkv = a.heads_kv, heads = nq + 2 * nkv;
  const int per_head = half / kVec;
  const std::int64_t token = item / (static_cast<std::int64_t>(heads) * per_head);
  const int rest = static_cast<int>(item % (static_cast<std::int64_t>(heads) * per_head));
  const int head = rest / per_head, i = rest % per_head * kVec;
  std::int64_t b = token / a.seq, s = token % a.seq;
  if (head >= nq && !kv_place(a, token, b, s)) return;  // b, s: the k / v place from here on
  const T* src = static_cast<const T*>(a.qkv) + token * a.qkv_stride + head * d;
  V x1 = *reinterpret_cast<const V*>(src + i), x2 = *reinterpret_cast<const V*>(src + i + half);
  float f1[kVec], f2[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) f1[j] = to_f(x1.v[j]), f2[j] = to_f(x2.v[j]);
  if (a.bias) {  // qkv + bias as a dtype add
    const T* bias = static_cast<const T*>(a.bias) + head * d;
    const V b1 = *reinterpret_cast<const V*>(bias + i), b2 = *reinterpret_cast<const V*>(bias + i + half);
#pragma unroll
    for (int j = 0; j < kVec; ++j) f1[j] = round_f<T>(f1[j] + to_f(b1.v[j])), f2[j] = round_f<T>(f2[j] + to_f(b2.v[j]));
  }
  T* dst;
  if (head < nq + nkv) {
    std::int64_t pos = a.positions[token];
    pos = pos < 0 ? 0 : (pos >= a.rope_len ? a.rope_len - 1 : pos);
    const T* c = static_cast<const T*>(a.cos) + pos * d;
    const T* sn = static_cast<const T*>(a.sin) + pos * d;
    const V c1 = *reinterpret_cast<const V*>(c + i), c2 = *reinterpret_cast<const V*>(c + i + half);
    const V s1 = *reinterpret_cast<const V*>(sn + i), s2 = *reinterpret_cast<const V*>(sn + i + half);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      // x·cos + rotate_half(x)·sin, each product and the sum rounded to the dtype as torch does.
      const float y1 = round_f<T>(f1[j] * to_f(c1.v[j])) + round_f<T>(-f2[j] * to_f(s1.v[j]));
      const float y2 = round_f<T>(f2[j] * to_f(c2.v[j])) + round_f<T>(f1[j] * to_f(s2.v[j]));
      f1[j] = y1, f2[j] = y2;
    }
    dst = head < nq ? static_cast<T*>(a.q) + b * a.q_strides.b + head * a.q_strides.h + s * a.q_strides.s
                    : static_cast<T*>(a.k) + b * a.k_strides.b + (head - nq) * a.k_strides.h + s * a.k_strides.s;
  } else {
    dst = static_cast<T*>(a.v) + b * a.v_strides.b + (head - nq - nkv) * a.v_strides.h + s * a.v_strides.s;
  }
  V o1, o2;
#pragma unroll
  for (int j = 0; j < kVec; ++j) o1.v[j] = from_f<T>(f1[j]), o2.v[j] = from_f<T>(f2[j]);
  *reinterpret_cast<V*>(dst + i) = o1;
  *reinterpret_cast<V*>(dst + i + half) = o2;
}

}  // namespace

void rope_prefill(const RopePrefillArgs& args, Stream stream) {
  if (args.batch <= 0 || args.seq <= 0) return;
  RopePrefillArgs a = args;
  auto resolve = [&](HeadMajorStrides& st, int heads) {  // all 0: contiguous [B, H, S, D]
    if (st.b == 0 && st.h == 0 && st.s == 0) st = {heads * a.seq * a.head_dim, a.seq * a.head_dim, a.head_dim};
  };
  resolve(a.q_strides, a.heads_q);
  resolve(a.k_strides, a.heads_kv);
  resolve(a.v_strides, a.heads_kv);
  if (a.head_dim <= 0 || a.head_dim % 2 != 0)
    throw Error(cat("rope_prefill kernel: head_dim ", a.head_dim, " must be even and positive"));
  if (a.heads_q <= 0 || a.heads_kv <= 0 || a.rope_len <= 0)
    throw Error("rope_prefill kernel: empty heads or rope table");
  if (!a.qkv || !a.cos || !a.sin || !a.positions || !a.q || !a.k || !a.v)
    throw Error("rope_prefill kernel: null pointer argument");
  if (!a.kv_row != !a.kv_col) throw Error("rope_prefill kernel: give kv_row and kv_col together");
  const std::int64_t tokens = a.batch * a.seq;
  if (tokens > 0x7fffffffLL) throw Error(cat("rope_prefill kernel: ", tokens, " tokens exceed the grid"));
  detail::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVec = 16 / sizeof(T);
    auto fits = [&](const void* p, std::int64_t stride) { return detail::aligned16(p) && stride % kVec == 0; };
    const bool vec = detail::prefill_kernels_v2() && (a.head_dim / 2) % kVec == 0 && fits(a.qkv, a.qkv_stride) &&
                     (!a.bias || detail::aligned16(a.bias)) && fits(a.cos, a.head_dim) && fits(a.sin, a.head_dim) &&
                     fits(a.q, a.q_strides.b) && a.q_strides.h % kVec == 0 && a.q_strides.s % kVec == 0 &&
                     fits(a.k, a.k_strides.b) && a.k_strides.h % kVec == 0 && a.k_strides.s % kVec == 0 &&
                     fits(a.v, a.v_strides.b) && a.v_strides.h % kVec == 0 && a.v_strides.s % kVec == 0;
    if (vec) {
      const std::int64_t items = tokens * (a.heads_q + 2 * a.heads_kv) * (a.head_dim / 2 / kVec);
      if ((items + kThreads - 1) / kThreads > 0x7fffffffLL) throw Error(cat("rope_prefill kernel: ", items, " items exceed the grid"));
      detail::launch_kernel("rope_prefill kernel", rope_prefill_vec_kernel<T, kVec>,
                            {dim3(static_cast<unsigned>((items + kThreads - 1) / kThreads)), dim3(kThreads)}, stream, a, items);
      return;
    }
    detail::launch_kernel("rope_prefill kernel", rope_prefill_kernel<T>, {dim3(static_cast<unsigned>(tokens)), dim3(kThreads)},
                          stream, a);
  });
}

}  // namespace llmbench::cuda
