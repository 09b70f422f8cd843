#include <cuda.h>

#include <cstring>
#include <vector>

#include "common.cuh"
#include "llmbench/cuda/graph_pdl.h"

namespace llmbench::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(cat("graph_pdl: ", what, ": ", cudaGetErrorString(e)));
}

// The kernel's name: through the runtime, else (a kernel launched through the driver API, as cuBLAS's)
// through the driver's node parameters.
std::string kernel_name(cudaGraphNode_t node) {
  cudaKernelNodeParams p = {};
  if (cudaGraphKernelNodeGetParams(node, &p) == cudaSuccess && p.func) {
    const char* name = nullptr;
    if (cudaFuncGetName(&name, p.func) == cudaSuccess && name) return name;
  }
  (void)cudaGetLastError();
  using GetParams = CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*);
  using FuncName = CUresult (*)(const char**, CUfunction);
  using KernelName = CUresult (*)(const char**, CUkernel);
  static GetParams get_params = nullptr;
  static FuncName func_name = nullptr;
  static KernelName kernel_name_fn = nullptr;
  static bool looked_up = false;
  if (!looked_up) {
    looked_up = true;
    cudaDriverEntryPointQueryResult q;
    void* f = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", &f, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      get_params = reinterpret_cast<GetParams>(f);
    if (cudaGetDriverEntryPointByVersion("cuFuncGetName", &f, 12030, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      func_name = reinterpret_cast<FuncName>(f);
    if (cudaGetDriverEntryPointByVersion("cuKernelGetName", &f, 12030, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      kernel_name_fn = reinterpret_cast<KernelName>(f);
    (void)cudaGetLastError();
  }
  if (!get_params) return "";
  CUDA_KERNEL_NODE_PARAMS d = {};
  if (get_params(reinterpret_cast<CUgraphNode>(node), &d) != CUDA_SUCCESS) return "";
  const char* name = nullptr;
  if (d.func && func_name && func_name(&name, d.func) == CUDA_SUCCESS && name) return name;
  if (d.kern && kernel_name_fn && kernel_name_fn(&name, d.kern) == CUDA_SUCCESS && name) return name;
  return "";
}

struct Deps {
  std::vector<cudaGraphNode_t> nodes;
  std::vector<cudaGraphEdgeData> edges;
};

Deps dependencies(cudaGraphNode_t node) {
  Deps d;
  size_t n = 0;
  check(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &n), "cudaGraphNodeGetDependencies");
  d.nodes.resize(n);
  d.edges.resize(n);
  if (n > 0) check(cudaGraphNodeGetDependencies(node, d.nodes.data(), d.edges.data(), &n), "cudaGraphNodeGetDependencies");
  return d;
}

bool is_kernel(cudaGraphNode_t node) {
  cudaGraphNodeType t;
  check(cudaGraphNodeGetType(node, &t), "cudaGraphNodeGetType");
  return t == cudaGraphNodeTypeKernel;
}

bool programmatic(const cudaGraphEdgeData& e) { return e.type == cudaGraphDependencyTypeProgrammatic; }

}  // namespace

GraphPdlResult make_gemm_edges_programmatic(void* graph_ptr, const char* prefix) {
  auto graph = static_cast<cudaGraph_t>(graph_ptr);
  GraphPdlResult r;
  size_t n = 0;
  check(cudaGraphGetNodes(graph, nullptr, &n), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) check(cudaGraphGetNodes(graph, nodes.data(), &n), "cudaGraphGetNodes");
  const std::size_t plen = std::strlen(prefix);
  for (cudaGraphNode_t k : nodes) {
    if (!is_kernel(k)) continue;
    ++r.kernels;
    const std::string name = kernel_name(k);
    const Deps d = dependencies(k);
    std::string what = "kept";
    if (name.compare(0, plen, prefix) != 0) {
      what = "not a library GEMM";
    } else if (d.nodes.size() != 1 || programmatic(d.edges[0])) {
      what = cat(d.nodes.size(), " dependencies");
    } else if (!is_kernel(d.nodes[0])) {
      what = "after a non-kernel node";
    } else {
      const Deps pd = dependencies(d.nodes[0]);
      bool pdl = false;
      for (const auto& e : pd.edges) pdl = pdl || programmatic(e);
      if (!pdl) {
        what = "after a kernel launched without PDL";
      } else {
        cudaGraphEdgeData edge = {};
        check(cudaGraphRemoveDependencies(graph, &d.nodes[0], &k, &d.edges[0], 1), "cudaGraphRemoveDependencies");
        edge.from_port = cudaGraphKernelNodePortProgrammatic;
        edge.type = cudaGraphDependencyTypeProgrammatic;
        check(cudaGraphAddDependencies(graph, &d.nodes[0], &k, &edge, 1), "cudaGraphAddDependencies");
        ++r.converted;
        what = "programmatic";
      }
    }
    r.log += cat(name.empty() ? "?" : name, ": ", what, "\n");
  }
  return r;
}

}  // namespace llmbench::cuda
