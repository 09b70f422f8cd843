#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "llmbench/base/error.h"
#include "llmbench/load/arrival.h"

using namespace llmbench;

namespace {

std::vector<double> gaps(const std::vector<double>& times) {
  std::vector<double> g;
  for (std::size_t i = 1; i < times.size(); ++i) g.push_back(times[i] - times[i - 1]);
  return g;
}

}  // namespace

// Kolmogorov-Smirnov statistic of `sample` against the exponential distribution of `rate`, by hand.
double ks_exponential(std::vector<double> sample, double rate) {
  std::sort(sample.begin(), sample.end());
  const double n = sample.size();
  double d = 0;
  for (std::size_t i = 0; i < sample.size(); ++i) {
    const double f = 1 - std::exp(-rate * sample[i]);
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  return d;
}

TEST(Arrival, Parses) {
  EXPECT_EQ(parse_arrival("poisson").kind, Arrival::Kind::poisson);
  EXPECT_EQ(parse_arrival("constant").kind, Arrival::Kind::constant);
  EXPECT_EQ(parse_arrival("gamma:0.5").shape, 0.5);
  EXPECT_EQ(parse_arrival("gamma:0.5").name(), "gamma:0.5");
  for (const char* bad : {"", "uniform", "gamma:", "gamma:0", "gamma:-1", "gamma:x", "gamma:1x"})
    EXPECT_THROW(parse_arrival(bad), UsageError) << bad;
}

TEST(Arrival, ConstantGapsAreExact) {
  const auto t = arrival_times(parse_arrival("constant"), 4, 5, 0);
  ASSERT_EQ(t.size(), 5u);
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_DOUBLE_EQ(t[i], 0.25 * i);
}

TEST(Arrival, PoissonGapsAreExponential) {
  const double rate = 50;
  const auto g = gaps(arrival_times(parse_arrival("poisson"), rate, 5001, 7));
  // 5 % critical value of the one-sample KS test: 1.358 / sqrt(n).
  EXPECT_LT(ks_exponential(g, rate), 1.358 / std::sqrt(double(g.size())));
  EXPECT_NEAR(std::accumulate(g.begin(), g.end(), 0.0) / g.size(), 1 / rate, 0.05 / rate);
  // And it is not a test that passes anything: constant gaps fail it.
  EXPECT_GT(ks_exponential(gaps(arrival_times(parse_arrival("constant"), rate, 5001, 7)), rate), 0.3);
}

TEST(Arrival, GammaKeepsTheMeanAndSetsTheSpread) {
  const double rate = 20, shape = 0.25;
  const auto g = gaps(arrival_times(parse_arrival("gamma:0.25"), rate, 20001, 3));
  const double mean = std::accumulate(g.begin(), g.end(), 0.0) / g.size();
  double var = 0;
  for (double x : g) var += (x - mean) * (x - mean);
  var /= g.size() - 1;
  EXPECT_NEAR(mean, 1 / rate, 0.05 / rate);
  EXPECT_NEAR(std::sqrt(var) / mean, 1 / std::sqrt(shape), 0.1);  // CV of a gamma: 1 / sqrt(shape)
}

TEST(Arrival, SeededAndRateChecked) {
  EXPECT_EQ(arrival_times(parse_arrival("poisson"), 3, 10, 1), arrival_times(parse_arrival("poisson"), 3, 10, 1));
  EXPECT_NE(arrival_times(parse_arrival("poisson"), 3, 10, 1), arrival_times(parse_arrival("poisson"), 3, 10, 2));
  EXPECT_THROW(arrival_times(parse_arrival("poisson"), 0, 10, 1), UsageError);
}
