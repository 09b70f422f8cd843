#include "llmbench/base/version.h"

namespace llmbench {
const char* version() { return LLMBENCH_VERSION; }
const char* compiler() { return LLMBENCH_COMPILER; }
}  // namespace llmbench
