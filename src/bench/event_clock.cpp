#include "llmbench/bench/event_clock.h"

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "llmbench/base/error.h"

namespace llmbench {

struct EventClock::Impl {
  bool cuda = false;
  std::vector<HostClock::time_point> host;
#ifdef LLMBENCH_WITH_CUDA
  std::vector<at::cuda::CUDAEvent> events;
#endif
};

EventClock::EventClock(const torch::Device& device, int slots) : impl_(std::make_unique<Impl>()) {
  impl_->cuda = device.is_cuda();
  impl_->host.resize(slots);
#ifdef LLMBENCH_WITH_CUDA
  if (impl_->cuda) {
    impl_->events.reserve(slots);
    for (int i = 0; i < slots; ++i) impl_->events.emplace_back(cudaEventDefault);
  }
#endif
}

EventClock::~EventClock() = default;

void EventClock::mark(int slot) {
#ifdef LLMBENCH_WITH_CUDA
  if (impl_->cuda) {
    impl_->events.at(slot).record();
    return;
  }
#endif
  impl_->host.at(slot) = HostClock::now();
}

void EventClock::synchronize() {
#ifdef LLMBENCH_WITH_CUDA
  if (impl_->cuda) c10::cuda::getCurrentCUDAStream().synchronize();
#endif
}

double EventClock::elapsed_ms(int a, int b) const {
#ifdef LLMBENCH_WITH_CUDA
  if (impl_->cuda) return impl_->events.at(a).elapsed_time(impl_->events.at(b));
#endif
  return ms_between(impl_->host.at(a), impl_->host.at(b));
}

void synchronize_device(const torch::Device& device) {
#ifdef LLMBENCH_WITH_CUDA
  if (device.is_cuda()) c10::cuda::getCurrentCUDAStream(device.has_index() ? device.index() : -1).synchronize();
#endif
}

}  // namespace llmbench
