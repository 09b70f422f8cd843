#include "llmbench/load/turns.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "llmbench/load/draw.h"

namespace llmbench {

int conversation_turns(const TurnSpread& spread, int conversation) {
  if (spread.turns_stddev <= 0) return spread.turns;
  const double z = normal_draw(spread.seed, static_cast<std::uint32_t>(conversation), 0);
  const double t = std::round(spread.turns + spread.turns_stddev * z);
  return static_cast<int>(std::clamp(t, 1.0, static_cast<double>(kMaxTurns)));
}

double think_time_ms(const TurnSpread& spread, int conversation, int turn) {
  if (spread.delay_stddev_ms <= 0) return spread.delay_ms;
  const double z = normal_draw(spread.seed, static_cast<std::uint32_t>(conversation), static_cast<std::uint32_t>(turn));
  return std::max(0.0, spread.delay_ms + spread.delay_stddev_ms * z);
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
