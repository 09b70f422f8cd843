#include "llmbench/base/switch.h"

#include <cstdlib>
#include <string>

#include "llmbench/base/error.h"

namespace llmbench {

std::size_t env_switch(const char* name, std::initializer_list<const char*> values) {
  const char* v = std::getenv(name);
  if (!v || !*v) return 0;
  std::size_t i = 0;
  std::string allowed;
  for (const char* value : values) {
    if (std::string(v) == value) return i;
    allowed += i == 0 ? "" : i + 1 == values.size() ? " or " : ", ";
    allowed += value;
    ++i;
  }
  throw UsageError(cat(name, " must be ", allowed, ", got '", v, "'"));
}

long env_int(const char* name, long lo, long hi, long unset) {
  const char* v = std::getenv(name);
  if (!v || !*v) return unset;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < lo || n > hi) throw UsageError(cat(name, " must be ", lo, " … ", hi, ", got '", v, "'"));
  return n;
}

}  // namespace llmbench
