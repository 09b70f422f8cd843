#include <iostream>
#include <memory>

#include "command.h"
#include "llmbench/base/error.h"
#include "llmbench/gate/gate.h"

namespace llmbench::cli {

namespace {

// Unreadable, malformed or wrong-version files are bad input (exit 2), not a runtime failure.
Results load_input(const std::string& path) {
  try {
    return load_results(path);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

void add_gate_command(CLI::App& root, Commands& out) {
  struct Options {
    std::string baseline, current, config;
    bool json = false;
    bool allow_env_mismatch = false;
    bool allow_missing = false;
  };
  auto opt = std::make_shared<Options>();
  auto* app = root.add_subcommand(
      "gate", "Compare a results file with a baseline: exit 0 pass, 1 regression, 2 bad input");
  app->add_option("--baseline", opt->baseline, "Baseline results JSON")->required();
  app->add_option("--current", opt->current, "Current results JSON")->required();
  app->add_option("--config", opt->config, "gate.yaml: metrics and thresholds, max_cv, allow_* (see docs/ci.md)");
  app->add_flag("--json", opt->json, "Print the verdicts as JSON instead of Markdown");
  app->add_flag("--allow-env-mismatch", opt->allow_env_mismatch,
                "Compare even when GPU, device, dtype or weights kind differ");
  app->add_flag("--allow-missing", opt->allow_missing, "A baseline point absent from the current file passes");
  out.push_back({app, [opt] {
                   GateConfig config = opt->config.empty() ? GateConfig{} : load_gate_config(opt->config);
                   config.allow_env_mismatch = config.allow_env_mismatch || opt->allow_env_mismatch;
                   config.allow_missing = config.allow_missing || opt->allow_missing;
                   const Results baseline = load_input(opt->baseline);
                   const Results current = load_input(opt->current);
                   const GateReport report = run_gate(baseline, current, config, opt->baseline, opt->current);
                   if (opt->json)
                     std::cout << to_json(report).dump(2) << "\n";
                   else
                     std::cout << gate_markdown(report);
                   return report.exit_code();
                 }});
}

}  // namespace llmbench::cli
