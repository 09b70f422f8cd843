#pragma once
#include <string>

#include "llmbench/base/env.h"

namespace llmbench {

// Host facts plus libtorch version, CUDA runtime/driver and every visible GPU.
EnvInfo collect_env();

// Measures copy bandwidth and matmul rate on `device` ("cpu" or "cuda[:N]"): warm-ups, then the median
// of `repetitions` timed runs. GPU: device-to-device copy of 2 GiB and bf16 8192^3 products;
// CPU: 256 MiB copy and fp32 1024^3 products.
Ceilings measure_ceilings(const std::string& device, int repetitions = 10);

// "auto" → "cuda" when a GPU is visible, else "cpu"; validates "cpu", "cuda", "cuda:N".
std::string resolve_device(const std::string& requested);

}  // namespace llmbench
