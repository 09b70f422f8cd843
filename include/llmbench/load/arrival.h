#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace llmbench {

// How an open-loop load spaces its requests. Poisson: exponential gaps; constant: equal gaps;
// gamma:SHAPE: gamma gaps with the same mean (shape < 1 burstier than Poisson, > 1 smoother).
struct Arrival {
  enum class Kind { poisson, constant, gamma };
  Kind kind = Kind::poisson;
  double shape = 1.0;
  std::string name() const;  // "poisson", "constant", "gamma:0.5"
};

// Parses "poisson", "constant" or "gamma:SHAPE" (SHAPE > 0); throws UsageError.
Arrival parse_arrival(const std::string& text);

// Issue times (seconds from the start) of `n` requests at `rate` per second; the first is at 0.
// Deterministic for a seed.
std::vector<double> arrival_times(const Arrival& arrival, double rate, std::size_t n, std::uint64_t seed);

}  // namespace llmbench
