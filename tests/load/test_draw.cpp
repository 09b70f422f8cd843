#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "llmbench/load/draw.h"

using namespace llmbench;

TEST(Draw, UniformDrawsAreUniformAndKeyed) {
  // 20,000 draws of one seed over keys (a, b): Kolmogorov-Smirnov against U[0, 1) at 1 % (1.63 / sqrt n).
  std::vector<double> v;
  for (std::uint32_t a = 0; a < 100; ++a)
    for (std::uint32_t b = 0; b < 200; ++b) v.push_back(uniform_draw(7, a, b));
  std::sort(v.begin(), v.end());
  const double n = v.size();
  double d = 0;
  for (std::size_t i = 0; i < v.size(); ++i) d = std::max({d, (i + 1) / n - v[i], v[i] - i / n});
  EXPECT_LT(d, 1.63 / std::sqrt(n));
  EXPECT_GE(v.front(), 0.0);
  EXPECT_LT(v.back(), 1.0);
  // The same key, the same draw; another seed or key, another.
  EXPECT_EQ(uniform_draw(7, 3, 4), uniform_draw(7, 3, 4));
  EXPECT_NE(uniform_draw(7, 3, 4), uniform_draw(8, 3, 4));
  EXPECT_NE(uniform_draw(7, 3, 4), uniform_draw(7, 4, 3));
  EXPECT_NE(uniform_draw(7, 3, 4), normal_draw(7, 3, 4));
}
