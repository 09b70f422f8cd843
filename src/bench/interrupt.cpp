#include "llmbench/bench/interrupt.h"

#include <atomic>
#include <csignal>
#include <cstdint>
#include <ctime>

namespace llmbench {
namespace {

volatile std::sig_atomic_t g_signal = 0;
std::atomic<std::int64_t> g_first_ns{0};  // when g_signal came

// A repeat of the signal this soon is the same request: `timeout` signals its child, then the child's
// process group, microseconds apart.
constexpr std::int64_t kRepeatNs = 1'000'000'000;

std::int64_t now_ns() {  // clock_gettime is async-signal-safe
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

extern "C" void on_signal(int sig) {
  if (g_signal == sig) {
    if (now_ns() - g_first_ns.load() < kRepeatNs) return;
    std::signal(sig, SIG_DFL);  // a second time, later: the user insists
    std::raise(sig);
    return;
  }
  g_first_ns = now_ns();
  g_signal = sig;
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int interrupt_signal() { return g_signal; }

int interrupt_exit_code() { return g_signal ? 128 + g_signal : 0; }

}  // namespace llmbench
