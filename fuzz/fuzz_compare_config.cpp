// libFuzzer: the YAML parsers (yaml-cpp underneath): compare config and gate config. Error is a clean refusal.
#include <cstdint>
#include <string>

#include "llmbench/base/error.h"
#include "llmbench/config/compare_config.h"
#include "llmbench/gate/gate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    llmbench::parse_compare_config(text, "fuzz.yaml");
  } catch (const llmbench::Error&) {
  }
  try {
    llmbench::parse_gate_config(text, "gate.yaml");
  } catch (const llmbench::Error&) {
  }
  return 0;
}
