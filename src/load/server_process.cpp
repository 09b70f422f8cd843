#include "llmbench/load/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/load/client.h"

namespace llmbench {

namespace {

using SteadyClock = std::chrono::steady_clock;

double seconds_left(SteadyClock::time_point deadline) {
  return std::chrono::duration<double>(deadline - SteadyClock::now()).count();
}

}  // namespace

ServerProcess::ServerProcess(const std::vector<std::string>& argv, double timeout_s) {
  if (argv.empty()) throw Error("no server command");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(cat("pipe: ", std::strerror(errno)));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw Error(cat("fork: ", std::strerror(errno)));
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive llmbench
    if (::getppid() != parent) ::_exit(127);
    // Its own process group: Ctrl-C at a terminal (SIGINT to the foreground group) reaches llmbench alone,
    // which ends its point and then stops the server, instead of the server dying under a running point.
    ::setpgid(0, 0);
    ::dup2(fds[1], STDOUT_FILENO);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  stdout_fd_ = fds[0];
  const std::string what = argv[0];
  const auto deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                 std::chrono::duration<double>(timeout_s));
  try {
    std::string line, seen;
    while (url_.empty()) {
      const double left = seconds_left(deadline);
      if (left <= 0) throw Error(cat(what, " printed no '", kListeningPrefix, "URL' line within ", timeout_s, " s"));
      pollfd p{stdout_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
      if (n <= 0) throw Error(cat(what, " exited before it was listening", seen.empty() ? "" : " (it said: " + seen + ")"));
      line.append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; url_.empty() && (nl = line.find('\n')) != std::string::npos; line.erase(0, nl + 1)) {
        const std::string l = line.substr(0, nl);
        if (l.rfind(kListeningPrefix, 0) == 0) url_ = l.substr(std::strlen(kListeningPrefix));
        else if (seen.size() < 200) seen += l;
      }
    }
    while (!url_.empty() && (url_.back() == '\r' || url_.back() == ' ')) url_.pop_back();
    const Endpoint endpoint = parse_endpoint(url_);
    if (!is_loopback(endpoint.host)) throw Error(cat(what, " listens on ", url_, ", not on a loopback address"));
    drain_ = std::thread([fd = stdout_fd_] {
      char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    });
    for (;;) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw Error(cat(what, " exited before /health answered"));
      }
      try {
        // An https server started here (a test's) is only asked whether it is up: its certificate is checked by
        // the requests that follow, with the options given for them.
        const TlsOptions unchecked{"", true};
        if (http_get(endpoint, "/health", std::max(0.1, std::min(2.0, seconds_left(deadline))), {}, {}, unchecked).first == 200)
          break;
      } catch (const Error&) {
      }
      if (seconds_left(deadline) <= 0) throw Error(cat(url_, "/health did not answer 200 within ", timeout_s, " s"));
      ::usleep(100 * 1000);
    }
  } catch (...) {
    stop(1);
    throw;
  }
  log::debug(cat("server ", what, " (pid ", pid_, ") ready at ", url_));
}

int ServerProcess::stop(double grace_s) {
  int status = 0;
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    const auto deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                   std::chrono::duration<double>(grace_s));
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (seconds_left(deadline) <= 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      ::usleep(20 * 1000);
    }
    pid_ = -1;
  }
  if (drain_.joinable()) drain_.join();  // the child's end closed: read() returns 0
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
  return status;
}

ServerProcess::~ServerProcess() { stop(); }

}  // namespace llmbench
