#include "llmbench/dist/process_group.h"

#include <cstdlib>

#include <torch/torch.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef LLMBENCH_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef LLMBENCH_HAVE_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"

namespace llmbench::dist {
namespace {

// libtorch 1.13: the backends derive from c10d::ProcessGroup; 2.x: from c10d::Backend (the ProcessGroup
// there dispatches to backends). Both have the allreduce/broadcast calls used here.
#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

bool is_loopback(const std::string& addr) { return addr == "localhost" || addr.rfind("127.", 0) == 0; }

// LLMBENCH_TEST_ABORT_RANK=<rank>@<n>: that rank aborts at its n-th all-reduce (the killed-rank tests).
std::int64_t abort_point(int rank) {
  const char* v = std::getenv("LLMBENCH_TEST_ABORT_RANK");
  if (!v || !*v) return -1;
  const std::string s = v;
  const auto at = s.find('@');
  try {
    if (at != std::string::npos && std::stoi(s.substr(0, at)) == rank) return std::stoll(s.substr(at + 1));
  } catch (const std::exception&) {
  }
  return -1;
}

}  // namespace

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<BackendBase> backend;
};

ProcessGroup::~ProcessGroup() = default;

std::shared_ptr<ProcessGroup> ProcessGroup::create(const DistEnv& env, const torch::Device& device,
                                                   std::chrono::milliseconds timeout) {
  std::shared_ptr<ProcessGroup> g(new ProcessGroup());
  g->impl_ = std::make_unique<Impl>();
  g->env_ = env;
  g->device_ = device;
  g->timeout_ = timeout;
  g->abort_at_ = abort_point(env.rank);

  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(env.master_port);
  so.isServer = env.rank == 0;
  so.numWorkers = static_cast<std::size_t>(env.world);
  so.waitWorkers = true;
  so.timeout = timeout;
  try {
    g->impl_->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
  } catch (const std::exception& e) {
    throw Error(cat("tensor-parallel rendezvous at ", env.master_addr, ":", env.master_port, " failed (rank ", env.rank,
                    " of ", env.world, "): ", first_line(e.what())));
  }

  if (device.is_cuda()) {
#ifdef LLMBENCH_HAVE_NCCL
    // NVLink multicast (NVLS) can take the GPUs of a shared host out of service: off for every rank.
    ::setenv("NCCL_NVLS_ENABLE", "0", 1);
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(device.index()));
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    g->impl_->backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(g->impl_->store, env.rank, env.world, options);
    g->backend_ = "nccl";
#else
    throw Error("tensor parallelism on CUDA needs NCCL, and this build has none (nccl.h was not found at build time)");
#endif
  } else {
#ifdef LLMBENCH_HAVE_GLOO
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(is_loopback(env.master_addr)
                                   ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                   : c10d::ProcessGroupGloo::createDefaultDevice());
    g->impl_->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(g->impl_->store, env.rank, env.world, options);
    g->backend_ = "gloo";
#else
    throw Error("tensor parallelism on the CPU needs Gloo, and this build has none (gloo headers were not found at build time)");
#endif
  }
  log::debug(cat("rank ", env.rank, " of ", env.world, ": ", g->backend_, " on ", device.str()));
  return g;
}

void ProcessGroup::all_reduce_sum_(torch::Tensor& t) {
  if (++reduces_ == abort_at_) std::abort();
  if (!t.is_contiguous()) throw Error("all_reduce_sum_: the tensor must be contiguous");
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  // Gloo sums float32/float64 everywhere; reduced-precision tensors go through float32.
  const bool widen = backend_ == "gloo" && t.scalar_type() != torch::kFloat32 && t.scalar_type() != torch::kFloat64;
  std::vector<at::Tensor> ts{widen ? t.to(torch::kFloat32) : t};
  impl_->backend->allreduce(ts, opts)->wait();
  if (widen) t.copy_(ts[0]);
}

void ProcessGroup::broadcast_(torch::Tensor& t, int root) {
  if (!t.is_contiguous()) throw Error("broadcast_: the tensor must be contiguous");
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  std::vector<at::Tensor> ts{t};
  impl_->backend->broadcast(ts, opts)->wait();
}

void ProcessGroup::barrier() {
  torch::Tensor one = torch::ones({1}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));  // [1]
  std::vector<at::Tensor> ts{one};
  impl_->backend->allreduce(ts)->wait();
  (void)one.item<float>();  // waits for the reduce itself (CUDA: the stream)
}

std::vector<std::int64_t> ProcessGroup::broadcast_i64(std::vector<std::int64_t> values) {
  torch::Tensor t = torch::tensor(values, torch::kInt64).to(device_);  // [n] int64
  broadcast_(t, 0);
  t = t.cpu();
  return {t.data_ptr<std::int64_t>(), t.data_ptr<std::int64_t>() + t.numel()};
}

std::vector<double> ProcessGroup::all_gather(double value) {
  torch::Tensor t = torch::zeros({env_.world}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));  // [world]
  t[env_.rank] = value;
  std::vector<at::Tensor> ts{t};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  impl_->backend->allreduce(ts, opts)->wait();
  t = t.cpu();
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

std::vector<std::string> ProcessGroup::devices() {
  std::vector<std::string> out;
  for (double index : all_gather(device_.is_cuda() ? device_.index() : -1))
    out.push_back(index < 0 ? "cpu" : cat("cuda:", static_cast<int>(index)));
  return out;
}

}  // namespace llmbench::dist
