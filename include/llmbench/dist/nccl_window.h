#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include <torch/types.h>

// NCCL's symmetric-memory all-reduce (NCCL ≥ 2.27: ncclMemAlloc + ncclCommWindowRegister with
// NCCL_WIN_COLL_SYMMETRIC) for the small messages of a decode step: the same communicator as the
// process group's (ProcessGroupNCCL::getCommPtr), NCCL's own low-latency kernels for buffers registered
// at the same offset on every rank. A tensor is copied into the window, summed in place, copied back, all
// on the current stream (so it is captured into CUDA graphs with the rest of the step).
// Only in builds with NCCL (LLMBENCH_HAVE_NCCL); elsewhere allocate() returns null.
namespace llmbench::dist {

class NcclWindow {
 public:
  // This rank's part (local): resolves NCCL's window API in the loaded libnccl and allocates `bytes` of
  // cuMem memory on `device`. Null, with the reason in `why`, when any of that is unavailable.
  static std::unique_ptr<NcclWindow> allocate(std::int64_t bytes, int device, std::string* why);
  ~NcclWindow();  // deregisters and frees (call release_on_failure() first after a failed collective)

  // Collective (every rank, same size): registers the buffer with the communicator `comm`
  // (ncclComm_t as an integer). False, with the reason in `why`, on an NCCL error.
  bool register_with(std::int64_t comm, std::string* why);
  // After a failure: forget the registration and the memory without calling NCCL (it may hang).
  void release_on_failure();

  std::int64_t capacity() const { return bytes_; }
  // Sums `t` (contiguous, on this device, bfloat16/float16/float32, nbytes ≤ capacity) over the ranks.
  void all_reduce_sum_(torch::Tensor& t);

 private:
  NcclWindow() = default;
  void* buffer_ = nullptr;
  void* window_ = nullptr;  // ncclWindow_t
  std::int64_t comm_ = 0;   // ncclComm_t
  std::int64_t bytes_ = 0;
  int device_ = 0;
};

}  // namespace llmbench::dist
