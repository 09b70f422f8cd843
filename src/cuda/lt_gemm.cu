// y [M, N] = x [M, K] · W [N, K]ᵀ (+ bias) through cuBLASLt with a per-shape algorithm (llmbench/cuda/lt_gemm.h).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/cuda/lt_gemm.h"

namespace llmbench::cuda {
namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
constexpr int kMaxCandidates = 16;
constexpr int kWarmups = 2, kTimed = 5;
constexpr std::uint32_t kAlignment = 16;  // bytes: x, W, y, bias and every row of them

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(cat("cuBLASLt ", what, ": status ", static_cast<int>(s)));
}
void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(cat("lt_gemm ", what, ": ", cudaGetErrorString(e)));
}

// The descriptors of one problem: column-major C (N × M) = op(A)ᵀ … i.e. A = W (K × N, ld K, transposed),
// B = x (K × M, ld x_stride), C = D = y (N × M, ld N), with the bias epilogue when there is a bias.
struct Problem {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  explicit Problem(const LtGemmArgs& g) {
    const cudaDataType_t t = g.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
    check_lt(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul descriptor");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa");
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb");
    if (g.bias) {
      const cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
      check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e), "epilogue");
      check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &t, sizeof t), "bias type");
      check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias), "bias");
    }
    check_lt(cublasLtMatrixLayoutCreate(&a, t, g.k, g.n, g.k), "layout of W");
    check_lt(cublasLtMatrixLayoutCreate(&b, t, g.k, g.m, g.x_stride), "layout of x");
    check_lt(cublasLtMatrixLayoutCreate(&c, t, g.n, g.m, g.n), "layout of y");
  }
  ~Problem() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;
};

// The split-K partials of one problem (lt_gemm_partials): S strided batches over K, float32 out.
// Batch s: C_s (N × M, float) = W[:, sK/S, (s+1)K/S)ᵀ-slice × x-slice, slices K/S elements apart in W and x.
struct PartialsProblem {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  PartialsProblem(const LtGemmArgs& g, int splits) {
    const cudaDataType_t t = g.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
    const std::int64_t ks = g.k / splits, plane = g.m * g.n;
    const std::int32_t count = splits;
    check_lt(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul descriptor");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa");
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb");
    check_lt(cublasLtMatrixLayoutCreate(&a, t, ks, g.n, g.k), "layout of W");
    check_lt(cublasLtMatrixLayoutCreate(&b, t, ks, g.m, g.x_stride), "layout of x");
    check_lt(cublasLtMatrixLayoutCreate(&c, CUDA_R_32F, g.n, g.m, g.n), "layout of the partials");
    for (auto [layout, stride] : {std::pair{a, ks}, std::pair{b, ks}, std::pair{c, plane}}) {
      check_lt(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
               "batch count");
      check_lt(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                sizeof stride),
               "batch stride");
    }
  }
  ~PartialsProblem() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
  PartialsProblem(const PartialsProblem&) = delete;
  PartialsProblem& operator=(const PartialsProblem&) = delete;
};

// A shape: what the algorithm choice depends on.
using Key = std::tuple<int, int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool>;  // device, dtype, m, n, k, ld x, bias

// Rows up to kExactRows (decode batches) are their own shape; more (prefills of any length) share the choice
// of their power-of-two bucket, so that a server meeting new prompt lengths does not time every one of them.
constexpr std::int64_t kExactRows = 64;

std::int64_t row_bucket(std::int64_t m) {
  if (m <= kExactRows) return m;
  std::int64_t b = kExactRows;
  while (b < m) b *= 2;
  return b;
}

Key key_of(const LtGemmArgs& g, int device) {
  return {device, static_cast<int>(g.dtype), row_bucket(g.m), g.n, g.k, g.x_stride, g.bias != nullptr};
}

struct Chosen {
  cublasLtMatmulAlgo_t algo;
  LtChoice choice;
};

std::mutex mu;                                         // guards everything below
std::map<int, cublasLtHandle_t> handles;               // per device
std::map<int, void*> workspaces;                       // per device
std::map<Key, Chosen> chosen;
std::map<std::tuple<Key, int>, cublasLtMatmulAlgo_t> chosen_partials;  // (shape, splits)

cublasLtHandle_t handle_for(int device) {
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  check_lt(cublasLtCreate(&h), "create");
  return handles[device] = h;
}

// The device's workspace, allocated by its first call outside a graph capture (cudaMalloc is not allowed
// inside one); null while capturing before that.
void* workspace_for(int device, bool capturing) {
  auto it = workspaces.find(device);
  if (it != workspaces.end()) return it->second;
  if (capturing) return nullptr;
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, kWorkspaceBytes), "workspace");
  return workspaces[device] = p;
}

// GPU µs per call of `run` (kWarmups untimed calls, then kTimed between two events), host-synchronised.
template <class F>
double time_us(Stream stream, F&& run) {
  for (int i = 0; i < kWarmups; ++i) run();
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "event");
  check_cuda(cudaEventCreate(&stop), "event");
  check_cuda(cudaEventRecord(start, stream), "event record");
  for (int i = 0; i < kTimed; ++i) run();
  check_cuda(cudaEventRecord(stop, stream), "event record");
  check_cuda(cudaEventSynchronize(stop), "event sync");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, start, stop), "elapsed time");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 1e3 * ms / kTimed;
}

}  // namespace

bool lt_gemm(const LtGemmArgs& g, Stream stream) {
  if (g.dtype != DType::bf16 && g.dtype != DType::f16) throw Error("lt_gemm: bf16 or fp16 only");
  if (!g.x || !g.w || !g.y) throw Error("lt_gemm: null x, W or y");
  if (g.m < 1 || g.n < 1 || g.k < 1 || g.x_stride < g.k)
    throw Error(cat("lt_gemm: bad shape M ", g.m, " N ", g.n, " K ", g.k, " (x rows ", g.x_stride, " apart)"));
  // Every candidate is asked for 16-byte aligned pointers and rows (kAlignment); anything else: the caller's path.
  auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % kAlignment == 0; };
  if (!aligned(g.x) || !aligned(g.w) || !aligned(g.y) || (g.bias && !aligned(g.bias)) || g.k % 8 != 0 ||
      g.n % 8 != 0 || g.x_stride % 8 != 0)
    return false;
  int device = 0;
  check_cuda(cudaGetDevice(&device), "device");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(stream, &status), "capture status");
  const bool capturing = status != cudaStreamCaptureStatusNone;
  std::lock_guard<std::mutex> lock(mu);
  const cublasLtHandle_t h = handle_for(device);
  void* ws = workspace_for(device, capturing);
  if (!ws) return false;  // the first call on this device is inside a capture: the caller's own path
  const Problem p(g);
  const float alpha = 1, beta = 0;
  auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(h, p.op, &alpha, g.w, p.a, g.x, p.b, &beta, g.y, p.c, g.y, p.c, &algo, ws, kWorkspaceBytes,
                          stream);
  };
  const Key key = key_of(g, device);
  if (auto it = chosen.find(key); it != chosen.end()) {
    // A bucket's choice was timed on another row count: run it where cuBLASLt says it applies.
    cublasLtMatmulHeuristicResult_t fits;
    if (g.m <= kExactRows ||
        cublasLtMatmulAlgoCheck(h, p.op, p.a, p.b, p.c, p.c, &it->second.algo, &fits) == CUBLAS_STATUS_SUCCESS) {
      check_lt(run(it->second.algo), "matmul");
      return true;
    }
    // Where it does not apply: the caller's GEMM (torch's), unless LLMBENCH_LT_UNFIT=heuristic asks for
    // cuBLASLt's first heuristic candidate, as before (an A/B switch, read at every call), which asked the
    // heuristic again at every call. 64 streams on the H200, one call, two rounds each (docs/serving.md,
    // session 30): chunked prefill 5,203 → 5,299 output tok/s, batched prefill 5,865 → 5,900.
    const char* unfit = std::getenv("LLMBENCH_LT_UNFIT");
    if (!(unfit && std::strcmp(unfit, "heuristic") == 0)) return false;
  }

  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
  cublasLtMatmulHeuristicResult_t found[kMaxCandidates];
  int count = 0;
  const cublasStatus_t hs = [&] {
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &kWorkspaceBytes, sizeof kWorkspaceBytes);
    // Split-K partial sums in float only: the in-place and output-type reductions round every partial to
    // bf16/fp16 (on Qwen2.5-7B's decode shapes the H200's fastest candidates were not among those anyway).
    const std::uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    if (s == CUBLAS_STATUS_SUCCESS)
      s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions,
                                               sizeof reductions);
    for (const auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, attr, &kAlignment, sizeof kAlignment);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    return cublasLtMatmulAlgoGetHeuristic(h, p.op, p.a, p.b, p.c, p.c, pref, kMaxCandidates, found, &count);
  }();
  cublasLtMatmulPreferenceDestroy(pref);
  if (hs != CUBLAS_STATUS_SUCCESS || count < 1) return false;  // nothing offered: the caller's own path

  const std::int64_t w_bytes = g.n * g.k * 2;
  const bool tune = w_bytes >= kLtTuneMinWeightBytes || g.m >= kLtTuneMinRows;
  const bool known = chosen.count(key) > 0;  // the bucket's choice does not apply to this row count
  if (capturing || known || !tune || count == 1) {
    check_lt(run(found[0].algo), "matmul");
    if (!capturing && !known) chosen[key] = {found[0].algo, {0, count, 0, 0}};  // nothing to time: keep the first
    return true;
  }
  Chosen best{found[0].algo, {0, count, 0, 0}};
  double best_us = -1;
  for (int i = 0; i < count; ++i) {
    if (found[i].state != CUBLAS_STATUS_SUCCESS || run(found[i].algo) != CUBLAS_STATUS_SUCCESS) continue;
    const double us = time_us(stream, [&] { run(found[i].algo); });
    if (i == 0) best.choice.first_us = us;
    if (best_us < 0 || us < best_us) {
      best_us = us;
      best.algo = found[i].algo;
      best.choice.index = i;
    }
  }
  if (best_us < 0) return false;
  best.choice.chosen_us = best_us;
  chosen[key] = best;
  check_lt(run(best.algo), "matmul");  // y from the chosen algorithm, as every later call
  return true;
}

int lt_split_k(const LtGemmArgs& g) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "device");
  std::lock_guard<std::mutex> lock(mu);
  auto it = chosen.find(key_of(g, device));
  if (it == chosen.end()) return 0;
  std::uint32_t splits = 1;
  std::size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&it->second.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits,
                                           &written) != CUBLAS_STATUS_SUCCESS)
    return 1;
  return std::max<int>(1, static_cast<int>(splits));
}

bool lt_gemm_partials(const LtGemmArgs& g, int splits, float* partials, Stream stream) {
  if (g.dtype != DType::bf16 && g.dtype != DType::f16) throw Error("lt_gemm_partials: bf16 or fp16 only");
  if (!g.x || !g.w || !partials) throw Error("lt_gemm_partials: null x, W or partials");
  if (g.bias) throw Error("lt_gemm_partials: no bias (add it after the reduction)");
  if (g.m < 1 || g.n < 1 || g.k < 1 || g.x_stride < g.k)
    throw Error(cat("lt_gemm_partials: bad shape M ", g.m, " N ", g.n, " K ", g.k, " (x rows ", g.x_stride, " apart)"));
  auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % kAlignment == 0; };
  if (splits < 2 || g.k % (8 * splits) != 0 || g.n % 8 != 0 || g.x_stride % 8 != 0 || !aligned(g.x) ||
      !aligned(g.w) || !aligned(partials))
    return false;
  int device = 0;
  check_cuda(cudaGetDevice(&device), "device");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(stream, &status), "capture status");
  const bool capturing = status != cudaStreamCaptureStatusNone;
  std::lock_guard<std::mutex> lock(mu);
  const cublasLtHandle_t h = handle_for(device);
  void* ws = workspace_for(device, capturing);
  if (!ws) return false;
  const PartialsProblem p(g, splits);
  const auto key = std::make_tuple(key_of(g, device), splits);
  cublasLtMatmulAlgo_t algo;
  if (auto it = chosen_partials.find(key); it != chosen_partials.end()) {
    algo = it->second;
  } else {
    // The heuristic's first algorithm without a split-K of its own (the batches are the split).
    cublasLtMatmulPreference_t pref = nullptr;
    check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
    cublasLtMatmulHeuristicResult_t found[1];
    int count = 0;
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &kWorkspaceBytes, sizeof kWorkspaceBytes);
    const std::uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_NONE;
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions,
                                                sizeof reductions);
    for (const auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceSetAttribute(pref, attr, &kAlignment, sizeof kAlignment);
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulAlgoGetHeuristic(h, p.op, p.a, p.b, p.c, p.c, pref, 1, found, &count);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || count < 1) return false;
    algo = found[0].algo;
    if (!capturing) chosen_partials[key] = algo;
  }
  const float alpha = 1, beta = 0;
  check_lt(cublasLtMatmul(h, p.op, &alpha, g.w, p.a, g.x, p.b, &beta, partials, p.c, partials, p.c, &algo, ws,
                          kWorkspaceBytes, stream),
           "matmul (partials)");
  return true;
}

std::optional<LtChoice> lt_choice(const LtGemmArgs& g) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "device");
  std::lock_guard<std::mutex> lock(mu);
  auto it = chosen.find(key_of(g, device));
  if (it == chosen.end()) return std::nullopt;
  return it->second.choice;
}

}  // namespace llmbench::cuda
