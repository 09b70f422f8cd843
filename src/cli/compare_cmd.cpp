#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "command.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/base/log.h"
#include "llmbench/bench/interrupt.h"
#include "llmbench/config/compare_config.h"
#include "llmbench/report/format.h"
#include "llmbench/runner/duration.h"
#include "llmbench/runner/runner.h"

namespace llmbench::cli {

void add_compare_command(CLI::App& root, Commands& out) {
  struct State {
    std::string config;
    std::string output;
    std::string format = "table";
    bool no_roofline = false;
    double max_minutes = RunOptions{}.max_minutes;
  };
  auto st = std::make_shared<State>();
  auto* app = root.add_subcommand("compare", "Run several models from a YAML file and compare them side by side");
  app->add_option("config", st->config, "YAML file (docs/config.md)")->required();
  app->add_option("--output,-o", st->output, "Write one results JSON with every point (atomically)");
  app->add_option("--format", st->format, "Console output: table, md, csv or json")->capture_default_str();
  app->add_flag("--no-roofline", st->no_roofline, "Skip measuring the device ceilings (no MBU/MFU)");
  app->add_option("--max-minutes", st->max_minutes, "Refuse a comparison estimated (all models) to take longer than this; 0: no limit")
      ->capture_default_str();
  out.push_back({app, [st] {
                   ComparePlan plan = load_compare_config(st->config);
                   parse_format(st->format);
                   if (!st->output.empty()) check_writable(st->output);
                   install_interrupt_handlers();
                   Results all;
                   bool first = true;
                   check_compare_duration(plan.models, st->max_minutes);
                   for (RunOptions model : plan.models) {
                     model.max_minutes = 0;  // checked above, for the whole plan
                     if (interrupted()) break;
                     log::info(cat("compare: ", model.label.empty() ? model.model : model.label));
                     RunHooks hooks;
                     // Ceilings once per device, not once per model.
                     hooks.measure_ceilings = !st->no_roofline && first;
                     Results r = run_benchmark(model, hooks);  // one model in memory at a time
                     if (first) {
                       all = std::move(r);
                       first = false;
                     } else {
                       append_results(all, std::move(r));
                     }
                   }
                   all.command = "compare " + st->config;
                   return finish_results(all, st->output, st->format, plan.baseline);
                 }});
}

}  // namespace llmbench::cli
