#include "llmbench/model/random_fill.h"

#include <ATen/Parallel.h>

#include "llmbench/base/error.h"

namespace llmbench {
namespace {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
constexpr std::int64_t kGrain = 1 << 16;  // elements per task

inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

template <class T>
void fill(T* data, std::int64_t n, double std, std::uint64_t key) {
  // The sum of four uniform 16-bit integers has mean 4 · 65535 / 2 and variance 4 · (65536² − 1) / 12.
  constexpr float kMean = 2.0f * 65535.0f;
  const float scale = static_cast<float>(std / std::sqrt(4.0 * (65536.0 * 65536.0 - 1.0) / 12.0));
  at::parallel_for(0, n, kGrain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::uint64_t h = mix64(key + static_cast<std::uint64_t>(i) * kGolden);
      const std::uint32_t sum = static_cast<std::uint32_t>((h & 0xFFFF) + ((h >> 16) & 0xFFFF) + ((h >> 32) & 0xFFFF) + (h >> 48));
      data[i] = static_cast<T>((static_cast<float>(sum) - kMean) * scale);
    }
  });
}

}  // namespace

std::uint64_t random_key(std::uint64_t seed, std::uint64_t ordinal) { return mix64(mix64(seed) + ordinal * kGolden); }

void fill_random(torch::Tensor& t, double std, std::uint64_t key) {
  if (!t.device().is_cpu() || !t.is_contiguous()) throw Error("fill_random: needs a contiguous CPU tensor");
  switch (t.scalar_type()) {
    case torch::kFloat32: return fill(t.data_ptr<float>(), t.numel(), std, key);
    case torch::kBFloat16: return fill(t.data_ptr<c10::BFloat16>(), t.numel(), std, key);
    case torch::kFloat16: return fill(t.data_ptr<c10::Half>(), t.numel(), std, key);
    default: throw Error(cat("fill_random: unsupported dtype ", t.scalar_type()));
  }
}

}  // namespace llmbench
