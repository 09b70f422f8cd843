#include "llmbench/base/fs.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "llmbench/base/error.h"

namespace llmbench {

std::string read_file(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(cat(path, ": is a directory, expected a file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": cannot open: ", std::strerror(errno)));
  std::string out;
  std::vector<char> buf(1 << 20);
  // Read in pieces up to the limit: a device or pipe that never ends (/dev/zero) is refused, not read forever.
  while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0) {
    if (out.size() + std::size_t(in.gcount()) > max_bytes)
      throw Error(cat(path, ": larger than ", max_bytes >> 20, " MiB, the most this file may have"));
    out.append(buf.data(), std::size_t(in.gcount()));
  }
  if (in.bad()) throw Error(cat(path, ": read failed"));
  return out;
}

namespace {
std::string temp_name(const std::string& path) {
  return cat(path, ".tmp.", ::getpid());
}

// An existing path that is neither a regular file nor a directory, following links: a device
// (/dev/null, /dev/stdout's terminal), a FIFO or a socket. Written in place, never renamed over.
bool is_special(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  return !ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st) &&
         !std::filesystem::is_directory(st);
}

// Where an atomic write goes: a symbolic link's target (the link stays a link), else the path.
// A dangling link is followed too (its target is created); a chain of links is followed to its end.
std::string link_target(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = path;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path t = fs::read_symlink(p, ec);
    if (ec) return path;
    p = (t.is_absolute() ? t : p.parent_path() / t).lexically_normal();
  }
  return p.string();
}
}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) {
  if (is_special(path)) {  // nothing to replace atomically: write through
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw Error(cat(path, ": cannot write: ", std::strerror(errno)));
    bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) throw Error(cat(path, ": write failed: ", std::strerror(errno)));
    return;
  }
  const std::string target = link_target(path);
  const std::string tmp = temp_name(target);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(cat(path, ": cannot write: ", std::strerror(errno)));
  bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  ok = (std::fflush(f) == 0) && ok;
  ok = (::fsync(::fileno(f)) == 0) && ok;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    throw Error(cat(path, ": write failed: ", std::strerror(errno)));
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw Error(cat(path, ": cannot replace: ", std::strerror(err)));
  }
}

void check_writable(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError(cat(path, ": is a directory, expected a file path"));
  if (is_special(path)) {  // opening a FIFO would wait for its reader
    if (::access(path.c_str(), W_OK) != 0) throw UsageError(cat(path, ": cannot write: ", std::strerror(errno)));
    return;
  }
  const std::string tmp = temp_name(link_target(path));
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw UsageError(cat(path, ": cannot write: ", std::strerror(errno)));
  std::fclose(f);
  std::remove(tmp.c_str());
}

void check_not_an_input(const std::string& output, const std::vector<std::string>& inputs) {
  for (const auto& input : inputs) {
    std::error_code ec;
    if (!input.empty() && std::filesystem::equivalent(output, input, ec) && !ec && !is_special(output))
      throw UsageError(cat(output, ": is also an input of this command (", input, "); choose another output path"));
  }
}

}  // namespace llmbench
