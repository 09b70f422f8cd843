#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "llmbench/base/error.h"
#include "llmbench/config/run_options.h"
#include "llmbench/stats/stats.h"

using namespace llmbench;

// Expected values computed by hand with numpy's 'linear' rule: h = (n - 1) q / 100.
TEST(Stats, PercentileIsNumpyLinear) {
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 90), 3.7);   // h = 2.7
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 25), 1.75);  // h = 0.75
  EXPECT_DOUBLE_EQ(percentile({4, 3, 2, 1}, 50), 2.5);   // unsorted input
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 100), 4.0);
  EXPECT_NEAR(percentile({3, 1, 2, 10, 7}, 99), 9.88, 1e-12);  // h = 3.96: 7 + 0.96 * 3
  EXPECT_NEAR(percentile({3, 1, 2, 10, 7}, 95), 9.4, 1e-12);
  EXPECT_DOUBLE_EQ(percentile({42}, 73), 42.0);
  EXPECT_THROW(percentile({}, 50), Error);
  EXPECT_THROW(percentile({1, 2}, 101), Error);
}

TEST(Stats, MedianAndTrimmedMedian) {
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(median({5, 1, 3, 2}), 2.5);
  // Sorted: -50 1 2 3 4 | 5 ... : drop -50, 1 and 900, 1000; the median of {2, 3, 4, 5, 6, 7} is 4.5.
  EXPECT_DOUBLE_EQ(trimmed_median({1000, 2, 3, -50, 4, 5, 6, 7, 1, 900}, 2), 4.5);
  EXPECT_DOUBLE_EQ(trimmed_median({1, 2, 3, 100}, 0), 2.5);
  // A trim that would drop everything keeps the middle value(s).
  EXPECT_DOUBLE_EQ(trimmed_median({9, 1, 5}, 7), 5.0);
  EXPECT_DOUBLE_EQ(trimmed_median({9, 1, 5, 6}, 7), 5.5);
  EXPECT_THROW(trimmed_median({}, 1), Error);
}

TEST(Stats, SummaryOfHandComputedVector) {
  // mean 5; squared deviations sum to 32; sample std = sqrt(32 / 7).
  Summary s = summarize({2, 4, 4, 4, 5, 5, 7, 9}, 1);
  EXPECT_EQ(s.n, 8);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_NEAR(s.std, 2.138089935299395, 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_DOUBLE_EQ(s.p50, 4.5);
  EXPECT_NEAR(s.p90, 7.6, 1e-12);   // h = 6.3: 7 + 0.3 * 2
  EXPECT_NEAR(s.p95, 8.3, 1e-12);   // h = 6.65
  EXPECT_NEAR(s.p99, 8.86, 1e-12);  // h = 6.93
  EXPECT_DOUBLE_EQ(s.trimmed_median, 4.5);
  EXPECT_NEAR(s.cv, 2.138089935299395 / 5.0, 1e-12);
  EXPECT_LE(s.ci95_lo, s.p50);
  EXPECT_GE(s.ci95_hi, s.p50);
  EXPECT_GE(s.ci95_lo, s.min);
  EXPECT_LE(s.ci95_hi, s.max);
  EXPECT_LT(s.ci95_lo, s.ci95_hi);
}

TEST(Stats, DegenerateSummaries) {
  Summary empty = summarize({}, 2);
  EXPECT_EQ(empty.n, 0);
  EXPECT_EQ(empty.mean, 0.0);
  Summary one = summarize({3.5}, 2);
  EXPECT_EQ(one.std, 0.0);
  EXPECT_EQ(one.cv, 0.0);
  EXPECT_EQ(one.trimmed_median, 3.5);
  EXPECT_EQ(one.ci95_lo, 3.5);
  EXPECT_EQ(one.ci95_hi, 3.5);
}

TEST(Stats, UniformIndexIsPlatformIndependent) {
  // The first draw of mt19937_64 with its default seed is fixed by the C++ standard:
  // 14514284786278117030; floor(x * n / 2^64) is 7 for n = 10 and 786 for n = 1000.
  std::mt19937_64 a;
  EXPECT_EQ(uniform_index(a, 10), 7u);
  std::mt19937_64 b;
  EXPECT_EQ(uniform_index(b, 1000), 786u);
  std::mt19937_64 c(1);
  for (int i = 0; i < 10000; ++i) EXPECT_LT(uniform_index(c, 3), 3u);
}

TEST(Stats, BootstrapIsDeterministicAndCoversTheMedian) {
  // Two values: resample medians are 0 (p = 1/4), 0.5 (1/2), 1 (1/4): the 95 % interval spans [0, 1].
  Interval two = bootstrap_median_ci95({0, 1});
  EXPECT_DOUBLE_EQ(two.lo, 0.0);
  EXPECT_DOUBLE_EQ(two.hi, 1.0);
  std::vector<double> v{10.2, 10.1, 10.4, 9.9, 10.0, 10.3, 12.5, 10.1, 10.2, 10.0};
  Interval a = bootstrap_median_ci95(v);
  Interval b = bootstrap_median_ci95(v);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  EXPECT_LE(a.lo, median(v));
  EXPECT_GE(a.hi, median(v));
  EXPECT_GE(a.lo, 9.9);
  EXPECT_LE(a.hi, 10.4);
}

TEST(Stats, BootstrapRatioOfMedians) {
  Interval exact = bootstrap_ratio_of_medians_ci95({2, 2, 2}, {1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(exact.lo, 2.0);
  EXPECT_DOUBLE_EQ(exact.hi, 2.0);
  // Numerator in [11, 11.4], denominator in [9.9, 10.1]: every ratio lies in [1.089, 1.152].
  Interval r = bootstrap_ratio_of_medians_ci95({11, 11.1, 11.2, 11.3, 11.4}, {9.9, 10, 10.1, 10, 10});
  EXPECT_GE(r.lo, 11.0 / 10.1);
  EXPECT_LE(r.hi, 11.4 / 9.9);
  EXPECT_LT(r.lo, r.hi);
}

// Calibration on random draws, not on hand-picked vectors: two independent samples of 20 log-normal
// runs (CV ~4 %) whose true medians differ by a known ratio; the CI95 of the ratio must contain it in about
// 95 % of 400 trials. Percentile bootstrap of a median of 20 is discrete and a little narrow, so the band
// is wide (0.85-0.99); a CI that ignored one side's noise (resampling only the current file) covers
// about 78 % of the time here, one that did not resample at all ~0 %.
TEST(Stats, RatioCiCoversTheTrueRatioOnRandomDraws) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.04);
  const double true_ratio = 1.07;
  int covered = 0;
  const int trials = 400;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> cur(20), base(20);
    for (auto& x : base) x = 100 * std::exp(noise(rng));               // median 100
    for (auto& x : cur) x = 100 * true_ratio * std::exp(noise(rng));   // median 107
    const Interval ci = bootstrap_ratio_of_medians_ci95(cur, base, 1000, 1000 + t);
    covered += ci.lo <= true_ratio && true_ratio <= ci.hi;
  }
  EXPECT_GE(covered, trials * 85 / 100) << covered << " of " << trials;  // 386 at this seed
  EXPECT_LE(covered, trials * 99 / 100) << covered << " of " << trials;
}

namespace {

// The bootstrap as it was first written: every resample copied and fully sorted (median() per resample).
Interval bootstrap_by_sorting(const std::vector<double>& values, int resamples, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> medians;
  for (int i = 0; i < resamples; ++i) {
    std::vector<double> sample(values.size());
    for (auto& x : sample) x = values[uniform_index(rng, values.size())];
    medians.push_back(median(sample));
  }
  return {percentile(medians, 2.5), percentile(medians, 97.5)};
}

}  // namespace

TEST(Stats, BootstrapIsBitIdenticalToSortingEveryResample) {
  std::mt19937_64 rng(3);
  for (std::size_t n : {1, 2, 3, 4, 5, 10, 11, 64, 101, 1000, 1001}) {
    std::vector<double> v(n);
    for (auto& x : v) x = static_cast<double>(rng() % 97) / 8 + std::ldexp(static_cast<double>(rng() >> 11), -80);
    if (n > 10) v[3] = v[7] = v[9];  // and exact ties
    const Interval want = bootstrap_by_sorting(v, 500, 7), got = bootstrap_median_ci95(v, 500, 7);
    EXPECT_EQ(got.lo, want.lo) << n;  // exactly: the same order statistics enter the same formula
    EXPECT_EQ(got.hi, want.hi) << n;
  }
}

TEST(Stats, ExactBootstrapByHandAndAgainstResampling) {
  // {1, 2, 3}: the resampled median is x_(1) with probability 7/27, x_(3) with 7/27 (P(Bin(3, 2/3) >= 2) =
  // 20/27 below it): the 2.5 % and 97.5 % points are 1 and 3, as resampling finds.
  Interval three = exact_bootstrap_median_ci95({3, 1, 2});
  EXPECT_EQ(three.lo, 1.0);
  EXPECT_EQ(three.hi, 3.0);
  EXPECT_EQ(bootstrap_median_ci95({3, 1, 2}).lo, 1.0);
  EXPECT_EQ(bootstrap_median_ci95({3, 1, 2}).hi, 3.0);
  // Larger samples (odd and even n, with ties): resampling with many resamples lands on the exact bounds
  // to within a small part of the interval's width.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(10, 2);
  for (std::size_t n : {101, 1000, 10001, 12000}) {
    std::vector<double> v(n);
    for (auto& x : v) x = std::round(noise(rng) * 100) / 100;  // ties
    const Interval exact = exact_bootstrap_median_ci95(v), sampled = bootstrap_median_ci95(v, n > 5000 ? 2000 : 20000, 5);
    const double width = exact.hi - exact.lo;
    ASSERT_GT(width, 0) << n;
    EXPECT_NEAR(exact.lo, sampled.lo, 0.15 * width) << n;
    EXPECT_NEAR(exact.hi, sampled.hi, 0.15 * width) << n;
    EXPECT_LT(exact.lo, median(v));
    EXPECT_GT(exact.hi, median(v));
  }
}

namespace {

// The ratio bootstrap by plain resampling, numerator then denominator per resample.
Interval ratio_by_resampling(const std::vector<double>& num, const std::vector<double>& den, int resamples,
                             std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> ratios;
  for (int i = 0; i < resamples; ++i) {
    std::vector<double> a(num.size()), b(den.size());
    for (auto& x : a) x = num[uniform_index(rng, num.size())];
    for (auto& x : b) x = den[uniform_index(rng, den.size())];
    ratios.push_back(median(a) / median(b));
  }
  return {percentile(ratios, 2.5), percentile(ratios, 97.5)};
}

}  // namespace

TEST(Stats, RatioBootstrapOfManyValuesDrawsFromTheExactLaw) {
  std::mt19937_64 rng(4);
  std::normal_distribution<double> a(11, 1), b(10, 1);
  // Small: bit-identical to resampling with the same stream.
  std::vector<double> n1(40), d1(31);
  for (auto& x : n1) x = a(rng);
  for (auto& x : d1) x = b(rng);
  const Interval small = bootstrap_ratio_of_medians_ci95(n1, d1, 300, 9), small_ref = ratio_by_resampling(n1, d1, 300, 9);
  EXPECT_EQ(small.lo, small_ref.lo);
  EXPECT_EQ(small.hi, small_ref.hi);
  // Large (odd and even sizes): the same interval as resampling, up to Monte Carlo noise.
  std::vector<double> n2(12001), d2(11000);
  for (auto& x : n2) x = a(rng);
  for (auto& x : d2) x = b(rng);
  const Interval big = bootstrap_ratio_of_medians_ci95(n2, d2), ref = ratio_by_resampling(n2, d2, 1000, 3);
  const double width = ref.hi - ref.lo;
  EXPECT_NEAR(big.lo, ref.lo, 0.15 * width);
  EXPECT_NEAR(big.hi, ref.hi, 0.15 * width);
  EXPECT_LT(big.lo, median(n2) / median(d2));
  EXPECT_GT(big.hi, median(n2) / median(d2));
}

TEST(Stats, SummariesOfManyValuesUseTheExactBootstrap) {
  std::mt19937_64 rng(2);
  std::vector<double> v(kExactBootstrapAbove + 1);
  for (auto& x : v) x = static_cast<double>(rng() % 1000);
  Summary big = summarize(v, 0);
  const Interval exact = exact_bootstrap_median_ci95(v);
  EXPECT_EQ(big.ci95_lo, exact.lo);
  EXPECT_EQ(big.ci95_hi, exact.hi);
  EXPECT_EQ(big.p99, percentile(v, 99));
  v.pop_back();
  Summary small = summarize(v, 0);
  const Interval resampled = bootstrap_median_ci95(v);
  EXPECT_EQ(small.ci95_lo, resampled.lo);
  EXPECT_EQ(small.ci95_hi, resampled.hi);
}

TEST(RunOptions, DefaultsAreValid) { EXPECT_NO_THROW(validate(RunOptions{})); }

TEST(RunOptions, ValidateNamesTheOption) {
  auto expect_usage = [](RunOptions o, const std::string& needle) {
    try {
      validate(o);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  RunOptions o;
  o.batch = {};
  expect_usage(o, "--batch");
  o = {};
  o.prompt_len = {512, 0};
  expect_usage(o, "--prompt-len");
  o = {};
  o.max_new_tokens = {-1};
  expect_usage(o, "--max-new-tokens");
  o = {};
  o.runs = 4;
  o.trim = 2;
  expect_usage(o, "--trim 2");
  o = {};
  o.warmup = -1;
  expect_usage(o, "--warmup");
  o = {};
  o.temperature = {0.7, -0.1};
  expect_usage(o, "--temperature");
  o = {};
  o.top_p = 0;
  expect_usage(o, "--top-p");
  o = {};
  o.attn = {"flash"};
  expect_usage(o, "'flash'");
  o = {};
  o.dtype = {"int8"};
  expect_usage(o, "--dtype");
  o = {};
  o.prompt = "hi";
  o.prompt_file = "f.txt";
  expect_usage(o, "--prompt-file");
  for (const char* bad : {"tpu", "cuda:", "cuda:x", "cuda:-1", "CPU", ""}) {
    o = {};
    o.device = bad;
    expect_usage(o, "--device: invalid device");
  }
  for (const char* good : {"auto", "cpu", "cuda", "cuda:0", "cuda:12"}) {
    o = {};
    o.device = good;
    EXPECT_NO_THROW(validate(o)) << good;  // whether it exists is resolve_device's question, at run time
  }
}

TEST(RunOptions, ExpandIsTheFactorialProductInFixedOrder) {
  RunOptions o;
  o.model = "qwen2.5-7b";
  o.batch = {1, 4, 16};
  o.max_new_tokens = {512, 1024, 2048};
  o.temperature = {0.2, 0.7, 1.0};
  auto points = expand(o);
  ASSERT_EQ(points.size(), 27u);
  EXPECT_EQ(points[0].batch, 1);
  EXPECT_EQ(points[0].max_new_tokens, 512);
  EXPECT_DOUBLE_EQ(points[0].temperature, 0.2);
  EXPECT_DOUBLE_EQ(points[1].temperature, 0.7);   // temperature varies fastest
  EXPECT_EQ(points[3].max_new_tokens, 1024);
  EXPECT_EQ(points[9].batch, 4);
  EXPECT_EQ(points[26].batch, 16);
  EXPECT_EQ(points[26].label, "qwen2.5-7b");      // empty label falls back to the model
  o.attn = {"eager", "sdpa"};
  o.dtype = {"bfloat16", "float16"};
  points = expand(o);
  ASSERT_EQ(points.size(), 108u);
  EXPECT_EQ(points[0].dtype, "bfloat16");
  EXPECT_EQ(points[27].attn, "sdpa");
  EXPECT_EQ(points[54].dtype, "float16");
}
