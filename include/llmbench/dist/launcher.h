#pragma once
#include <chrono>
#include <optional>
#include <string>

#include "llmbench/dist/dist_env.h"

// One-host launch of a tensor-parallel group: `llmbench run --tp 2` makes itself rank 0 and starts the
// other ranks as copies of itself (fork + exec of /proc/self/exe with the same arguments). Torch-free.
namespace llmbench::dist {

// The group this process belongs to for `tp` ranks: from the environment when WORLD_SIZE is set (ranks
// launched by us or by the user; WORLD_SIZE must equal tp), else a fresh one-host group whose rank 0 is
// this process: a free loopback port, tp − 1 children with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/
// MASTER_PORT set, their stdout sent to /dev/null, killed when this process dies (PR_SET_PDEATHSIG).
// A watcher thread reaps them: when one exits with an error or a signal, the others are killed and this
// process exits with a one-line error naming the rank. tp == 1 and no WORLD_SIZE: nullopt.
std::optional<DistEnv> join_or_launch(int tp);

// Rank 0 after its work: waits up to `timeout` for the children to exit (then kills them). Returns the
// failure of a child as a one-line message, or nullopt. A no-op in a process that launched nothing.
std::optional<std::string> wait_for_ranks(std::chrono::milliseconds timeout);

// The failure of a child rank seen by the watcher (nullopt: none). main() prints it instead of the
// secondary error (a reset connection) that rank 0's collective then reports.
std::optional<std::string> child_failure();
// The exit code of that failed rank when it exited by itself (it printed its own one-line error, so the
// command exits with its code and no second line); 0 when it was killed by a signal (or none failed).
int child_failure_exit();

}  // namespace llmbench::dist
