#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string reference_path(const std::string& name) {
  return std::string(LLMBENCH_TEST_DATA) + "/tokenizer/reference/" + name + ".json";
}

// The directory of a real tokenizer fetched by scripts/fetch-tokenizers.sh ("" for the built-in tiny).
inline std::string tokenizer_dir(const std::string& name) {
  return std::string(LLMBENCH_CACHE_DIR) + "/tokenizers/" + name;
}

// Why the real tokenizer files are absent, when scripts/fetch-tokenizers.sh could not reach npm.
inline std::string unavailable_reason() {
  std::string marker = std::string(LLMBENCH_CACHE_DIR) + "/tokenizers/UNAVAILABLE";
  return std::filesystem::exists(marker) ? slurp(marker) : std::string();
}

// Loaded once per process: the real files take a moment to parse.
inline const Tokenizer& cached_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& t = cache[name];
  if (!t) t = load_tokenizer(name == "tiny" ? "tiny" : tokenizer_dir(name));
  return *t;
}

}  // namespace llmbench::testing

// Real tokenizer files must be present (scripts/test.sh fetches them); only an unreachable npm
// registry (recorded by the fetch script) turns that into a skip.
#define LLMBENCH_REQUIRE_TOKENIZER(name)                                                                   \
  do {                                                                                                     \
    if (std::string(name) != "tiny" &&                                                                     \
        !std::filesystem::exists(::llmbench::testing::tokenizer_dir(name) + "/tokenizer.json")) {          \
      std::string why = ::llmbench::testing::unavailable_reason();                                         \
      if (!why.empty()) GTEST_SKIP() << "real tokenizer files unavailable: " << why;                       \
      FAIL() << "missing " << ::llmbench::testing::tokenizer_dir(name)                                     \
             << "/tokenizer.json: run scripts/fetch-tokenizers.sh";                                        \
    }                                                                                                      \
  } while (0)
