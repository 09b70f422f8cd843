#pragma once
#include <cstdint>
#include <vector>

namespace llmbench {

constexpr int kMaxTurns = 1000;  // --turns, and a drawn conversation's turns at most

// Conversations of `llmbench load --turns`: how many turns each has and the think time before each later
// turn. With no spread every conversation has `turns` turns and every think time is `delay_ms`; with a
// spread (AIPerf's turn mean/stddev) each is drawn from a normal distribution around them: turns rounded and
// kept in [1, kMaxTurns], think times kept at 0 or more. A draw depends only on (seed, conversation, turn),
// not on the order in which a load runs, so every point of a sweep has the same conversations.
struct TurnSpread {
  int turns = 1;
  double turns_stddev = 0;
  double delay_ms = 0;
  double delay_stddev_ms = 0;
  std::uint64_t seed = 0;
};

// The turns of conversation `conversation` (0, 1, ...).
int conversation_turns(const TurnSpread& spread, int conversation);

// The think time before turn `turn` (2, 3, ...) of conversation `conversation`, in ms.
double think_time_ms(const TurnSpread& spread, int conversation, int turn);

// The conversations that make up exactly `requests` requests, in order: each one's turns, the last cut short
// where the drawn turns would pass `requests`. Without a spread: requests / turns conversations of `turns`.
std::vector<int> turns_for_requests(const TurnSpread& spread, int requests);

}  // namespace llmbench
