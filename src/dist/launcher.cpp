#include "llmbench/dist/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

#include "llmbench/base/error.h"

extern char** environ;

namespace llmbench::dist {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(20);
// How long the watcher lets rank 0's own error path report a child's failure before it exits itself
// (rank 0 may be blocked in a collective that never returns).
constexpr auto kGrace = std::chrono::milliseconds(500);

struct Child {
  int rank = 0;
  pid_t pid = 0;
  bool done = false;
  int status = 0;
};

// Shared by the watcher thread and the main thread; leaked on purpose so that the detached watcher
// never sees it destroyed while the process exits.
struct Launch {
  std::mutex mutex;
  std::vector<Child> children;
  std::optional<std::string> failure;
  int failure_exit = 0;  // that rank exited by itself with this code (not 0): it printed its own one-line error
  std::atomic<bool> joining{false};
  std::atomic<bool> reported{false};
};
Launch* g_launch = nullptr;

std::string describe(const Child& c) {
  if (WIFSIGNALED(c.status)) {
    const char* name = strsignal(WTERMSIG(c.status));
    return cat("tensor-parallel rank ", c.rank, " (pid ", c.pid, ") was killed by signal ", WTERMSIG(c.status), " (",
               name ? name : "?", "); stopped the other ranks");
  }
  return cat("tensor-parallel rank ", c.rank, " (pid ", c.pid, ") exited with status ", WEXITSTATUS(c.status),
             "; stopped the other ranks");
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }
// A rank that exited by itself with a failure code said why in its own `llmbench: error:` line (main's fail());
// one killed by a signal said nothing.
int own_exit(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 0; }

// Reaps what has exited; returns the first failure seen now.
std::optional<std::string> reap(Launch& l) {
  std::lock_guard<std::mutex> lock(l.mutex);
  std::optional<std::string> failure;
  int code = 0;
  for (auto& c : l.children) {
    if (c.done) continue;
    int status = 0;
    if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
    c.done = true;
    c.status = status;
    if (failed(status) && !failure) failure = describe(c), code = own_exit(status);
  }
  if (failure && !l.failure) l.failure = failure, l.failure_exit = code;
  return failure;
}

void kill_all(Launch& l) {
  std::lock_guard<std::mutex> lock(l.mutex);
  for (auto& c : l.children)
    if (!c.done) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &c.status, 0);
      c.done = true;
    }
}

void watch(Launch* l) {
  for (;;) {
    std::this_thread::sleep_for(kPoll);
    if (l->joining) return;
    const auto failure = reap(*l);
    if (!failure) continue;
    kill_all(*l);
    std::this_thread::sleep_for(kGrace);
    if (l->joining || l->reported.exchange(true)) return;
    int code = 0;
    {
      std::lock_guard<std::mutex> lock(l->mutex);
      code = l->failure_exit;
    }
    if (code != 0) ::_exit(code);  // the rank said what went wrong, in its one line
    std::fprintf(stderr, "llmbench: error: %s\n", failure->c_str());
    std::fflush(stderr);
    ::_exit(kExitFailure);
  }
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(cat("--tp: cannot open a socket to find a free port: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw Error(cat("--tp: cannot bind a loopback port for the rendezvous: ", why));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// argv of this process, as the kernel has it.
std::vector<std::string> self_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::size_t start = 0;
  while (start < all.size()) {
    const std::size_t end = all.find('\0', start);
    args.push_back(all.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (args.empty()) throw Error("--tp: cannot read this process's arguments from /proc/self/cmdline");
  return args;
}

bool is_dist_var(const char* kv) {
  for (const char* name : {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "MASTER_ADDR=", "MASTER_PORT="})
    if (std::strncmp(kv, name, std::strlen(name)) == 0) return true;
  return false;
}

}  // namespace

std::optional<DistEnv> join_or_launch(int tp) {
  if (tp < 1) throw UsageError(cat("--tp must be >= 1, got ", tp));
  if (auto e = dist_env_from_environment()) {
    if (e->world != tp) throw UsageError(cat("--tp ", tp, " disagrees with WORLD_SIZE=", e->world, " in the environment"));
    if (e->world == 1) return std::nullopt;  // a group of one: this process alone, no tensor parallelism
    return e;
  }
  if (tp == 1) return std::nullopt;
  if (g_launch) throw Error("--tp: this process already launched its ranks");

  DistEnv self;
  self.world = tp;
  self.master_port = free_port();
  const std::vector<std::string> args = self_argv();
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull < 0) throw Error(cat("--tp: cannot open /dev/null: ", std::strerror(errno)));
  const pid_t parent = ::getpid();

  auto* launch = new Launch();
  for (int r = 1; r < tp; ++r) {
    // The child's environment is built before fork: after it, only async-signal-safe calls.
    std::vector<std::string> vars;
    for (char** e = environ; *e; ++e)
      if (!is_dist_var(*e)) vars.emplace_back(*e);
    vars.push_back(cat("RANK=", r));
    vars.push_back(cat("WORLD_SIZE=", tp));
    vars.push_back(cat("LOCAL_RANK=", r));
    vars.push_back(cat("MASTER_ADDR=", self.master_addr));
    vars.push_back(cat("MASTER_PORT=", self.master_port));
    std::vector<char*> envp;
    for (auto& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);

    const pid_t pid = ::fork();
    if (pid < 0) {
      for (auto& c : launch->children) ::kill(c.pid, SIGKILL);
      throw Error(cat("--tp: cannot start rank ", r, ": fork failed: ", std::strerror(errno)));
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(kExitFailure);
      ::dup2(devnull, STDOUT_FILENO);
      ::execve("/proc/self/exe", argv.data(), envp.data());
      ::_exit(127);
    }
    launch->children.push_back({r, pid});
  }
  ::close(devnull);
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) ::unsetenv(name);
  ::setenv("RANK", "0", 1);
  ::setenv("WORLD_SIZE", std::to_string(tp).c_str(), 1);
  ::setenv("LOCAL_RANK", "0", 1);
  ::setenv("MASTER_ADDR", self.master_addr.c_str(), 1);
  ::setenv("MASTER_PORT", std::to_string(self.master_port).c_str(), 1);
  g_launch = launch;
  std::thread(watch, launch).detach();
  return self;
}

std::optional<std::string> wait_for_ranks(std::chrono::milliseconds timeout) {
  if (!g_launch) return std::nullopt;
  Launch& l = *g_launch;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    reap(l);
    bool all_done = true;
    {
      std::lock_guard<std::mutex> lock(l.mutex);
      for (const auto& c : l.children) all_done = all_done && c.done;
    }
    if (all_done || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kPoll);
  }
  l.joining = true;
  bool stuck = false;
  {
    std::lock_guard<std::mutex> lock(l.mutex);
    for (const auto& c : l.children) stuck = stuck || !c.done;
  }
  kill_all(l);
  std::lock_guard<std::mutex> lock(l.mutex);
  if (l.failure) return l.failure;
  if (stuck) return cat("tensor-parallel ranks did not exit within ", timeout.count() / 1000.0, " s after rank 0 finished; killed");
  return std::nullopt;
}

std::optional<std::string> child_failure() {
  if (!g_launch) return std::nullopt;
  // Rank 0 fails: often because a child died (its collective saw the connection drop) a moment before
  // the child can be reaped. Give it that moment.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!reap(*g_launch) && std::chrono::steady_clock::now() < deadline) {
    bool all_done = true;
    {
      std::lock_guard<std::mutex> lock(g_launch->mutex);
      if (g_launch->failure) break;
      for (const auto& c : g_launch->children) all_done = all_done && c.done;
    }
    if (all_done) break;
    std::this_thread::sleep_for(kPoll);
  }
  std::lock_guard<std::mutex> lock(g_launch->mutex);
  if (!g_launch->failure || g_launch->reported.exchange(true)) return std::nullopt;
  return g_launch->failure;
}

int child_failure_exit() {
  if (!g_launch) return 0;
  std::lock_guard<std::mutex> lock(g_launch->mutex);
  return g_launch->failure ? g_launch->failure_exit : 0;
}

}  // namespace llmbench::dist
