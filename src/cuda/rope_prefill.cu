#include "common.cuh"
#include "llmbench/cuda/rope_prefill.h"

namespace llmbench::cuda {
namespace {
using namespace detail;

constexpr int kThreads = 256;

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
  for (int p = threadIdx.x; p < heads * half; p += kThreads) {
    const int head = p / half, i = p % half;
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
      dst = static_cast<T*>(a.k) + b * a.k_strides.b + (head - nq) * a.k_strides.h + s * a.k_strides.s;
    } else {
      dst = static_cast<T*>(a.v) + b * a.v_strides.b + (head - nq - nkv) * a.v_strides.h + s * a.v_strides.s;
    }
    dst[i] = from_f<T>(y1);
    dst[i + half] = from_f<T>(y2);
  }
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
  const std::int64_t tokens = a.batch * a.seq;
  if (tokens > 0x7fffffffLL) throw Error(cat("rope_prefill kernel: ", tokens, " tokens exceed the grid"));
  detail::dispatch(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    detail::launch_kernel("rope_prefill kernel", rope_prefill_kernel<T>, {dim3(static_cast<unsigned>(tokens)), dim3(kThreads)},
                          stream, a);
  });
}

}  // namespace llmbench::cuda
