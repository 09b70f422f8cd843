#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace llmbench {

// Reads a whole file; throws Error naming the path when it cannot, or when it has more than
// `max_bytes` (a device or pipe that never ends is refused, not read until memory runs out).
constexpr std::size_t kMaxReadBytes = std::size_t(1) << 30;
std::string read_file(const std::string& path, std::size_t max_bytes = kMaxReadBytes);

// Writes via a temporary file in the same directory and rename(2), so readers never see a
// half-written file and an existing file survives a failed write. A symbolic link is followed (its
// target is replaced, the link kept); a device, FIFO or socket (/dev/null, /dev/stdout) is written in
// place, never replaced.
void write_file_atomic(const std::string& path, const std::string& content);

// Throws UsageError unless `path` could be created or replaced (checked before long work starts).
void check_writable(const std::string& path);

// Throws UsageError when `output` is the same file as one of `inputs` (writing would destroy it).
void check_not_an_input(const std::string& output, const std::vector<std::string>& inputs);

}  // namespace llmbench
