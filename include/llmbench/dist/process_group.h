#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "llmbench/dist/dist_env.h"

// The tensor-parallel group over PyTorch's c10d: a TCPStore rendezvous at MASTER_ADDR:MASTER_PORT, then
// ProcessGroupNCCL between GPUs or ProcessGroupGloo on the CPU. The c10d headers (whose API differs
// between libtorch 1.13 and 2.x) stay in process_group.cpp.
//   auto g = ProcessGroup::create(env, torch::Device("cuda:1"), std::chrono::seconds(300));
//   g->all_reduce_sum_(partial);   // in place, on the current stream (capturable with NCCL)
namespace llmbench::dist {

class NcclWindow;

class ProcessGroup {
 public:
  // Joins the group (every rank must call it). NCCL for a CUDA device (NCCL_NVLS_ENABLE=0 is set first:
  // NVLink multicast stays off), Gloo for the CPU. A collective that waits longer than `timeout` fails
  // (Gloo: Error; NCCL: its watchdog ends the process). Throws Error when the backend is not in this build.
  static std::shared_ptr<ProcessGroup> create(const DistEnv& env, const torch::Device& device,
                                              std::chrono::milliseconds timeout);
  ~ProcessGroup();  // shutdown(false)
  // Ends the backend now; no collective may follow. Idempotent. NCCL: `graceful` ends the communicators
  // after their queued work (what torch's destroy_process_group does), else aborts them (after a failure,
  // when another rank may never join).
  void shutdown(bool graceful);

  int rank() const { return env_.rank; }
  int world() const { return env_.world; }
  const std::string& backend() const { return backend_; }  // "nccl" | "gloo"
  const torch::Device& device() const { return device_; }
  // How long a collective may wait (--dist-timeout).
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Sums `t` over the ranks, in place. CUDA: queued on the current stream, no host sync. NCCL: a message
  // of at most kWindowBytes goes through NCCL's symmetric-window kernels (nccl_window.h) when asked for
  // (LLMBENCH_TP_ALLREDUCE=window) and every rank could register one, larger ones through ProcessGroupNCCL.
  void all_reduce_sum_(torch::Tensor& t);
  // How all_reduce_sum_ sends a message of `bytes`: "nccl-window", "nccl" or "gloo".
  std::string allreduce_path(std::int64_t bytes) const;
  static constexpr std::int64_t kWindowBytes = 4 << 20;  // a decode step's [B, 1, H]: B·H·2 ≤ 4 MiB
  // Every rank gets root's values of `t` (same shape and dtype on every rank), in place.
  void broadcast_(torch::Tensor& t, int root = 0);
  // Returns when every rank got here (device work queued before it has finished).
  void barrier();
  // Rank 0's values, on every rank (same length everywhere).
  std::vector<std::int64_t> broadcast_i64(std::vector<std::int64_t> values);
  // Each rank's `value`, indexed by rank, on every rank.
  std::vector<double> all_gather(double value);
  // Each rank's device ("cuda:0", "cuda:1", ...), indexed by rank.
  std::vector<std::string> devices();

 private:
  ProcessGroup() = default;
  struct Impl;
  Impl& live();  // impl_, its backend up; throws after shutdown()
  std::unique_ptr<Impl> impl_;
  DistEnv env_;
  torch::Device device_{torch::kCPU};
  std::string backend_;
  std::chrono::milliseconds timeout_{0};
  std::unique_ptr<NcclWindow> window_;  // null: every all-reduce through the backend
  std::string window_note_;              // why there is no window
  void setup_window();
  std::int64_t reduces_ = 0;
  std::int64_t abort_at_ = -1;  // test hook LLMBENCH_TEST_ABORT_RANK=<rank>@<n>: abort at the n-th all-reduce
};

}  // namespace llmbench::dist
