#pragma once
#include <cstdint>

#include <torch/torch.h>

// Fast seeded random weights on the CPU. Each element is a function of (key, its index) only, so the
// values are the same for any number of threads and any split of the work.
namespace llmbench {

// Fills a contiguous CPU tensor (float32, bfloat16 or float16) with mean 0 and standard deviation `std`:
// one 64-bit counter hash (splitmix64's finaliser) per element, whose four 16-bit parts are summed — an
// Irwin–Hall(4) bell curve, bounded at ±√12·std (±0.069 for std 0.02), close to a normal inside. Runs on
// torch's intra-op threads; a few seconds per billion elements on two cores.
void fill_random(torch::Tensor& t, double std, std::uint64_t key);

// A per-tensor key from a seed and the tensor's ordinal.
std::uint64_t random_key(std::uint64_t seed, std::uint64_t ordinal);

}  // namespace llmbench
