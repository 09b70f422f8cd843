#pragma once
#include <string>

namespace llmbench {

// Reads a whole file; throws Error naming the path when it cannot.
std::string read_file(const std::string& path);

// Writes via a temporary file in the same directory and rename(2), so readers never see a
// half-written file and an existing file survives a failed write.
void write_file_atomic(const std::string& path, const std::string& content);

// Throws Error unless `path` could be created or replaced (checked before long work starts).
void check_writable(const std::string& path);

}  // namespace llmbench
