#pragma once
#include <sys/types.h>

#include <string>
#include <thread>
#include <vector>

namespace llmbench {

// The line `llmbench serve` prints on stdout once it accepts connections.
constexpr const char* kListeningPrefix = "llmbench serve: listening on ";

// A server child process: started from `argv` (argv[0] searched in PATH), ready once it printed
// "llmbench serve: listening on http://HOST:PORT" and GET /health answered 200. HOST must be a
// loopback address. The child gets SIGTERM when this object (or this process) goes away, SIGKILL
// 5 s later. Throws Error when it exits, says something else, or is not ready within `timeout_s`.
class ServerProcess {
 public:
  ServerProcess(const std::vector<std::string>& argv, double timeout_s);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& url() const { return url_; }
  pid_t pid() const { return pid_; }
  // SIGTERM, then SIGKILL after `grace_s`; returns the exit status as waitpid gives it.
  int stop(double grace_s = 5);

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string url_;
  std::thread drain_;  // keeps reading the child's stdout so it never blocks on a full pipe
};

}  // namespace llmbench
