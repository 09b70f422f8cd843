#pragma once
// Helpers of the GPU micro-benchmarks in tests/bench (no gtest): the models' matrix shapes, CUDA error checks
// and graph timing.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace llmbench::bench {

// The decode step's matrices of the benchmarked models: W [n, k] of qkv, o, gate_up, down, lm_head.
struct Matrix {
  const char* name;
  std::int64_t n, k;
};

struct ModelShapes {
  const char* model;
  int layers;
  std::vector<Matrix> matrices;  // qkv, o, gate_up, down, lm_head
};

inline const std::vector<ModelShapes> kModels = {
    {"qwen2.5-7b", 28, {{"qkv", 4608, 3584}, {"o", 3584, 3584}, {"gate_up", 37888, 3584}, {"down", 3584, 18944}, {"lm_head", 152064, 3584}}},
    {"llama-3-8b", 32, {{"qkv", 6144, 4096}, {"o", 4096, 4096}, {"gate_up", 28672, 4096}, {"down", 4096, 14336}, {"lm_head", 128256, 4096}}},
};

// A comma list of integers from the environment variable `name`, or `fallback` when it is unset.
inline std::vector<int> env_ints(const char* name, std::vector<int> fallback) {
  const char* e = std::getenv(name);
  if (!e) return fallback;
  std::vector<int> out;
  for (const char* c = e; *c;) {
    out.push_back(std::atoi(c));
    while (*c && *c != ',') ++c;
    if (*c) ++c;
  }
  return out;
}

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// GPU milliseconds of `reps` replays of a graph of `per_graph` calls of f, per call.
template <class F>
inline double time_per_call(cudaStream_t stream, int per_graph, int reps, F&& f) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture begin");
  for (int i = 0; i < per_graph; ++i) f();
  check(cudaStreamEndCapture(stream, &graph), "capture end");
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  for (int i = 0; i < 3; ++i) check(cudaGraphLaunch(exec, stream), "warm-up");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, stream);
  for (int i = 0; i < reps; ++i) check(cudaGraphLaunch(exec, stream), "replay");
  cudaEventRecord(stop, stream);
  check(cudaEventSynchronize(stop), "sync");
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / (per_graph * reps);
}

}  // namespace llmbench::bench
