#pragma once
#include <cstdint>
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
double trimmed_median(std::vector<double> values, int trim);
Summary summarize(const std::vector<double>& values, int trim);

}  // namespace llmbench
