#include "llmbench/load/turns.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace llmbench {
namespace {

// SplitMix64's finalizer: a well-mixed 64-bit value of x.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A standard normal draw of its own for (seed, conversation, turn): Box-Muller on two 53-bit uniforms hashed
// from them, so that the figures are the same with any standard library and cost nanoseconds.
double standard_normal(std::uint64_t seed, int conversation, int turn) {
  const std::uint64_t key = mix(mix(seed) ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(conversation)) << 32 |
                                             static_cast<std::uint32_t>(turn)));
  const double u1 = (static_cast<double>(mix(key) >> 11) + 1) * 0x1p-53;   // (0, 1]: the log is finite
  const double u2 = static_cast<double>(mix(key + 1) >> 11) * 0x1p-53;     // [0, 1)
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

}  // namespace

int conversation_turns(const TurnSpread& spread, int conversation) {
  if (spread.turns_stddev <= 0) return spread.turns;
  const double t = std::round(spread.turns + spread.turns_stddev * standard_normal(spread.seed, conversation, 0));
  return static_cast<int>(std::clamp(t, 1.0, static_cast<double>(kMaxTurns)));
}

double think_time_ms(const TurnSpread& spread, int conversation, int turn) {
  if (spread.delay_stddev_ms <= 0) return spread.delay_ms;
  return std::max(0.0, spread.delay_ms + spread.delay_stddev_ms * standard_normal(spread.seed, conversation, turn));
}

std::vector<int> turns_for_requests(const TurnSpread& spread, int requests) {
  std::vector<int> out;
  for (int left = requests; left > 0;) {
    const int t = std::min(conversation_turns(spread, static_cast<int>(out.size())), left);
    if (spread.turns_stddev <= 0 && t < spread.turns) break;  // fixed turns: whole conversations only
    out.push_back(t);
    left -= t;
  }
  return out;
}

}  // namespace llmbench
