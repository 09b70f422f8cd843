#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "llmbench/load/turns.h"

using namespace llmbench;

namespace {

double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

double stddev_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / (v.size() - 1));
}

// Kolmogorov-Smirnov statistic of `sample` against the normal distribution (mean, sd), by hand.
double ks_normal(std::vector<double> sample, double mean, double sd) {
  std::sort(sample.begin(), sample.end());
  const double n = sample.size();
  double d = 0;
  for (std::size_t i = 0; i < sample.size(); ++i) {
    const double f = 0.5 * std::erfc(-(sample[i] - mean) / (sd * std::sqrt(2.0)));
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  return d;
}

}  // namespace

TEST(Turns, WithoutASpreadEveryConversationIsTheSame) {
  const TurnSpread s{4, 0, 250, 0, 9};
  for (int c : {0, 1, 17, 1000000}) {
    EXPECT_EQ(conversation_turns(s, c), 4);
    for (int t : {2, 3, 4}) EXPECT_EQ(think_time_ms(s, c, t), 250);
  }
  EXPECT_EQ(turns_for_requests(s, 12), (std::vector<int>{4, 4, 4}));
  EXPECT_EQ(turns_for_requests(s, 3), std::vector<int>{});  // whole conversations only
  EXPECT_EQ(turns_for_requests(TurnSpread{}, 3), (std::vector<int>{1, 1, 1}));
}

TEST(Turns, ThinkTimesAreNormalAroundTheMean) {
  // 20,000 draws of 2,000 ± 500 ms: the sample passes Kolmogorov-Smirnov against N(2000, 500) at 1 % (critical
  // value 1.63 / sqrt(n)); none is negative (4 sigma below the mean is still above 0).
  const TurnSpread s{3, 0, 2000, 500, 42};
  std::vector<double> v;
  for (int c = 0; c < 10000; ++c)
    for (int t : {2, 3}) v.push_back(think_time_ms(s, c, t));
  EXPECT_NEAR(mean_of(v), 2000, 3 * 500 / std::sqrt(v.size()));
  EXPECT_NEAR(stddev_of(v), 500, 10);
  EXPECT_LT(ks_normal(v, 2000, 500), 1.63 / std::sqrt(v.size()));
  // Deterministic for (seed, conversation, turn); another seed, other draws.
  EXPECT_EQ(think_time_ms(s, 5, 2), think_time_ms(s, 5, 2));
  EXPECT_NE(think_time_ms(s, 5, 2), think_time_ms(s, 5, 3));
  EXPECT_NE(think_time_ms(s, 5, 2), think_time_ms(TurnSpread{3, 0, 2000, 500, 43}, 5, 2));
}

TEST(Turns, ThinkTimesAreNeverNegative) {
  // Around 0 half the draws would be negative: they are 0.
  const TurnSpread s{2, 0, 0, 10, 1};
  int zeros = 0;
  for (int c = 0; c < 4000; ++c) {
    const double d = think_time_ms(s, c, 2);
    EXPECT_GE(d, 0);
    zeros += d == 0;
  }
  EXPECT_NEAR(zeros, 2000, 3 * std::sqrt(4000 * 0.25));
}

TEST(Turns, TurnsAreRoundedNormalDrawsOfAtLeastOne) {
  // 5 ± 2 turns, rounded: the mean stays 5 (draws under 0.5, 1.2 % of them, are raised to 1: +0.01) and the
  // variance gains the rounding's 1/12.
  const TurnSpread s{5, 2, 0, 0, 3};
  std::vector<double> v;
  for (int c = 0; c < 20000; ++c) v.push_back(conversation_turns(s, c));
  for (double x : v) {
    EXPECT_GE(x, 1);
    EXPECT_EQ(x, std::round(x));
  }
  EXPECT_NEAR(mean_of(v), 5.01, 3 * 2 / std::sqrt(v.size()));
  EXPECT_NEAR(stddev_of(v), std::sqrt(4 + 1.0 / 12), 0.04);
  // Rounded N(5, 2): P(turns == 5) = P(4.5 <= x < 5.5) = erf(0.25 / sqrt 2) = 0.1974.
  const double fives = std::count(v.begin(), v.end(), 5.0) / static_cast<double>(v.size());
  EXPECT_NEAR(fives, 0.1974, 3 * std::sqrt(0.1974 * 0.8026 / v.size()));
  // The widest spread --turns-stddev allows is kept in [1, kMaxTurns]: half the draws are under 1.5, 16 % are
  // over 999.5 (z = 0.9975).
  const TurnSpread wide{2, kMaxTurns, 0, 0, 3};
  int ones = 0, most = 0;
  for (int c = 0; c < 2000; ++c) {
    const int t = conversation_turns(wide, c);
    EXPECT_GE(t, 1);
    EXPECT_LE(t, kMaxTurns);
    ones += t == 1;
    most += t == kMaxTurns;
  }
  EXPECT_NEAR(ones, 1000, 3 * std::sqrt(2000 * 0.25));
  EXPECT_NEAR(most, 2000 * 0.1593, 3 * std::sqrt(2000 * 0.1593 * 0.8407));
}

TEST(Turns, RequestsAreConversationsInOrderTheLastCutToFit) {
  const TurnSpread s{4, 2.5, 0, 0, 11};
  for (int requests : {1, 2, 7, 30, 100, 1001}) {
    const std::vector<int> plan = turns_for_requests(s, requests);
    ASSERT_FALSE(plan.empty());
    EXPECT_EQ(std::accumulate(plan.begin(), plan.end(), 0), requests) << requests;
    for (std::size_t i = 0; i + 1 < plan.size(); ++i) EXPECT_EQ(plan[i], conversation_turns(s, static_cast<int>(i)));
    EXPECT_LE(plan.back(), conversation_turns(s, static_cast<int>(plan.size() - 1)));
    EXPECT_GE(plan.back(), 1);
  }
}
