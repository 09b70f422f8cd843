#pragma once

namespace llmbench {
const char* version();      // "0.1.0"
const char* git_commit();   // short hash, "-dirty" when the tree had changes, or "unknown"
const char* compiler();     // "GNU 12.2.0"
}  // namespace llmbench
