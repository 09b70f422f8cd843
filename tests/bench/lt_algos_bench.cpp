// GPU micro-benchmark (no gtest): how much faster than the default could the bf16 GEMMs of a decode step
// and of a prefill be with another cuBLASLt algorithm? For y [M, N] = x [M, K] · Wᵀ of each matrix of
// Qwen2.5-7B and Llama-3-8B (qkv, o, gate_up, down, lm_head) it times torch's own GEMM (torch::mm_out:
// what llmbench's linear runs for bf16 at more than one row), then every algorithm cuBLASLt's heuristic
// offers for the shape (cublasLtMatmulAlgoGetHeuristic, up to 16, with a 32 MiB workspace), and prints the
// heuristic's first choice, the fastest one and the fastest against torch.
// Usage: bench_lt_algos [model]   (qwen2.5-7b | llama-3-8b | all; default all)
//        LLMBENCH_BENCH_M=4,16,64 (default 4,16,64,2048,6656: decode rows, a 4 × 512 and a 13 × 512 prefill)
// Each figure: 20 calls captured in one CUDA graph, replayed 10 times (M ≤ 64) or 2 times after a warm-up,
// cycling through copies of W that together exceed L2; random normal data (zeros would let the GPU clock
// higher on compute-bound shapes). The "layer" line sums qkv + o + gate_up + down (× layers: the step's
// share). Results are not checked against each other here: the algorithms differ only in summation order.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using llmbench::bench::check;
using llmbench::bench::env_ints;
using llmbench::bench::time_per_call;

using llmbench::bench::kModels;
using llmbench::bench::Matrix;
using llmbench::bench::ModelShapes;

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cuBLASLt status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

// One cuBLASLt problem: y (col-major N × M, i.e. row-major [M, N]) = op(W)ᵀ · x, W row-major [N, K].
struct LtProblem {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  LtProblem(std::int64_t m, std::int64_t n, std::int64_t k) {
    check_lt(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa");
    check_lt(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb");
    check_lt(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, k, n, k), "layout a");
    check_lt(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, k, m, k), "layout b");
    check_lt(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, n, m, n), "layout c");
  }
  ~LtProblem() {
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatmulDescDestroy(op);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "bench_lt_algos: no CUDA device\n");
    return 2;
  }
  const std::string which = argc > 1 ? argv[1] : "all";
  const std::vector<int> ms = env_ints("LLMBENCH_BENCH_M", {4, 16, 64, 2048, 6656});
  torch::NoGradGuard no_grad;
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard guard(stream);
  const std::size_t ws_bytes = std::size_t{32} << 20;
  torch::Tensor ws = torch::empty({static_cast<std::int64_t>(ws_bytes)}, bf16.dtype(torch::kUInt8));
  torch::mm(torch::ones({8, 8}, bf16), torch::ones({8, 8}, bf16));  // torch's cuBLAS first: created after our
  // cuBLASLt handle (before any CUDA work), torch's handle failed with CUBLAS_STATUS_NOT_INITIALIZED
  cublasLtHandle_t lt = nullptr;
  check_lt(cublasLtCreate(&lt), "create");
  constexpr std::int64_t kL2Spill = std::int64_t{400} << 20;  // bytes of W copies cycled per figure
  std::printf("bench_lt_algos: %s, µs per call (torch = torch::mm_out; lt[0] = cuBLASLt heuristic's first; best = "
              "fastest of its candidates)\n", at::cuda::getCurrentDeviceProperties()->name);
  for (const ModelShapes& model : kModels) {
    if (which != "all" && which != model.model) continue;
    for (int m : ms) {
      const int reps = m <= 64 ? 10 : 2;
      double layer[3] = {0, 0, 0};  // torch, lt[0], best over qkv + o + gate_up + down
      for (const Matrix& mat : model.matrices) {
        const std::int64_t w_bytes = mat.n * mat.k * 2;
        const int copies = static_cast<int>(std::max<std::int64_t>(1, (kL2Spill + w_bytes - 1) / w_bytes));
        std::vector<torch::Tensor> ws_copies;  // [N, K] each
        for (int i = 0; i < copies; ++i) ws_copies.push_back(torch::randn({mat.n, mat.k}, bf16) * 0.02);
        const torch::Tensor x = torch::randn({m, mat.k}, bf16);  // [M, K]
        torch::Tensor y = torch::empty({m, mat.n}, bf16);        // [M, N]
        int next = 0;
        const double t_torch = 1e3 * time_per_call(stream.stream(), 20, reps, [&] {
          torch::mm_out(y, x, ws_copies[next++ % copies].t());
        });
        LtProblem p(m, mat.n, mat.k);
        cublasLtMatmulPreference_t pref;
        check_lt(cublasLtMatmulPreferenceCreate(&pref), "preference");
        check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                      sizeof ws_bytes), "workspace");
        const std::uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;  // as lt_gemm: float partial sums
        check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reductions,
                                                      sizeof reductions), "reduction schemes");
        cublasLtMatmulHeuristicResult_t found[16];
        int count = 0;
        check_lt(cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.a, p.b, p.c, p.c, pref, 16, found, &count), "heuristic");
        cublasLtMatmulPreferenceDestroy(pref);
        const float alpha = 1, beta = 0;
        double first = -1, best = 1e30;
        int best_i = -1;
        for (int i = 0; i < count; ++i) {
          auto call = [&] {
            return cublasLtMatmul(lt, p.op, &alpha, ws_copies[next++ % copies].data_ptr(), p.a, x.data_ptr(), p.b, &beta,
                                  y.data_ptr(), p.c, y.data_ptr(), p.c, &found[i].algo, ws.data_ptr(), ws_bytes,
                                  stream.stream());
          };
          if (call() != CUBLAS_STATUS_SUCCESS) continue;  // not runnable after all: skip it
          check(cudaStreamSynchronize(stream.stream()), "candidate");
          const double us = 1e3 * time_per_call(stream.stream(), 20, reps, [&] { call(); });
          if (i == 0) first = us;
          if (us < best) best = us, best_i = i;
        }
        if (best_i < 0) {
          std::printf("%-11s M=%5d %-8s torch %9.2f  no cuBLASLt candidate ran\n", model.model, m, mat.name, t_torch);
          continue;
        }
        std::printf("%-11s M=%5d %-8s torch %9.2f  lt[0] %9.2f  best %9.2f (#%d of %d)  best vs torch %+6.1f %%  "
                    "%7.0f GB/s of W  %5.0f TFLOP/s\n",
                    model.model, m, mat.name, t_torch, first, best, best_i, count, 100 * (best / t_torch - 1),
                    w_bytes / best / 1e3, 2.0 * m * mat.n * mat.k / best / 1e6);
        std::fflush(stdout);
        if (std::strcmp(mat.name, "lm_head") != 0) {
          layer[0] += t_torch;
          layer[1] += first;
          layer[2] += best;
        }
      }
      std::printf("%-11s M=%5d layer    torch %9.2f  lt[0] %9.2f  best %9.2f  best vs torch %+6.1f %% (× %d layers: %+.0f µs)\n",
                  model.model, m, layer[0], layer[1], layer[2], 100 * (layer[2] / layer[0] - 1), model.layers,
                  model.layers * (layer[2] - layer[0]));
    }
  }
  return 0;
}
