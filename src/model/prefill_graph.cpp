#include "llmbench/model/prefill_graph.h"

#include <cstdlib>
#include <string>

#include "llmbench/base/error.h"
#include "llmbench/base/switch.h"
#include "llmbench/bench/memory.h"

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace llmbench {

struct PrefillGraph::Impl {
  Model* model = nullptr;
  torch::Tensor ids;     // [B, P] int64, static input
  torch::Tensor logits;  // [B, V] float32, static output
  std::uint64_t activation_bytes = 0;
#ifdef LLMBENCH_WITH_CUDA
  at::cuda::CUDAGraph graph;
#endif
};

bool PrefillGraph::enabled() { return env_switch("LLMBENCH_PREFILL_GRAPH", {"1", "0"}) == 0; }

bool PrefillGraph::available(const torch::Device& device) {
#ifdef LLMBENCH_WITH_CUDA
  return device.is_cuda();
#else
  (void)device;
  return false;
#endif
}

PrefillGraph::PrefillGraph(Model& model, std::int64_t prompt_len) : impl_(std::make_unique<Impl>()) {
  if (!available(model.device())) throw Error("CUDA graphs need a CUDA device and a CUDA build of llmbench");
  if (model.group()) throw Error("PrefillGraph: not with tensor parallelism (its collectives are not captured)");
  if (!model.cache().allocated()) throw Error("PrefillGraph before allocate_cache");
  if (prompt_len < 1 || prompt_len > model.cache().max_len())
    throw Error(cat("PrefillGraph: a prompt of ", prompt_len, " tokens does not fit the cache of ", model.cache().max_len()));
#ifdef LLMBENCH_WITH_CUDA
  torch::NoGradGuard no_grad;
  impl_->model = &model;
  const std::int64_t b = model.cache().batch();
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(model.device());
  impl_->ids = torch::full({b, prompt_len}, 3, i64);  // [B, P] int64

  // As DecodeGraph: warm up on the side stream (cuBLASLt's and cuDNN's plans, the allocator), then capture.
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, model.device().index());
  c10::cuda::getCurrentCUDAStream().synchronize();
  {
    c10::cuda::CUDAStreamGuard guard(side);
    for (int i = 0; i < 2; ++i) {
      model.reset_cache();
      model.prefill(impl_->ids);
    }
    model.reset_cache();
    side.synchronize();
    const std::uint64_t before = allocated_bytes(model.device());
    reset_peak_memory(model.device());
    impl_->graph.capture_begin();
    impl_->logits = model.prefill(impl_->ids);
    impl_->graph.capture_end();
    side.synchronize();
    const std::uint64_t peak = peak_allocated_bytes(model.device());
    impl_->activation_bytes = peak > before ? peak - before : 0;
  }
  model.reset_cache();
  c10::cuda::getCurrentCUDAStream().synchronize();
#endif
}

PrefillGraph::~PrefillGraph() = default;

std::int64_t PrefillGraph::batch() const { return impl_->ids.size(0); }
std::int64_t PrefillGraph::prompt_len() const { return impl_->ids.size(1); }
std::uint64_t PrefillGraph::activation_bytes() const { return impl_->activation_bytes; }

torch::Tensor PrefillGraph::prefill(const torch::Tensor& ids) {
#ifdef LLMBENCH_WITH_CUDA
  if (ids.sizes() != impl_->ids.sizes())
    throw Error(cat("PrefillGraph::prefill: ids ", ids.sizes(), " are not the captured ", impl_->ids.sizes()));
  impl_->ids.copy_(ids, /*non_blocking=*/true);
  impl_->graph.replay();
  impl_->model->note_replayed_prefill(impl_->ids.size(1));
  return impl_->logits;
#else
  (void)ids;
  throw Error("CUDA graphs are not available in this build");
#endif
}

}  // namespace llmbench
