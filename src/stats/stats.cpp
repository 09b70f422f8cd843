#include "llmbench/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <boost/math/special_functions/beta.hpp>

#include "llmbench/base/error.h"

namespace llmbench {

namespace {

double percentile_of_sorted(const std::vector<double>& values, double q) {
  const double h = (values.size() - 1) * q / 100.0;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= values.size()) return values.back();
  return values[lo] + (h - lo) * (values[lo + 1] - values[lo]);
}

}  // namespace

double percentile(std::vector<double> values, double q) {
  if (values.empty()) throw Error("percentile of an empty list");
  if (!(q >= 0 && q <= 100)) throw Error(cat("percentile: q = ", q, " is outside [0, 100]"));
  std::sort(values.begin(), values.end());
  return percentile_of_sorted(values, q);
}

double median(std::vector<double> values) { return percentile(std::move(values), 50); }

double trimmed_median(std::vector<double> values, int trim) {
  if (values.empty()) throw Error("trimmed median of an empty list");
  std::sort(values.begin(), values.end());
  // Keep at least one value: a too-large trim degrades to the plain median.
  const std::size_t t = std::min<std::size_t>(std::max(trim, 0), (values.size() - 1) / 2);
  return median(std::vector<double>(values.begin() + t, values.end() - t));
}

std::size_t uniform_index(std::mt19937_64& rng, std::size_t n) {
  // Multiply-shift (Lemire, without rejection): identical on every platform, unlike
  // std::uniform_int_distribution whose algorithm is implementation-defined. Bias is < n / 2^64.
  return static_cast<std::size_t>((static_cast<unsigned __int128>(rng()) * n) >> 64);
}

namespace {

// A bootstrap resample of `v` into `out` (same size), reusing its storage.
void resample(std::mt19937_64& rng, const std::vector<double>& v, std::vector<double>& out) {
  out.resize(v.size());
  for (auto& x : out) x = v[uniform_index(rng, v.size())];
}

// median(), bit for bit, in O(n) instead of a full sort: the same two middle order statistics enter the
// same interpolation. Reorders `v`.
double median_in_place(std::vector<double>& v) {
  const double q = 50;  // as median() asks percentile()
  const double h = (v.size() - 1) * q / 100.0;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  std::nth_element(v.begin(), v.begin() + lo, v.end());
  if (lo + 1 >= v.size()) return v[lo];
  const double next = *std::min_element(v.begin() + lo + 1, v.end());
  return v[lo] + (h - lo) * (next - v[lo]);
}

Interval percentile_interval(std::vector<double> estimates) {
  return {percentile(estimates, 2.5), percentile(estimates, 97.5)};
}

// The smallest order statistic x_(k) (1-based k) with P(Binomial(n, k/n) >= rank) >= q, by bisection: the
// q-quantile of a bootstrap resample's rank-th smallest value.
double exact_bound(const std::vector<double>& sorted, std::size_t rank, double q) {
  const std::size_t n = sorted.size();
  std::size_t lo = 1, hi = n;
  while (lo < hi) {
    const std::size_t k = lo + (hi - lo) / 2;
    const double f = boost::math::ibeta(static_cast<double>(rank), static_cast<double>(n - rank + 1),
                                        static_cast<double>(k) / static_cast<double>(n));
    if (f >= q) hi = k;
    else lo = k + 1;
  }
  return sorted[lo - 1];
}

// Draws the median of one bootstrap resample of `values`: by resampling (n <= kExactBootstrapAbove,
// bit-identical to before), else from its exact distribution by inverse transform (one uniform, two
// bisections; even n: the two middle ranks at the same uniform).
class ResampledMedian {
 public:
  explicit ResampledMedian(const std::vector<double>& values) : values_(values), exact_(values.size() > kExactBootstrapAbove) {
    if (exact_) {
      sorted_ = values;
      std::sort(sorted_.begin(), sorted_.end());
    }
  }
  double draw(std::mt19937_64& rng) {
    if (!exact_) {
      resample(rng, values_, sample_);
      return median_in_place(sample_);
    }
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
    const std::size_t n = sorted_.size();
    if (n % 2 == 1) return exact_bound(sorted_, (n + 1) / 2, u);
    return (exact_bound(sorted_, n / 2, u) + exact_bound(sorted_, n / 2 + 1, u)) / 2;
  }

 private:
  const std::vector<double>& values_;
  bool exact_;
  std::vector<double> sorted_, sample_;
};

}  // namespace

Interval bootstrap_median_ci95(const std::vector<double>& values, int resamples, std::uint64_t seed) {
  if (values.empty()) throw Error("bootstrap of an empty list");
  std::mt19937_64 rng(seed);
  std::vector<double> medians(static_cast<std::size_t>(resamples)), sample;
  for (auto& m : medians) {
    resample(rng, values, sample);
    m = median_in_place(sample);
  }
  return percentile_interval(std::move(medians));
}

Interval exact_bootstrap_median_ci95(std::vector<double> values) {
  if (values.empty()) throw Error("bootstrap of an empty list");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  auto bounds = [&](std::size_t rank) {
    return Interval{exact_bound(values, rank, 0.025), exact_bound(values, rank, 0.975)};
  };
  if (n % 2 == 1) return bounds((n + 1) / 2);
  const Interval a = bounds(n / 2), b = bounds(n / 2 + 1);
  return {(a.lo + b.lo) / 2, (a.hi + b.hi) / 2};
}

Interval median_ci95(const std::vector<double>& values) {
  return values.size() > kExactBootstrapAbove ? exact_bootstrap_median_ci95(values) : bootstrap_median_ci95(values);
}

Interval bootstrap_ratio_of_medians_ci95(const std::vector<double>& numerator,
                                         const std::vector<double>& denominator, int resamples,
                                         std::uint64_t seed) {
  if (numerator.empty() || denominator.empty()) throw Error("bootstrap of an empty list");
  std::mt19937_64 rng(seed);
  std::vector<double> ratios(static_cast<std::size_t>(resamples));
  ResampledMedian num(numerator), den(denominator);  // more than 10,000 values: drawn from the exact law
  for (auto& r : ratios) {
    const double a = num.draw(rng);
    r = a / den.draw(rng);
  }
  return percentile_interval(std::move(ratios));
}

Summary summarize(const std::vector<double>& values, int trim) {
  Summary s;
  s.n = static_cast<int>(values.size());
  if (values.empty()) return s;
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / values.size();
  double ss = 0;
  for (double v : values) ss += (v - s.mean) * (v - s.mean);
  s.std = values.size() > 1 ? std::sqrt(ss / (values.size() - 1)) : 0.0;
  std::vector<double> sorted = values;  // one sort for every order statistic (a million ITLs: 6 sorts were 0.4 s)
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = percentile_of_sorted(sorted, 50);
  s.p90 = percentile_of_sorted(sorted, 90);
  s.p95 = percentile_of_sorted(sorted, 95);
  s.p99 = percentile_of_sorted(sorted, 99);
  s.trimmed_median = trimmed_median(sorted, trim);
  const Interval ci = values.size() > kExactBootstrapAbove ? exact_bootstrap_median_ci95(std::move(sorted))
                                                           : bootstrap_median_ci95(values);
  s.ci95_lo = ci.lo;
  s.ci95_hi = ci.hi;
  s.cv = s.mean != 0 ? s.std / std::fabs(s.mean) : 0.0;
  return s;
}

std::vector<EcdfPoint> ecdf_quantiles(std::vector<double> values, std::size_t steps) {
  if (steps == 0) throw Error("ecdf_quantiles: steps must be at least 1");
  std::vector<EcdfPoint> out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  const std::uint64_t n = values.size();
  out.reserve(steps + 1);
  for (std::uint64_t k = 0; k <= steps; ++k) {
    const std::uint64_t rank = k == 0 ? 1 : (k * n + steps - 1) / steps;  // ceil(k n / steps), in integers
    const double v = values[rank - 1];
    if (!out.empty() && out.back().value == v) continue;
    const auto le = std::upper_bound(values.begin(), values.end(), v) - values.begin();
    out.push_back({v, static_cast<double>(le) / static_cast<double>(n)});
  }
  return out;
}

}  // namespace llmbench
