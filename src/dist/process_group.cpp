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
#include "llmbench/dist/nccl_window.h"

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

// Waits for a collective. Its failure (Gloo: --dist-timeout passed, or another rank's connection closed) is
// one line naming this rank and the timeout, Gloo's own text (which names neither) after it.
template <class Work>
void wait_collective(const Work& work, const DistEnv& env, std::chrono::milliseconds timeout) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    const std::string what = first_line(e.what());
    const std::string why = what.find("Timed out") != std::string::npos
                                ? cat("a collective timed out after --dist-timeout ", shown(timeout.count() / 1000.0),
                                      " s (another rank stopped or is stuck)")
                                : std::string("a collective failed (another rank exited or closed its connection)");
    // main prefixes a rank other than 0's message with "rank N: " already.
    const std::string who = env.rank ? cat("tensor-parallel group of ", env.world) : cat("tensor-parallel rank 0 of ", env.world);
    throw Error(cat(who, ": ", why, ": ", what));
  }
}

}  // namespace

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<BackendBase> backend;
};

ProcessGroup::~ProcessGroup() { shutdown(false); }

void ProcessGroup::shutdown(bool graceful) {
  if (!impl_ || !impl_->backend) return;
#ifdef LLMBENCH_HAVE_NCCL
  // NCCL communicators are ended while CUDA is still up: left to static destruction at exit, the
  // process group's destructor meets a CUDA runtime that is shutting down and aborts the rank.
  if (backend_ == "nccl") {
    try {
      if (window_ && !graceful) window_->release_on_failure();
      window_.reset();  // deregistered while the communicator lives
      auto& nccl = static_cast<c10d::ProcessGroupNCCL&>(*impl_->backend);
      if (graceful)
        nccl.shutdown();
      else
        nccl.abort();
    } catch (const std::exception& e) {
      log::debug(cat("rank ", env_.rank, ": NCCL shutdown: ", first_line(e.what())));
    }
  }
#endif
  impl_->backend.reset();
}

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
    g->setup_window();
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

void ProcessGroup::setup_window() {
#ifdef LLMBENCH_HAVE_NCCL
  // Opt-in until measured on two GPUs (docs/distributed.md): LLMBENCH_TP_ALLREDUCE=window.
  if (const char* v = std::getenv("LLMBENCH_TP_ALLREDUCE"); !v || std::string(v) != "window") {
    window_note_ = "not asked for (LLMBENCH_TP_ALLREDUCE=window)";
    return;
  }
  barrier();  // the communicator exists after a first collective
  const std::int64_t comm = static_cast<c10d::ProcessGroupNCCL&>(*impl_->backend).getCommPtr();
  std::string why = comm ? "" : "no NCCL communicator";
  std::unique_ptr<NcclWindow> w = comm ? NcclWindow::allocate(kWindowBytes, device_.index(), &why) : nullptr;
  auto everywhere = [&](bool ok) {  // registration is collective: every rank goes on only if every rank can
    for (double v : all_gather(ok ? 1.0 : 0.0))
      if (v < 0.5) return false;
    return true;
  };
  bool ok = everywhere(w != nullptr);
  if (ok) ok = everywhere(w->register_with(comm, &why));
  if (!ok) {
    if (w) w->release_on_failure();
    window_note_ = why.empty() ? "another rank could not register an NCCL window" : why;
    log::info(cat("rank ", env_.rank, ": all-reduces through ProcessGroupNCCL (no NCCL symmetric window: ", window_note_, ")"));
    return;
  }
  window_ = std::move(w);
  log::debug(cat("rank ", env_.rank, ": NCCL symmetric window of ", kWindowBytes, " bytes for small all-reduces"));
#endif
}

ProcessGroup::Impl& ProcessGroup::live() {
  if (!impl_ || !impl_->backend) throw Error("tensor-parallel group: a collective after the group was ended");
  return *impl_;
}

std::string ProcessGroup::allreduce_path(std::int64_t bytes) const {
  if (backend_ != "nccl") return backend_;
  return window_ && bytes <= window_->capacity() ? "nccl-window" : "nccl";
}

void ProcessGroup::all_reduce_sum_(torch::Tensor& t) {
  if (++reduces_ == abort_at_) std::abort();
  if (!t.is_contiguous()) throw Error("all_reduce_sum_: the tensor must be contiguous");
  if (window_ && t.nbytes() <= static_cast<std::size_t>(window_->capacity()) &&
      (t.scalar_type() == torch::kBFloat16 || t.scalar_type() == torch::kHalf || t.scalar_type() == torch::kFloat32)) {
    window_->all_reduce_sum_(t);
    return;
  }
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  // Gloo sums float32/float64 everywhere; reduced-precision tensors go through float32.
  const bool widen = backend_ == "gloo" && t.scalar_type() != torch::kFloat32 && t.scalar_type() != torch::kFloat64;
  std::vector<at::Tensor> ts{widen ? t.to(torch::kFloat32) : t};
  wait_collective(live().backend->allreduce(ts, opts), env_, timeout_);
  if (widen) t.copy_(ts[0]);
}

void ProcessGroup::broadcast_(torch::Tensor& t, int root) {
  if (!t.is_contiguous()) throw Error("broadcast_: the tensor must be contiguous");
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  std::vector<at::Tensor> ts{t};
  wait_collective(live().backend->broadcast(ts, opts), env_, timeout_);
}

void ProcessGroup::barrier() {
  torch::Tensor one = torch::ones({1}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));  // [1]
  std::vector<at::Tensor> ts{one};
  wait_collective(live().backend->allreduce(ts), env_, timeout_);
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
  wait_collective(live().backend->allreduce(ts, opts), env_, timeout_);
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
