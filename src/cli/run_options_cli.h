#pragma once
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "llmbench/config/run_options.h"

namespace llmbench {
// run's check of a named option (config/run_options.cpp), for the commands that take the same option:
// UsageError "--NAME: unknown value 'V' (expected one of: A, B)", or a value given twice.
void require_one_of(const std::vector<std::string>& axis, const char* name, const std::vector<std::string>& allowed);
}  // namespace llmbench

namespace llmbench::cli {

// The `run` options bound to a CLI11 app; sweep axes are comma lists kept as strings until parsed.
struct RunFlags {
  RunOptions options;
  std::string batch = "4", prompt_len = "512", max_new_tokens = "64", temperature = "0";
  std::string attn = "eager", dtype = "bfloat16", weights = "bf16", kv_dtype = "bf16";
  std::string prompt_file;
  bool no_cuda_graph = false;
  bool no_fused = false;
};

// The text of a prompt file: not empty, valid UTF-8, at most kMaxPromptFileBytes; UsageError naming
// `what` (the flag or YAML key) and the file otherwise.
constexpr std::size_t kMaxPromptFileBytes = std::size_t(64) << 20;
std::string read_prompt_file(const std::string& path, const std::string& what);

// A comma list of numbers ("1,4,16"): UsageError naming `flag` for an empty item ("1,,4", "1,") or a non-number.
std::vector<int> parse_int_list(const std::string& s, const std::string& flag);
std::vector<double> parse_double_list(const std::string& s, const std::string& flag);

// Adds --model, the sweep axes and every other run option to `app`.
void add_run_flags(CLI::App& app, RunFlags& f);
// Parses the comma lists and the prompt file into f.options; throws UsageError naming the flag.
RunOptions finish_run_flags(RunFlags& f);

}  // namespace llmbench::cli
