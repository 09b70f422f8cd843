#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "llmbench/dist/process_group.h"

// What `run`, `generate` and `serve` call for `--tp N`: join or launch the ranks, pick this rank's
// device, create the process group once per process.
namespace llmbench::dist {

struct TpSession {
  std::shared_ptr<ProcessGroup> group;  // null for one rank
  std::string device;                   // this rank's device: "cpu" or "cuda:LOCAL_RANK" (as given for one rank)
  int rank() const { return group ? group->rank() : 0; }
};

// tp == 1 without WORLD_SIZE in the environment: {null, resolve_device(device)}. Otherwise joins or
// launches the ranks (launcher.h) and creates the group on this rank's device: "cpu" stays the CPU
// (Gloo), "auto"/"cuda" become cuda:LOCAL_RANK (NCCL). Throws UsageError for "cuda:N" with tp > 1, or for
// fewer GPUs on this host than LOCAL_RANK + 1. A second call returns the same session (same tp only).
TpSession start_tensor_parallel(int tp, const std::string& device, std::chrono::milliseconds timeout);

// Ends this process's group, if any (main calls it before returning: NCCL must end before CUDA does);
// `graceful`: after a successful command: a barrier (every rank's collectives done), then
// ProcessGroup::shutdown(true); else the communicators are aborted at once.
void end_tensor_parallel(bool graceful);

// Rank 0 after a successful command: ends its group gracefully (the other ranks do so as they return),
// then wait_for_ranks(timeout) (launcher.h). Waiting first would deadlock: NCCL's shutdown waits for
// every rank.
std::optional<std::string> finish_tensor_parallel(std::chrono::milliseconds timeout);

// The all-reduces of one decode step timed alone: `count` sums of a tensor of `shape` and `dtype`,
// `reps` times after a barrier (CUDA: replayed from one CUDA graph holding the `count` reduces when
// `graph`, else issued eagerly; timed with CUDA events). → mean ms per step; `method` says how.
double time_step_allreduces(ProcessGroup& group, std::int64_t count, std::vector<std::int64_t> shape,
                            torch::Dtype dtype, bool graph, int reps, std::string* method);

}  // namespace llmbench::dist
