#pragma once
#include <chrono>
#include <memory>
#include <vector>

#include <torch/types.h>

namespace llmbench {

using HostClock = std::chrono::steady_clock;

inline double ms_between(HostClock::time_point a, HostClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Instants inside a generate loop that must not cost a host synchronisation. On CUDA, mark() records an
// event on the current stream (read back after the run); on CPU, where ops are synchronous, it reads the
// host clock. Slots are preallocated so the decode loop allocates nothing.
class EventClock {
 public:
  EventClock(const torch::Device& device, int slots);
  ~EventClock();
  EventClock(const EventClock&) = delete;
  EventClock& operator=(const EventClock&) = delete;

  void mark(int slot);
  // Blocks until every recorded event completed (call once, after the loop).
  void synchronize();
  // Milliseconds from slot a to slot b (after synchronize()).
  double elapsed_ms(int a, int b) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Waits for the device's queued work (no-op on CPU).
void synchronize_device(const torch::Device& device);

}  // namespace llmbench
