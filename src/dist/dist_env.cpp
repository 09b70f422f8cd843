#include "llmbench/dist/dist_env.h"

#include <cstdlib>

#include "llmbench/base/error.h"

namespace llmbench::dist {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int env_int(const char* name, int lo, int hi) {
  const auto v = env(name);
  if (!v) throw UsageError(cat(name, " is not set (WORLD_SIZE is: a tensor-parallel rank needs RANK, WORLD_SIZE and MASTER_PORT)"));
  std::size_t used = 0;
  long n = 0;
  try {
    n = std::stol(*v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v->size() || n < lo || n > hi) throw UsageError(cat(name, "='", *v, "' is not an integer in [", lo, ", ", hi, "]"));
  return static_cast<int>(n);
}

}  // namespace

std::optional<DistEnv> dist_env_from_environment() {
  if (!env("WORLD_SIZE")) return std::nullopt;
  DistEnv e;
  e.world = env_int("WORLD_SIZE", 1, 4096);
  // A group of one (WORLD_SIZE=1 left in the environment, torchrun with one process) is a single process:
  // RANK and MASTER_PORT are not needed (still checked when given).
  if (e.world == 1 && !env("RANK")) return e;
  e.rank = env_int("RANK", 0, e.world - 1);
  e.local_rank = env("LOCAL_RANK") ? env_int("LOCAL_RANK", 0, 4095) : e.rank;
  e.master_addr = env("MASTER_ADDR").value_or("127.0.0.1");
  if (e.world > 1 || env("MASTER_PORT")) e.master_port = env_int("MASTER_PORT", 1, 65535);
  return e;
}

int process_rank() {
  const auto v = env("RANK");
  if (!v || !env("WORLD_SIZE")) return 0;
  try {
    return std::stoi(*v);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace llmbench::dist
