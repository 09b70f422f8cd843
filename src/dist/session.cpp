#include "llmbench/dist/session.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/bench/device_env.h"
#include "llmbench/bench/event_clock.h"
#include "llmbench/dist/launcher.h"

namespace llmbench::dist {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

TpSession session;  // this process's one group (start_tensor_parallel), ended by end_tensor_parallel
int session_tp = 0;

}  // namespace

void end_tensor_parallel(bool graceful) {
  if (!session.group) return;
  if (graceful) {
    // Every rank's collectives finish before any rank ends its communicators: rank 0's last commands
    // (a serving engine's slot frees and `stop`) are asynchronous broadcasts under NCCL, and a shutdown
    // that overtook them aborted them under the other rank.
    try {
      session.group->barrier();
    } catch (const std::exception& e) {
      log::warn(cat("tensor-parallel: the closing barrier failed: ", first_line(e.what())));
      graceful = false;
    }
  }
  session.group->shutdown(graceful);
  session.group.reset();
}

std::optional<std::string> finish_tensor_parallel(std::chrono::milliseconds timeout) {
  end_tensor_parallel(true);  // NCCL's shutdown is collective: the ranks end their groups together
  return wait_for_ranks(timeout);
}

TpSession start_tensor_parallel(int tp, const std::string& device, std::chrono::milliseconds timeout) {
  if (session_tp) {
    if (tp != session_tp) throw UsageError(cat("--tp ", tp, ": this process already runs with --tp ", session_tp));
    return session;
  }
  const auto env = join_or_launch(tp);
  if (!env) return {nullptr, resolve_device(device)};
  std::string dev = resolve_device(device);
  if (dev != "cpu") {
    if (dev != "cuda")
      throw UsageError(cat("--device ", device, " with --tp ", tp, ": each rank uses cuda:LOCAL_RANK; give --device cuda (or auto)"));
    const auto gpus = static_cast<int>(torch::cuda::device_count());
    if (env->local_rank >= gpus)
      throw UsageError(cat("--tp ", tp, ": rank ", env->rank, " needs cuda:", env->local_rank, " but this host has ", gpus, " GPU(s)"));
    dev = cat("cuda:", env->local_rank);
  }
  session.group = ProcessGroup::create(*env, torch::Device(dev), timeout);
  session.device = dev;
  session_tp = tp;
  return session;
}

double time_step_allreduces(ProcessGroup& group, std::int64_t count, std::vector<std::int64_t> shape, torch::Dtype dtype,
                            bool graph, int reps, std::string* method) {
  torch::NoGradGuard no_grad;
  const torch::Device device = group.device();
  torch::Tensor x = torch::ones(shape, torch::TensorOptions().dtype(dtype).device(device));  // the step's [B, 1, H]
  auto step = [&] {
    for (std::int64_t i = 0; i < count; ++i) group.all_reduce_sum_(x);
  };
  const std::string what = cat(count, " all-reduces of ", shape_text(shape), " ", c10::toString(dtype), " (one decode step's, via ",
                               group.allreduce_path(x.nbytes()), ")");
  step();  // warm-up: communicators and buffers exist before timing (and before any capture)
  group.barrier();
  double ms = 0;
#ifdef LLMBENCH_WITH_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, device.index());
    c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
    c10::cuda::CUDAStreamGuard guard(side);
    at::cuda::CUDAGraph g;
    if (graph) {
      g.capture_begin();
      step();
      g.capture_end();
      side.synchronize();
      group.barrier();
    }
    at::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);
    start.record(side);
    for (int r = 0; r < reps; ++r) graph ? g.replay() : step();
    end.record(side);
    end.synchronize();
    ms = start.elapsed_time(end) / reps;
    if (method) *method = cat(what, ", ", graph ? "replayed from one CUDA graph" : "issued eagerly", ", ", reps,
                              " times after a barrier, CUDA events; mean per step");
    group.barrier();
    return ms;
  }
#endif
  (void)graph;
  const auto t0 = HostClock::now();
  for (int r = 0; r < reps; ++r) step();
  ms = ms_between(t0, HostClock::now()) / reps;
  if (method) *method = cat(what, ", issued eagerly, ", reps, " times after a barrier, host clock; mean per step");
  group.barrier();
  return ms;
}

}  // namespace llmbench::dist
