#include "llmbench/model/linear.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "llmbench/base/error.h"
#include "llmbench/base/switch.h"
#include "llmbench/model/quantize.h"

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "llmbench/cuda/gemv.h"
#include "llmbench/cuda/lt_gemm.h"
#include "kernel_dtype.h"
#endif

#if defined(LLMBENCH_WITH_CUDA) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))
#define LLMBENCH_SCALED_MM 1  // at::_scaled_mm with row-wise scales
#endif

namespace llmbench {

namespace {

torch::Tensor dense(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  return b.defined() ? torch::nn::functional::linear(x, w, b) : torch::nn::functional::linear(x, w);
}

[[maybe_unused]] bool is_fp8(const torch::Tensor& w) {
#ifdef LLMBENCH_TORCH_FP8
  return w.scalar_type() == torch::kFloat8_e4m3fn;
#else
  (void)w;
  return false;
#endif
}

std::vector<std::int64_t> out_shape(const torch::Tensor& x, std::int64_t n) {
  std::vector<std::int64_t> s(x.sizes().begin(), x.sizes().end());
  s.back() = n;
  return s;
}

// x [..., K] · dequantize(w [N, K], scale [N])ᵀ (+ bias [N]) → [..., N], dequantizing w in equal blocks of
// rows (at most block_elems weights, at least one row each): each block's product goes straight into its
// columns of y.
torch::Tensor dequant_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                             const torch::Tensor& bias, std::int64_t block_elems) {
  const auto k = x.size(-1), n = w.size(0);
  const std::int64_t max_rows = std::max<std::int64_t>(1, block_elems / std::max<std::int64_t>(1, k));
  if (max_rows >= n) return dense(x, dequantize(w, scale, x.scalar_type()), bias);
  const std::int64_t blocks = (n + max_rows - 1) / max_rows, rows = (n + blocks - 1) / blocks;
  const torch::Tensor x2 = x.reshape({-1, k});                   // [M, K]
  torch::Tensor y = torch::empty({x2.size(0), n}, x2.options());  // [M, N]
  for (std::int64_t r = 0; r < n; r += rows) {
    const std::int64_t c = std::min(rows, n - r);
    const torch::Tensor wb = dequantize(w.narrow(0, r, c), scale.narrow(0, r, c), x.scalar_type());  // [c, K]
    torch::Tensor yb = y.narrow(1, r, c);  // [M, c], rows N apart: cuBLAS writes it in place (ldc = N)
    if (bias.defined())
      at::addmm_out(yb, bias.narrow(0, r, c), x2, wb.t());
    else
      at::mm_out(yb, x2, wb.t());
  }
  return y.view(out_shape(x, n));
}

#ifdef LLMBENCH_WITH_CUDA
// Model-dtype weights take the GEMV automatically at one row (simt kernel with its K split; H200, bf16,
// bench_gemv qwen2.5-7b at batch 1, µs GEMV vs cuBLAS: qkv 10.5 vs 10.5, o 8.7 vs 10.6, gate_up 63.7 vs
// 69.9, down 34.2 vs 37.6, lm_head 237 vs 258). LLMBENCH_GEMV_MODEL_DTYPE=wide keeps the session-9 policy
// for A/B runs: only where N ≥ kWideGemvRatio × K (gate_up, lm_head).
constexpr std::int64_t kWideGemvRatio = 4;

bool model_dtype_gemv(std::int64_t n, std::int64_t k) {
  return env_switch("LLMBENCH_GEMV_MODEL_DTYPE", {"all", "wide"}) == 0 || n >= kWideGemvRatio * k;
}

// LLMBENCH_GEMV_KERNEL=simt|mma forces one GEMV kernel (A/B runs and tests); unset or "auto": the automatic
// choice (here, which matmuls take the GEMV; cuda::gemv_kernel, which kernel). Read at every call, so a
// test can switch it between calls.
cuda::GemvKernel forced_gemv_kernel() {
  constexpr cuda::GemvKernel kKernels[] = {cuda::GemvKernel::automatic, cuda::GemvKernel::simt, cuda::GemvKernel::mma};
  return kKernels[env_switch("LLMBENCH_GEMV_KERNEL", {"auto", "simt", "mma"})];
}

// LLMBENCH_GEMV_SPLITS=N forces the kernels' K split (cuda::GemvArgs::splits; A/B runs); unset or 0: chosen
// by size.
int forced_gemv_splits() { return static_cast<int>(env_int("LLMBENCH_GEMV_SPLITS", 0, 8)); }

// LLMBENCH_GEMV_ROWS=2|4 forces the simt kernel's rows of W per warp (cuda::GemvArgs::rows; A/B runs);
// unset or 0: chosen by batch.
int forced_gemv_rows() {
  constexpr int kRows[] = {0, 2, 4};
  return kRows[env_switch("LLMBENCH_GEMV_ROWS", {"0", "2", "4"})];
}

// LLMBENCH_GEMV_MMA_TAIL=serial runs the mma kernel's last steps one at a time (cuda::GemvArgs::
// mma_serial_tail; A/B runs); unset or unrolled: as one more unrolled round.
bool forced_gemv_serial_tail() { return env_switch("LLMBENCH_GEMV_MMA_TAIL", {"unrolled", "serial"}) == 1; }

// LLMBENCH_GEMV_MMA_RING=0|4|8|12: the mma kernel's ring of W steps per warp in shared memory
// (cuda::GemvArgs::mma_ring; A/B runs); small: a ring for the small matrices only (qkv, o); unset or auto:
// the default (no ring).
int forced_gemv_mma_ring() {
  constexpr int kRings[] = {-1, -2, 0, 4, 8, 12};
  return kRings[env_switch("LLMBENCH_GEMV_MMA_RING", {"auto", "small", "0", "4", "8", "12"})];
}

// LLMBENCH_GEMV_MMA_SPLIT=few-tiles|tall: the mma kernel's K split rule (cuda::GemvArgs::mma_split_tall_only;
// A/B runs); unset or few-tiles: 2 splits for every matrix with few row tiles; tall: only tall-K ones.
bool forced_gemv_mma_split_tall_only() { return env_switch("LLMBENCH_GEMV_MMA_SPLIT", {"few-tiles", "tall"}) == 1; }

// The kernel's arguments for x [B, K] (rows stride_x apart) → y [B, N] (y may be null for a query).
cuda::GemvArgs gemv_args(const torch::Tensor& x2, const torch::Tensor& w, const torch::Tensor& scale,
                         const torch::Tensor& bias, void* y) {
  const auto k = x2.size(1), n = w.size(0);
  cuda::GemvArgs a;
  a.dtype = kernel_dtype(x2);
  a.weight = !scale.defined() ? cuda::WeightType::act
             : w.scalar_type() == torch::kInt8 ? cuda::WeightType::int8
                                               : cuda::WeightType::fp8_e4m3;
  a.x = x2.data_ptr();
  a.x_stride = x2.stride(0);
  a.w = w.data_ptr();
  a.scale = scale.defined() ? scale.data_ptr<float>() : nullptr;
  a.bias = bias.defined() ? bias.data_ptr() : nullptr;
  a.y = y;
  a.y_stride = n;
  a.batch = static_cast<int>(x2.size(0));
  a.n = n;
  a.k = k;
  a.kernel = forced_gemv_kernel();
  a.splits = forced_gemv_splits();
  a.rows = forced_gemv_rows();
  a.mma_serial_tail = forced_gemv_serial_tail();
  a.mma_ring = forced_gemv_mma_ring();
  a.mma_split_tall_only = forced_gemv_mma_split_tall_only();
  return a;
}

torch::Tensor rows_of(const torch::Tensor& x) {  // [..., K] → [B, K] with unit column stride
  const auto k = x.size(-1);
  torch::Tensor x2 = x.reshape({x.numel() / k, k});  // [B, K]
  return x2.stride(1) == 1 ? x2 : x2.contiguous();
}

// cuBLASLt (the default; LLMBENCH_GEMM=lt): model-dtype matmuls that the GEMV does not take run through cuBLASLt
// with the fastest of its heuristic's algorithms per shape (llmbench/cuda/lt_gemm.h): 2–4 % off Qwen2.5-7B's
// decode step at batch 4–64 on the H200, +2 % output tok/s at 64 streams (docs/performance.md, sessions 19 and
// 20). Up to kLtMaxRows rows (decode steps) always; more (prefills) only where tune_lt_gemm timed their row
// bucket ahead: timing new prefill shapes mid-serve cost more than the better algorithm won.
// LLMBENCH_GEMM=torch: torch's GEMM everywhere (A/B runs). Read at every call.
constexpr std::int64_t kLtMaxRows = 256;
// linear_partials: decode batches up to 64 rows when the split count is forced, up to 8 with auto (H200, A/B in
// the decode step: −0.6 to −0.8 % at batch 4 in four pairs of two calls; batch 16 −0.8 % and +0.4 %, batch 64
// +1.1 %: docs/performance.md, session 22).
constexpr std::int64_t kLtSplitKMaxRows = 64;
constexpr std::int64_t kLtSplitKAutoMaxRows = 8;

bool lt_gemm_enabled() { return env_switch("LLMBENCH_GEMM", {"lt", "torch"}) == 0; }

bool lt_applies(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  if (!x.is_cuda() || x.dim() < 1 || w.dim() != 2 || !w.is_contiguous() || !lt_gemm_enabled()) return false;
  const auto s = x.scalar_type();
  if ((s != torch::kBFloat16 && s != torch::kFloat16) || w.scalar_type() != s || w.size(1) != x.size(-1)) return false;
  if (x.numel() == 0 || w.size(0) == 0) return false;
  return !bias.defined() || (bias.scalar_type() == s && bias.is_contiguous() && bias.numel() == w.size(0));
}

// The cuBLASLt path, or an undefined tensor when cuBLASLt declines (the caller runs torch's GEMM). A bias is
// added after the GEMM, not in cuBLASLt's epilogue: the fused decode step adds the qkv bias in its RoPE kernel
// after a bias-free GEMM, and the plain path must run that same GEMM (the same shape, so the same algorithm)
// for the two to agree; with the epilogue (another shape, another algorithm, one rounding fewer) Qwen's fused
// and plain decode steps drifted past their parity tests' bf16 bounds (session 19). More than kLtMaxRows rows
// only when `tune` or their row bucket is already timed.
cuda::LtGemmArgs lt_args(const torch::Tensor& x2, const torch::Tensor& w, void* y) {
  cuda::LtGemmArgs a;
  a.dtype = kernel_dtype(x2);
  a.x = x2.data_ptr();
  a.x_stride = x2.size(0) > 1 ? x2.stride(0) : x2.size(1);
  a.w = w.data_ptr();
  a.y = y;
  a.m = x2.size(0);
  a.n = w.size(0);
  a.k = x2.size(1);
  return a;
}
torch::Tensor lt_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias, bool tune = false) {
  torch::Tensor x2 = rows_of(x);                                         // [M, K]
  torch::Tensor y = torch::empty({x2.size(0), w.size(0)}, x.options());  // [M, N]
  c10::cuda::CUDAGuard guard(x.device());
  const cuda::LtGemmArgs a = lt_args(x2, w, y.data_ptr());
  if (a.x_stride < a.k || (a.m > kLtMaxRows && !tune && !cuda::lt_choice(a))) return {};
  if (!cuda::lt_gemm(a, at::cuda::getCurrentCUDAStream().stream())) return {};
  if (bias.defined()) y.add_(bias);
  return y.view(out_shape(x, w.size(0)));
}

// LLMBENCH_SPLITK_FUSE (linear_partials): 0: off; auto: cuBLASLt's own split count for the shape;
// 2 … 16: that many splits (A/B runs); unset: auto. Read at every call.
int splitk_fuse() {
  const char* v = std::getenv("LLMBENCH_SPLITK_FUSE");
  const std::string s = v ? v : "";
  if (s == "0") return 0;
  if (s.empty() || s == "auto") return -1;
  char* end = nullptr;
  const long n = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0' || n < 2 || n > 16)
    throw UsageError(cat("LLMBENCH_SPLITK_FUSE must be 0, auto or 2 … 16, got '", s, "'"));
  return static_cast<int>(n);
}
torch::Tensor gemv(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                   const torch::Tensor& bias) {
  torch::Tensor x2 = rows_of(x);                                         // [B, K]
  torch::Tensor y = torch::empty({x2.size(0), w.size(0)}, x.options());  // [B, N]
  c10::cuda::CUDAGuard guard(x.device());
  cuda::gemv(gemv_args(x2, w, scale, bias, y.data_ptr()), at::cuda::getCurrentCUDAStream().stream());
  return y.view(out_shape(x, w.size(0)));
}
#endif

#ifdef LLMBENCH_SCALED_MM
// fp8 weights × activations quantized per row to fp8 (scale = max|x_row| / 448), bf16 out.
torch::Tensor scaled_mm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                        const torch::Tensor& bias) {
  const auto k = x.size(-1), n = w.size(0);
  torch::Tensor x2 = x.reshape({-1, k}).to(torch::kFloat32);                                 // [M, K]
  torch::Tensor xs = x2.abs().amax(1, /*keepdim=*/true).clamp_min(1e-12).div_(448.0);        // [M, 1]
  torch::Tensor xq = (x2 / xs).clamp_(-448.0, 448.0).to(torch::kFloat8_e4m3fn);            // [M, K]
  torch::Tensor y = at::_scaled_mm(xq, w.t(), xs, scale.view({1, n}), std::nullopt, std::nullopt,
                                   x.scalar_type(), /*use_fast_accum=*/false);               // [M, N]
  if (bias.defined()) y.add_(bias);
  return y.view(out_shape(x, n));
}
#endif

}  // namespace

Fp8Gemm parse_fp8_gemm(const std::string& name) {
  if (name == "dequant") return Fp8Gemm::dequant;
  if (name == "scaled-mm") return Fp8Gemm::scaled_mm;
  throw UsageError(cat("--fp8-gemm: unknown value '", name, "' (expected dequant or scaled-mm)"));
}

const char* to_string(Fp8Gemm gemm) { return gemm == Fp8Gemm::scaled_mm ? "scaled-mm" : "dequant"; }

bool scaled_mm_available() {
#ifdef LLMBENCH_SCALED_MM
  return true;
#else
  return false;
#endif
}

void tune_lt_gemm(const torch::Tensor& w, std::int64_t rows) {
#ifdef LLMBENCH_WITH_CUDA
  if (rows < 1 || w.dim() != 2 || !w.is_cuda() || !lt_gemm_enabled()) return;
  if (w.scalar_type() != torch::kBFloat16 && w.scalar_type() != torch::kFloat16) return;  // quantized: not lt's
  torch::NoGradGuard no_grad;
  c10::cuda::CUDAGuard guard(w.device());
  const torch::Tensor x = torch::randn({rows, w.size(1)}, w.options());  // [M, K]: random, as real activations
  if (lt_applies(x, w, {})) lt_linear(x, w, {}, /*tune=*/true);          // the shape's first call times it
#else
  (void)w, (void)rows;
#endif
}

bool lt_gemm_requested() {
#ifdef LLMBENCH_WITH_CUDA
  return lt_gemm_enabled();
#else
  return false;
#endif
}

bool gemv_applies(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                  const torch::Tensor& bias, const LinearPaths& paths) {
#ifdef LLMBENCH_WITH_CUDA
  if (!paths.gemv || !x.is_cuda() || x.dim() < 1 || w.dim() != 2 || !w.is_contiguous()) return false;
  const auto s = x.scalar_type();
  if (s != torch::kFloat32 && s != torch::kFloat16 && s != torch::kBFloat16) return false;
  const auto k = x.size(-1), rows = k > 0 ? x.numel() / k : 0;
  if (rows < 1 || rows > cuda::kGemvMaxRows || w.size(1) != k) return false;
  if (bias.defined() && (bias.scalar_type() != s || !bias.is_contiguous())) return false;
  if (!scale.defined()) {
    // Weights in the model dtype: the kernel at one row (faster than cuBLAS there); more rows stay with
    // cuBLAS (as fast or faster), unless LLMBENCH_GEMV_KERNEL forces a kernel.
    if (w.scalar_type() != s) return false;
    return forced_gemv_kernel() != cuda::GemvKernel::automatic || (rows == 1 && model_dtype_gemv(w.size(0), k));
  }
  return (w.scalar_type() == torch::kInt8 || is_fp8(w)) && scale.scalar_type() == torch::kFloat32 &&
         scale.is_contiguous();
#else
  (void)x, (void)w, (void)scale, (void)bias, (void)paths;
  return false;
#endif
}

bool gemv_uses_mma(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                   const torch::Tensor& bias, const LinearPaths& paths) {
#ifdef LLMBENCH_WITH_CUDA
  if (!gemv_applies(x, w, scale, bias, paths)) return false;
  c10::cuda::CUDAGuard guard(x.device());
  return cuda::gemv_kernel(gemv_args(rows_of(x), w, scale, bias, nullptr)) == cuda::GemvKernel::mma;
#else
  (void)x, (void)w, (void)scale, (void)bias, (void)paths;
  return false;
#endif
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                     const torch::Tensor& bias, const LinearPaths& paths) {
#ifdef LLMBENCH_WITH_CUDA
  if (gemv_applies(x, w, scale, bias, paths)) return gemv(x, w, scale, bias);
  if (!scale.defined() && lt_applies(x, w, bias)) {
    torch::Tensor y = lt_linear(x, w, bias);
    if (y.defined()) return y;
  }
#endif
  if (!scale.defined()) return dense(x, w, bias);
#ifdef LLMBENCH_SCALED_MM
  if (paths.fp8_gemm == Fp8Gemm::scaled_mm && is_fp8(w) && x.is_cuda() && x.scalar_type() == torch::kBFloat16 &&
      x.size(-1) % 16 == 0 && w.size(0) % 16 == 0)
    return scaled_mm(x, w, scale, bias);
#endif
  return dequant_linear(x, w, scale, bias, paths.dequant_block_elems);
}

torch::Tensor linear_partials(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                              const torch::Tensor& bias, const LinearPaths& paths) {
#ifdef LLMBENCH_WITH_CUDA
  const int fuse = splitk_fuse();
  if (fuse == 0 || scale.defined() || bias.defined() || !lt_applies(x, w, bias) ||
      gemv_applies(x, w, scale, bias, paths))
    return {};
  torch::Tensor x2 = rows_of(x);  // [M, K]
  if (x2.size(0) > (fuse < 0 ? kLtSplitKAutoMaxRows : kLtSplitKMaxRows)) return {};
  c10::cuda::CUDAGuard guard(x.device());
  const cuda::Stream stream = at::cuda::getCurrentCUDAStream().stream();
  cuda::LtGemmArgs a = lt_args(x2, w, nullptr);
  int splits = fuse;
  if (fuse < 0) {
    splits = cuda::lt_split_k(a);
    if (splits == 0) {  // cuBLASLt has not chosen for this shape yet: let linear()'s path choose (outside captures)
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(stream, &status) != cudaSuccess || status != cudaStreamCaptureStatusNone) return {};
      if (!lt_linear(x, w, {}).defined()) return {};
      splits = cuda::lt_split_k(a);
    }
  }
  // cuBLASLt's count where it gives K slices of whole 16-byte vectors, else the largest count under it
  // that does (Qwen2.5-7B's down at ≤ 8 rows: 12 → 8).
  while (splits >= 2 && a.k % (8 * splits) != 0) --splits;
  if (splits < 2) return {};
  torch::Tensor partials = torch::empty({splits, x2.size(0), w.size(0)}, x.options().dtype(torch::kFloat32));  // [S, M, N]
  if (!cuda::lt_gemm_partials(a, splits, partials.data_ptr<float>(), stream)) return {};
  return partials;
#else
  (void)x, (void)w, (void)scale, (void)bias, (void)paths;
  return {};
#endif
}

}  // namespace llmbench
