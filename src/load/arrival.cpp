#include "llmbench/load/arrival.h"

#include <cmath>
#include <random>

#include "llmbench/base/error.h"

namespace llmbench {

std::string Arrival::name() const {
  switch (kind) {
    case Kind::poisson: return "poisson";
    case Kind::constant: return "constant";
    default: return cat("gamma:", shape);
  }
}

Arrival parse_arrival(const std::string& text) {
  Arrival a;
  if (text == "poisson") return a;
  if (text == "constant") {
    a.kind = Arrival::Kind::constant;
    return a;
  }
  if (text.rfind("gamma:", 0) == 0) {
    a.kind = Arrival::Kind::gamma;
    const std::string value = text.substr(6);
    std::size_t used = 0;
    try {
      a.shape = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !std::isfinite(a.shape) || a.shape <= 0)
      throw UsageError(cat("--arrival '", text, "': the gamma shape must be a positive number, e.g. gamma:0.5"));
    return a;
  }
  throw UsageError(cat("--arrival '", text, "': expected poisson, constant or gamma:SHAPE"));
}

std::vector<double> arrival_times(const Arrival& arrival, double rate, std::size_t n, std::uint64_t seed) {
  if (!(rate > 0) || !std::isfinite(rate)) throw UsageError(cat("request rate must be positive, got ", rate));
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gamma(arrival.shape, 1.0 / (rate * arrival.shape));  // mean 1 / rate
  std::vector<double> out;
  out.reserve(n);
  double t = 0;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(t);
    switch (arrival.kind) {
      case Arrival::Kind::constant: t += 1.0 / rate; break;
      case Arrival::Kind::poisson: {
        // Inverse transform of a 53-bit uniform in (0, 1]: the same gaps on every platform.
        const double u = (static_cast<double>(rng() >> 11) + 1.0) * 0x1.0p-53;
        t += -std::log(u) / rate;
        break;
      }
      case Arrival::Kind::gamma: t += gamma(rng); break;
    }
  }
  return out;
}

}  // namespace llmbench
