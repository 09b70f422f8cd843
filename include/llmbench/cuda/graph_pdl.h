#pragma once
#include <string>

// Programmatic edges into the library GEMMs of a captured CUDA graph (src/cuda/graph_pdl.cu), torch-free.
// Our kernels are launched with programmatic dependent launch (src/cuda/common.cuh): the kernel after one of
// them may be scheduled while it runs. cuBLAS launches its own kernels without that attribute, so a GEMM
// after one of ours starts only when ours has completed. Where cuBLASLt's kernel itself waits for its
// predecessor (`griddepcontrol.wait`, checked per kernel in its machine code by the caller's evidence, see
// docs/performance.md), its edge from one of our kernels may be programmatic too.
namespace llmbench::cuda {

struct GraphPdlResult {
  int kernels = 0;       // kernel nodes in the graph
  int converted = 0;     // edges made programmatic
  std::string log;       // one line per kernel node: its name and what was done (LLMBENCH_GRAPH_PDL_LOG)
};

// For every kernel node whose name starts with `prefix` (e.g. "nvjet_"), whose one dependency is a kernel
// node reached through a plain edge and launched itself with PDL (its own incoming edge is programmatic,
// i.e. one of our kernels, which signal their dependents at their start): the plain edge is replaced by a
// programmatic one. `graph` is a cudaGraph_t that is not yet instantiated. Throws Error on a CUDA failure.
GraphPdlResult make_gemm_edges_programmatic(void* graph, const char* prefix);

}  // namespace llmbench::cuda
