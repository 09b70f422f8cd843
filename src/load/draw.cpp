#include "llmbench/load/draw.h"

#include <cmath>

namespace llmbench {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {

std::uint64_t key(std::uint64_t seed, std::uint32_t a, std::uint32_t b) {
  return splitmix64(splitmix64(seed) ^ (static_cast<std::uint64_t>(a) << 32 | b));
}

double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1p-53; }  // 53 bits: [0, 1)

}  // namespace

double uniform_draw(std::uint64_t seed, std::uint32_t a, std::uint32_t b) { return unit(splitmix64(key(seed, a, b))); }

double normal_draw(std::uint64_t seed, std::uint32_t a, std::uint32_t b) {
  // Box-Muller on two uniforms of the key; u1 in (0, 1] keeps the log finite.
  const std::uint64_t k = key(seed, a, b);
  const double u1 = unit(splitmix64(k)) + 0x1p-53;
  const double u2 = unit(splitmix64(k + 1));
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

}  // namespace llmbench
