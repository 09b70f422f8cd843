#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace llmbench::cli {

// A subcommand: its CLI11 node and what to do when it was the one parsed.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

using Commands = std::vector<Command>;

void add_info_command(CLI::App& root, Commands& out);
void add_generate_command(CLI::App& root, Commands& out);
void add_tokenize_command(CLI::App& root, Commands& out);
void add_gate_command(CLI::App& root, Commands& out);
void add_report_command(CLI::App& root, Commands& out);

}  // namespace llmbench::cli
