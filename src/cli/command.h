#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace llmbench {
struct Results;
}

namespace llmbench::cli {

// A subcommand: its CLI11 node and what to do when it was the one parsed.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

using Commands = std::vector<Command>;

void add_info_command(CLI::App& root, Commands& out);
void add_generate_command(CLI::App& root, Commands& out);
void add_gate_command(CLI::App& root, Commands& out);
void add_tokenize_command(CLI::App& root, Commands& out);
void add_report_command(CLI::App& root, Commands& out);
void add_run_command(CLI::App& root, Commands& out);
void add_compare_command(CLI::App& root, Commands& out);
void add_load_command(CLI::App& root, Commands& out);
void add_serve_command(CLI::App& root, Commands& out);
void add_profile_command(CLI::App& root, Commands& out);

// For unsigned options (--seed): CLI11 would wrap "-1" to 2^64 - 1 without a word.
inline CLI::Validator not_negative() {
  return CLI::Validator(
      [](std::string& v) { return v.find('-') == std::string::npos ? std::string() : "must not be negative"; }, "");
}

// The command line as given (argv[0]'s file name, arguments quoted for a shell where needed), with the
// values of --api-key and --header masked; what `results.command` records. Set once by main().
void set_command_line(int argc, char** argv);
const std::string& command_line();

// Stamps results.command with command_line(), writes the results file (if any), prints `format` on
// stdout (with ratios against `baseline` when given), logs CV warnings; returns the exit code: 0, 1
// when a point failed, 130/143 when interrupted.
int finish_results(Results& results, const std::string& output, const std::string& format,
                   const std::string& baseline);

}  // namespace llmbench::cli
