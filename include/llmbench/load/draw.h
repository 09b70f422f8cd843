#pragma once
#include <cstdint>

namespace llmbench {

// Random draws keyed by (seed, a, b) rather than taken from a stream, so that a draw does not depend on the
// order in which a load runs (which request finished first): each is a hash of its key, the same with any
// standard library.
// SplitMix64's finalizer: a well-mixed 64-bit value of x (seeds streams and keys draws).
std::uint64_t splitmix64(std::uint64_t x);

double uniform_draw(std::uint64_t seed, std::uint32_t a, std::uint32_t b);  // in [0, 1)
double normal_draw(std::uint64_t seed, std::uint32_t a, std::uint32_t b);   // standard normal

}  // namespace llmbench
