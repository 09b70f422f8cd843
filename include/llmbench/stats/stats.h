#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace llmbench {

// Summary statistics of one metric over the timed runs. Definitions in README "Metrics".
struct Summary {
  int n = 0;
  double mean = 0;
  double std = 0;              // sample standard deviation (n - 1)
  double min = 0;
  double max = 0;
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0;  // linear interpolation between closest ranks
  double trimmed_median = 0;   // median after dropping `trim` values from each end
  double ci95_lo = 0;          // bootstrap CI95 of the median
  double ci95_hi = 0;
  double cv = 0;               // std / mean
};

constexpr double kCvWarning = 0.05;
constexpr int kBootstrapResamples = 2000;
constexpr std::uint64_t kBootstrapSeed = 20261130;

// numpy.percentile(values, q) with the default 'linear' method; q in [0, 100].
double percentile(std::vector<double> values, double q);
double median(std::vector<double> values);
// Sorts, drops min(trim, (n - 1) / 2) values from each end, and takes the median of the rest.
double trimmed_median(std::vector<double> values, int trim);
// n = 0 gives an all-zero Summary; std = 0 and the CI collapses to the value when n = 1.
Summary summarize(const std::vector<double>& values, int trim);

// One point of an empirical CDF: `fraction` of the values are <= `value`.
struct EcdfPoint {
  double value = 0;
  double fraction = 0;
};

// The empirical CDF of `values` at its quantiles every 1/steps: the order statistics of 1-based rank 1 (the
// minimum) and ceil(k n / steps) for k = 1..steps (the last is the maximum), each with its exact ECDF value
// (the fraction of values <= it, ties included); a value reached by several ranks appears once. Drawn as a
// step line it is the ECDF to within 1/steps of the fraction axis, in at most steps + 1 points however many
// values there are (how the report draws an ECDF of more than 2,000 values). Empty for no values.
std::vector<EcdfPoint> ecdf_quantiles(std::vector<double> values, std::size_t steps);

struct Interval {
  double lo = 0;
  double hi = 0;
};

// An index in [0, n) from one draw, the same on every platform (std::uniform_int_distribution is not).
std::size_t uniform_index(std::mt19937_64& rng, std::size_t n);

// Percentile bootstrap (2.5 %, 97.5 %) of the median, with a fixed seed: reproducible results files.
Interval bootstrap_median_ci95(const std::vector<double>& values, int resamples = kBootstrapResamples,
                               std::uint64_t seed = kBootstrapSeed);

// The CI95 of the median a summary carries: bootstrap_median_ci95 up to kExactBootstrapAbove values; above,
// the interval that bootstrap converges to with infinitely many resamples, computed from the sorted
// values in O(n log n) (2,000 resamples of a million ITLs took 30 s): a resample's r-th smallest value is
// at most the k-th smallest of the data exactly when at least r of its n draws fall among those k, so
// P(M* <= x_(k)) = P(Binomial(n, k/n) >= r) = I_{k/n}(r, n - r + 1); the bounds are the smallest k where
// that reaches 2.5 % and 97.5 % (even n: the mean of the bounds for the two middle ranks).
constexpr std::size_t kExactBootstrapAbove = 10000;
Interval median_ci95(const std::vector<double>& values);
Interval exact_bootstrap_median_ci95(std::vector<double> values);

// Percentile bootstrap of median(numerator) / median(denominator), resampling both independently.
Interval bootstrap_ratio_of_medians_ci95(const std::vector<double>& numerator,
                                         const std::vector<double>& denominator,
                                         int resamples = kBootstrapResamples,
                                         std::uint64_t seed = kBootstrapSeed);

}  // namespace llmbench
