#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <utility>

#include "command.h"
#include "run_options_cli.h"
#include "llmbench/dist/dist_env.h"
#include "llmbench/dist/launcher.h"
#include "llmbench/dist/session.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/base/log.h"
#include "llmbench/bench/interrupt.h"
#include "llmbench/config/compare_config.h"
#include "llmbench/load/runner.h"
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
  auto* app = root.add_subcommand(
      "compare", "Run several models (or load several endpoints) from a YAML file and compare them side by side");
  app->add_option("config", st->config, "YAML file (docs/config.md)")->required();
  app->add_option("--output,-o", st->output, "Write one results JSON with every point (atomically)");
  app->add_option("--format", st->format, "Console output: table, md, csv or json")->capture_default_str();
  app->add_flag("--no-roofline", st->no_roofline, "Skip measuring the device ceilings (no MBU/MFU)");
  app->add_option("--max-minutes", st->max_minutes, "Refuse a comparison estimated (all models) to take longer than this; 0: no limit")
      ->capture_default_str();
  out.push_back({app, [st] {
                   if (!(st->max_minutes >= 0 && std::isfinite(st->max_minutes)))
                     throw UsageError(cat("--max-minutes: ", st->max_minutes, " is not allowed (must be >= 0; 0 is no limit)"));
                   ComparePlan plan = load_compare_config(st->config);
                   for (std::size_t i = 0; i < plan.models.size(); ++i) {  // read now: every file checked before any work
                     RunOptions& m = plan.models[i];
                     if (m.prompt_file)
                       m.prompt = read_prompt_file(*std::exchange(m.prompt_file, std::nullopt), cat(plan.model_where[i], ": prompt_file"));
                   }
                   for (const auto& t : plan.loads) {
                     try {
                       validate(t.options);
                     } catch (const UsageError& e) {
                       throw UsageError(cat(t.where, ": ", e.what()));
                     }
                   }
                   parse_format(st->format);
                   if (!st->output.empty() && dist::process_rank() == 0) {
                     check_writable(st->output);
                     check_not_an_input(st->output, {st->config});
                   }
                   install_interrupt_handlers();
                   Results all;
                   bool first = true;
                   auto add = [&](Results r) {
                     if (first) all = std::move(r), first = false;
                     else append_results(all, std::move(r));
                   };
                   // Every model's own refusals before the first one runs (not minutes into the file).
                   // Each message names the entry ("FILE:LINE:COL: models[i] (LABEL): ..."): with several, which one.
                   for (std::size_t i = 0; i < plan.models.size(); ++i) {
                     try {
                       check_runnable(plan.models[i]);
                     } catch (const UsageError& e) {
                       throw UsageError(cat(plan.model_where[i], ": ", e.what()));
                     } catch (const OutOfMemoryError& e) {
                       throw OutOfMemoryError(cat(plan.model_where[i], ": ", e.what()));
                     } catch (const Error& e) {
                       throw Error(cat(plan.model_where[i], ": ", e.what()));
                     }
                   }
                   check_compare_duration(plan.models, st->max_minutes);
                   // Tensor parallelism: one group for the whole file (docs/distributed.md).
                   for (std::size_t i = 0; i < plan.models.size(); ++i)
                     if (plan.models[i].tp != plan.models.front().tp)
                       throw UsageError(cat(plan.model_where[i], ": tp ", plan.models[i].tp, ", but the first model entry (",
                                            plan.models[0].label.empty() ? plan.models[0].model : plan.models[0].label, ") has tp ",
                                            plan.models[0].tp, ": every model entry must use the same tp"));
                   const bool tp = !plan.models.empty() && plan.models.front().tp > 1;
                   if (tp && !plan.loads.empty()) throw UsageError("compare: tp > 1 cannot be mixed with endpoint entries");
                   std::optional<Ceilings> ceilings;
                   for (RunOptions model : plan.models) {
                     model.max_minutes = 0;  // checked above, for the whole plan
                     if (interrupted()) break;
                     log::info(cat("compare: ", model.label.empty() ? model.model : model.label));
                     RunHooks hooks;
                     // Ceilings once per device, not once per model: later models on the same device reuse them.
                     hooks.measure_ceilings = !st->no_roofline;
                     hooks.ceilings = ceilings;
                     Results r = run_benchmark(model, hooks);  // one model in memory at a time
                     if (r.env.ceilings) ceilings = r.env.ceilings;
                     add(std::move(r));
                   }
                   if (dist::process_rank() != 0) return kExitOk;  // rank 0 prints and writes
                   if (auto failure = dist::finish_tensor_parallel(std::chrono::seconds(30))) throw Error(*failure);
                   // Endpoints: exactly what `llmbench load` runs. One that cannot be reached is
                   // reported and skipped, keeping what was measured.
                   bool target_failed = false;
                   for (const auto& t : plan.loads) {
                     if (interrupted()) break;
                     log::info(cat("compare: ", t.options.label, " (load, ", t.options.endpoint, ")"));
                     LoadHooks hooks;
                     hooks.should_stop = [] { return interrupted(); };
                     hooks.on_progress = [](const std::string& line) { log::info(line); };
                     try {
                       add(run_load(t.options, hooks));
                     } catch (const Error& e) {
                       log::error(cat(t.options.label, ": ", e.what(), " (skipped)"));
                       target_failed = true;
                     }
                   }
                   all.interrupted = all.interrupted || interrupted();  // also when no point was under way
                   std::string baseline = plan.baseline;
                   const bool measured = std::any_of(all.points.begin(), all.points.end(), [&](const PointResult& p) {
                     return (p.params.label.empty() ? p.params.model : p.params.label) == baseline;
                   });
                   if (!baseline.empty() && !measured) {
                     log::warn(cat("baseline '", baseline, "' has no results: no ratios"));
                     baseline.clear();
                   }
                   const int rc = finish_results(all, st->output, st->format, baseline);
                   // Each failed point gets an error line saying why (the table has it too, but cut short).
                   for (std::size_t i = 0; i < all.points.size(); ++i)
                     if (all.points[i].status == "failed" && !failure_excused(all, all.points[i]))
                       log::error(cat(all.points[i].params.label.empty() ? all.points[i].params.model : all.points[i].params.label,
                                      " (point ", i + 1, "): ", all.points[i].error.empty() ? "failed" : all.points[i].error));
                   return rc == kExitOk && target_failed ? kExitFailure : rc;
                 }});
}

}  // namespace llmbench::cli
