#pragma once
#include <optional>
#include <string>

// Where this process sits in a tensor-parallel group, torchrun style: RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR and MASTER_PORT in the environment. Torch-free.
namespace llmbench::dist {

struct DistEnv {
  int rank = 0;                           // 0 .. world - 1; rank 0 prints and writes results
  int world = 1;                          // the tensor-parallel size
  int local_rank = 0;                     // this host's rank: the GPU index it uses (cuda:LOCAL_RANK)
  std::string master_addr = "127.0.0.1";  // rank 0's host: its TCPStore listens there
  int master_port = 0;
};

// The group from the environment; nullopt when WORLD_SIZE is unset. LOCAL_RANK defaults to RANK and
// MASTER_ADDR to 127.0.0.1. Throws UsageError naming the variable for a missing or malformed value.
std::optional<DistEnv> dist_env_from_environment();

// This process's rank: 0 outside a group (used to keep output and results to rank 0).
int process_rank();

}  // namespace llmbench::dist
