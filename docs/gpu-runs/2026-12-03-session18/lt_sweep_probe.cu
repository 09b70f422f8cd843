// cuBLASLt algorithm sweep for the decode GEMMs: y[M,N] = x[M,K] · W[N,K]^T in bf16, float accumulate.
// Times every algorithm the heuristic returns (up to 64) against the first one (what torch would use).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <string>
#define CK(x) do { auto e = (x); if (e != 0) { printf("error %d at %s:%d\n", (int)e, __FILE__, __LINE__); return 1; } } while (0)
int main() {
  struct Shape { const char* name; int n, k; };
  std::vector<Shape> shapes = {{"qkv", 4608, 3584}, {"o", 3584, 3584}, {"gate_up", 37888, 3584}, {"down", 3584, 18944},
                               {"lm_head", 152064, 3584}, {"L.qkv", 6144, 4096}, {"L.gate_up", 28672, 4096}, {"L.down", 4096, 14336}};
  std::vector<int> Ms_small = {4, 16, 64}, Ms_big = {4, 16, 64, 2048, 6656};
  cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  size_t ws_size = 32 << 20; void* ws; CK(cudaMalloc(&ws, ws_size));
  cudaStream_t st; CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (auto s : shapes) {
    size_t wbytes = (size_t)s.n * s.k * 2;
    int copies = std::max<int>(1, (int)(300e6 / wbytes) + 1);
    std::vector<void*> W(copies);
    for (auto& w : W) { CK(cudaMalloc(&w, wbytes)); cudaMemset(w, 0, wbytes); }
    void *X, *Y; CK(cudaMalloc(&X, (size_t)6656 * s.k * 2)); CK(cudaMalloc(&Y, (size_t)6656 * s.n * 2));
    cudaMemset(X, 0, (size_t)6656 * s.k * 2);
    const bool qwen = s.name[0] != 'L' && std::string(s.name) != "lm_head";
    for (int M : (qwen ? Ms_big : Ms_small)) {
      cublasLtMatmulDesc_t op; CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
      CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
      cublasLtMatrixLayout_t a, b, c;
      CK(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, s.k, s.n, s.k));
      CK(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, s.k, M, s.k));
      CK(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, s.n, M, s.n));
      cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
      CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_size, sizeof ws_size));
      cublasLtMatmulHeuristicResult_t res[64]; int found = 0;
      CK(cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, c, c, pref, 64, res, &found));
      float alpha = 1, beta = 0;
      std::vector<std::pair<float, int>> times;
      for (int i = 0; i < found; ++i) {
        auto run = [&](int r) { return cublasLtMatmul(lt, op, &alpha, W[r % copies], a, X, b, &beta, Y, c, Y, c, &res[i].algo, ws, ws_size, st); };
        bool ok = true;
        for (int r = 0; r < 10; ++r) ok = ok && run(r) == CUBLAS_STATUS_SUCCESS;
        if (!ok) continue;
        int reps = M >= 1024 ? 20 : 200;
        cudaEventRecord(e0, st);
        for (int r = 0; r < reps; ++r) run(r);
        cudaEventRecord(e1, st); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        times.push_back({ms * 1000 / reps, i});
      }
      if (times.empty()) { printf("%s M=%d: no algo\n", s.name, M); continue; }
      float first = -1; for (auto& t : times) if (t.second == 0) first = t.first;
      auto best = *std::min_element(times.begin(), times.end());
      printf("%-10s M=%4d  algos %2d  heuristic[0] %8.2f us  best %8.2f us (#%d, ws %zu B)  %+.1f %%  W %6.0f GB/s  %5.0f TFLOP/s\n", s.name, M, found,
             first, best.first, best.second, res[best.second].workspaceSize, 100 * (best.first / first - 1), wbytes / best.first / 1e3, 2.0 * M * s.n * s.k / best.first / 1e6);
      fflush(stdout);
      cublasLtMatmulPreferenceDestroy(pref); cublasLtMatrixLayoutDestroy(a); cublasLtMatrixLayoutDestroy(b); cublasLtMatrixLayoutDestroy(c);
      cublasLtMatmulDescDestroy(op);
    }
    for (auto& w : W) cudaFree(w);
    cudaFree(X); cudaFree(Y);
  }
  return 0;
}
