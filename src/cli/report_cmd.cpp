#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "command.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/base/log.h"
#include "llmbench/gate/gate.h"
#include "llmbench/report/html.h"

namespace llmbench::cli {

namespace {

// Deepest nesting of arrays and objects, counted without recursion (a hostile file must not overflow the
// stack here, nor later when the page embeds it).
std::size_t json_depth(const nlohmann::json& root) {
  std::size_t deepest = 0;
  std::vector<std::pair<const nlohmann::json*, std::size_t>> todo{{&root, 1}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    deepest = std::max(deepest, depth);
    for (const auto& child : *v) todo.push_back({&child, depth + 1});
  }
  return deepest;
}

nlohmann::json load_gate(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": not valid JSON: ", e.what()));
  }
  constexpr std::size_t kMaxDepth = 32;  // a verdict file (llmbench gate --json) nests 5 levels
  if (const std::size_t depth = json_depth(j); depth > kMaxDepth)
    throw Error(cat(path, ": nested ", depth, " levels deep, not a gate verdict file (at most ", kMaxDepth, ")"));
  try {
    check_verdict_json(j);
  } catch (const Error& e) {
    throw Error(cat(path, ": ", e.what()));
  }
  return j;
}

// File names as shown in the page: the base names, unless two files share one.
std::vector<std::string> display_names(const std::vector<std::string>& paths) {
  std::vector<std::string> names;
  for (const auto& p : paths) names.push_back(std::filesystem::path(p).filename().string());
  for (std::size_t i = 0; i < names.size(); ++i)
    for (std::size_t j = i + 1; j < names.size(); ++j)
      if (names[i] == names[j]) return paths;
  return names;
}

}  // namespace

void add_report_command(CLI::App& root, Commands& out) {
  struct Options {
    std::vector<std::string> inputs;
    std::string output;
    std::string format = "html";
    std::string gate;
  };
  auto opt = std::make_shared<Options>();
  auto* app = root.add_subcommand(
      "report", "Write a self-contained HTML report (tables + charts) of one or more results files");
  app->add_option("results", opt->inputs, "Results JSON files; the first is the baseline of side-by-side views")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("-o,--output", opt->output, "HTML file to write (with --format md: optional, else stdout)");
  app->add_option("--format", opt->format, "html, or md for the tables only")
      ->capture_default_str()
      ->check(CLI::IsMember({"html", "md"}));
  app->add_option("--gate", opt->gate, "A gate verdict JSON (llmbench gate --json) to show beside the results")
      ->check(CLI::ExistingFile);
  out.push_back({app, [opt] {
                   if (opt->format == "html" && opt->output.empty())
                     throw UsageError("report: --output (-o) is required for --format html");
                   if (!opt->output.empty()) {
                     check_writable(opt->output);
                     std::vector<std::string> read = opt->inputs;
                     read.push_back(opt->gate);
                     check_not_an_input(opt->output, read);
                   }
                   // Everything is read and checked before anything is written.
                   std::vector<ReportInput> inputs;
                   const std::vector<std::string> names = display_names(opt->inputs);
                   for (std::size_t i = 0; i < names.size(); ++i)
                     inputs.push_back({names[i], load_results(opt->inputs[i])});
                   std::optional<nlohmann::json> gate;
                   if (!opt->gate.empty()) gate = load_gate(opt->gate);

                   if (opt->format == "md") {
                     const std::string md = render_markdown(inputs, gate);
                     if (opt->output.empty())
                       std::cout << md;
                     else
                       write_file_atomic(opt->output, md);
                     return kExitOk;
                   }
                   ReportOptions options;
                   options.gate = gate;
                   std::string why;
                   options.assets = find_web_assets(&why);
                   if (!options.assets)
                     log::warn(cat("report: charts are missing, writing the tables only: ", why));
                   write_file_atomic(opt->output, render_html(inputs, options));
                   log::info(cat("report: wrote ", opt->output));
                   return kExitOk;
                 }});
}

}  // namespace llmbench::cli
