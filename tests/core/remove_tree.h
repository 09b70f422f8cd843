#pragma once
#include <ftw.h>

#include <cstdio>
#include <string>

namespace llmbench::testing_util {

// Deletes a directory tree. Not std::filesystem::remove_all: the PyTorch 2.11 wheel's libtorch.so exports
// its own copy of that function, which the dynamic linker binds ahead of libstdc++'s, and it crashes
// (a null call inside libtorch's copy, seen on the GPU host with g++ 13).
inline void remove_tree(const std::string& path) {
  nftw(path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return std::remove(p); }, 16,
       FTW_DEPTH | FTW_PHYS);
}

}  // namespace llmbench::testing_util
