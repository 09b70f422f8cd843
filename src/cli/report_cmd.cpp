#include <filesystem>
#include <iostream>
#include <memory>

#include "command.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/base/log.h"
#include "llmbench/report/html.h"

namespace llmbench::cli {

namespace {

nlohmann::json load_gate(const std::string& path) {
  try {
    return nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": not valid JSON: ", e.what()));
  }
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
                   if (!opt->output.empty()) check_writable(opt->output);
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
