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

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(cat(path, ": is a directory, expected a file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": cannot open: ", std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(cat(path, ": read failed"));
  return ss.str();
}

namespace {
std::string temp_name(const std::string& path) {
  return cat(path, ".tmp.", ::getpid());
}
}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = temp_name(path);
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
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw Error(cat(path, ": cannot replace: ", std::strerror(err)));
  }
}

void check_writable(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError(cat(path, ": is a directory, expected a file path"));
  const std::string tmp = temp_name(path);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw UsageError(cat(path, ": cannot write: ", std::strerror(errno)));
  std::fclose(f);
  std::remove(tmp.c_str());
}

}  // namespace llmbench
