#include "common.cuh"

namespace llmbench::cuda {
namespace {
using namespace detail;

// One thread per 16-byte vector of the output [B, S, H·D], read from [B, H, S, D] at its strides.
template <class T, int kVec>
__global__ void merge_heads_kernel(T* out, const T* heads, std::int64_t n_heads, std::int64_t seq, std::int64_t head_dim,
                                   std::int64_t sb, std::int64_t sh, std::int64_t ss, std::int64_t total) {
  pdl_enter();
  using V = Vec<T, kVec>;
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= total) return;
  const std::int64_t per_head = head_dim / kVec, per_token = n_heads * per_head;
  const std::int64_t token = idx / per_token, rest = idx % per_token;
  const std::int64_t b = token / seq, s = token % seq, h = rest / per_head, i = rest % per_head;
  reinterpret_cast<V*>(out)[idx] = *reinterpret_cast<const V*>(heads + b * sb + h * sh + s * ss + i * kVec);
}

}  // namespace

bool prefill_kernels_enabled() { return detail::prefill_kernels_v2(); }

void merge_heads(DType dtype, void* out, const void* heads, std::int64_t batch, std::int64_t n_heads, std::int64_t seq,
                 std::int64_t head_dim, std::int64_t sb, std::int64_t sh, std::int64_t ss, Stream stream) {
  if (batch <= 0 || n_heads <= 0 || seq <= 0) return;
  if (!out || !heads || head_dim <= 0) throw Error("merge_heads kernel: null pointer or empty head");
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kVec = 16 / sizeof(T);
    if (head_dim % kVec != 0 || sb % kVec != 0 || sh % kVec != 0 || ss % kVec != 0 || !aligned16(out) ||
        !aligned16(heads))
      throw Error(cat("merge_heads kernel: head_dim ", head_dim, " or a stride is not a multiple of ", kVec,
                      " elements, or a pointer is not 16-byte aligned"));
    const std::int64_t total = batch * seq * n_heads * (head_dim / kVec);
    constexpr int kThreads = 256;
    const std::int64_t blocks = (total + kThreads - 1) / kThreads;
    if (blocks > 0x7fffffffLL) throw Error(cat("merge_heads kernel: ", total, " vectors exceed the grid"));
    launch_kernel("merge_heads kernel", merge_heads_kernel<T, kVec>, {dim3(static_cast<unsigned>(blocks)), dim3(kThreads)},
                  stream, static_cast<T*>(out), static_cast<const T*>(heads), n_heads, seq, head_dim, sb, sh, ss, total);
  });
}

}  // namespace llmbench::cuda
