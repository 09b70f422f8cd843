#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "llmbench/engine/engine.h"

namespace llmbench::serve {

// A Prometheus histogram of seconds (cumulative buckets, +Inf, _sum, _count). Thread-safe.
class Histogram {
 public:
  Histogram(std::string name, std::string help, std::vector<double> bounds);
  void observe(double seconds);
  void render(std::string& out) const;

 private:
  std::string name_, help_;
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<std::uint64_t> counts_;  // per bucket (not cumulative), last one is +Inf
  double sum_ = 0;
};

// Everything /metrics shows that the HTTP layer measures; engine gauges come from EngineStats.
class Metrics {
 public:
  Metrics();
  Histogram ttft, itl, e2e, queue;

  // One answered request on an API endpoint, by HTTP status (499: the client went away).
  void count_response(int status);
  // One generation that ended, by finish reason (stop, length, cancelled, error).
  void count_finish(const std::string& reason);
  std::atomic<std::uint64_t> prompt_tokens{0};
  std::atomic<std::uint64_t> generation_tokens{0};
  std::atomic<int> connections{0};

  // The Prometheus text exposition format (version 0.0.4).
  std::string render(const EngineStats& engine) const;

 private:
  mutable std::mutex mutex_;
  std::map<int, std::uint64_t> responses_;
  std::map<std::string, std::uint64_t> finishes_;
};

}  // namespace llmbench::serve
