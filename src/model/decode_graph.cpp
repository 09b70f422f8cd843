#include "llmbench/model/decode_graph.h"

#include <iostream>

#include "llmbench/base/error.h"
#include "llmbench/base/switch.h"

#ifdef LLMBENCH_WITH_CUDA
#include "llmbench/cuda/graph_pdl.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace llmbench {

struct DecodeGraph::Impl {
  Model* model = nullptr;
  torch::Tensor tokens;  // [B] int64, static input
  torch::Tensor logits;  // [B, V] float32, static output
#ifdef LLMBENCH_WITH_CUDA
  at::cuda::CUDAGraph graph{/*keep_graph=*/true};  // instantiated after its edges are edited
#endif
};

bool DecodeGraph::available(const torch::Device& device) {
#ifdef LLMBENCH_WITH_CUDA
  return device.is_cuda();
#else
  return false;
#endif
}

DecodeGraph::DecodeGraph(Model& model, std::int64_t rows, std::int64_t columns) : impl_(std::make_unique<Impl>()) {
  if (!available(model.device())) throw Error("CUDA graphs need a CUDA device and a CUDA build of llmbench");
  if (!model.cache().allocated()) throw Error("DecodeGraph before allocate_cache");
  if (rows < 0 || rows > model.cache().batch() || (rows > 0 && (columns < 4 || columns > model.cache().max_len())))
    throw Error(cat("DecodeGraph: rows ", rows, " × columns ", columns, " do not fit the cache of ",
                    model.cache().batch(), " × ", model.cache().max_len(), " (columns >= 4)"));
#ifdef LLMBENCH_WITH_CUDA
  torch::NoGradGuard no_grad;
  impl_->model = &model;
  const int64_t b = model.cache().batch();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(model.device());
  impl_->tokens = torch::full({rows > 0 ? rows : b}, 3, i64);  // [R] int64
  auto decode = [&] { return rows > 0 ? model.decode_slots(impl_->tokens, columns) : model.decode_step(impl_->tokens); };
  torch::Tensor prompt = torch::full({b, 1}, 3, i64);  // [B, 1] int64

  // Capture on a side stream (the default stream cannot be captured); warm up there first so lazy
  // initialisation (cuBLAS handles, workspaces) happens outside the capture.
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, model.device().index());
  c10::cuda::getCurrentCUDAStream().synchronize();
  {
    c10::cuda::CUDAStreamGuard guard(side);
    model.reset_cache();
    model.prefill(prompt);
    for (int i = 0; i < 2; ++i) decode();
    side.synchronize();
    impl_->graph.capture_begin();
    impl_->logits = decode();
    impl_->graph.capture_end();
    // LLMBENCH_GRAPH_PDL_GEMM=1: the edges from our kernels into cuBLASLt's GEMMs (nvjet_*) made programmatic
    // (A/B runs; LLMBENCH_GRAPH_PDL_LOG=1 prints each kernel node and what was done to stderr).
    if (env_switch("LLMBENCH_GRAPH_PDL_GEMM", {"0", "1"}) == 1) {
      const cuda::GraphPdlResult r = cuda::make_gemm_edges_programmatic(impl_->graph.raw_cuda_graph(), "nvjet_");
      if (env_switch("LLMBENCH_GRAPH_PDL_LOG", {"0", "1"}) == 1)
        std::cerr << "graph_pdl: " << r.converted << " of " << r.kernels << " kernel nodes' edges made programmatic\n"
                  << r.log;
    }
    impl_->graph.instantiate();
    side.synchronize();
  }
  model.reset_cache();
  c10::cuda::getCurrentCUDAStream().synchronize();
#endif
}

DecodeGraph::~DecodeGraph() = default;

std::int64_t DecodeGraph::rows() const { return impl_->tokens.defined() ? impl_->tokens.size(0) : 0; }

torch::Tensor DecodeGraph::step(const torch::Tensor& tokens) {
#ifdef LLMBENCH_WITH_CUDA
  const auto n = tokens.size(0);
  if (tokens.dim() != 1 || n < 1 || n > impl_->tokens.size(0))
    throw Error(cat("DecodeGraph::step: tokens ", tokens.sizes(), " do not fit the ", impl_->tokens.size(0), " captured rows"));
  impl_->tokens.narrow(0, 0, n).copy_(tokens, /*non_blocking=*/true);
  impl_->graph.replay();
  return impl_->logits.narrow(0, 0, n);
#else
  (void)tokens;
  throw Error("CUDA graphs are not available in this build");
#endif
}

}  // namespace llmbench
