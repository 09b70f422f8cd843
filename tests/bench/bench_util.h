#pragma once
// Helpers of the GPU micro-benchmarks in tests/bench (no gtest): CUDA error checks and graph timing.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace llmbench::bench {

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
