#include "llmbench/model/decode_graph.h"

#include "llmbench/base/error.h"

#ifdef LLMBENCH_WITH_CUDA
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
  at::cuda::CUDAGraph graph;
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
