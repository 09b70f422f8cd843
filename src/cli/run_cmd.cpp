#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>

#include "command.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/base/log.h"
#include "llmbench/bench/interrupt.h"
#include "llmbench/dist/dist_env.h"
#include "llmbench/dist/launcher.h"
#include "llmbench/dist/session.h"
#include "llmbench/report/format.h"
#include "llmbench/runner/runner.h"
#include "run_options_cli.h"

namespace llmbench::cli {
namespace {

// A one-line progress bar on stderr, redrawn in place; only used when stderr is a terminal.
void draw_progress(const Progress& p) {
  const int width = 24;
  int filled = p.runs > 0 && p.run >= 0 ? width * (p.run + 1) / p.runs : 0;
  std::fprintf(stderr, "\r[%d/%d] %-28.28s [%s%s] %s %d/%d ", p.point + 1, p.points, p.label.c_str(),
               std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
               p.run < 0 ? "warm-up" : "run", p.run < 0 ? -p.run : p.run + 1, p.runs);
  std::fflush(stderr);
}

}  // namespace

int finish_results(Results& results, const std::string& output, const std::string& format,
                   const std::string& baseline) {
  if (!command_line().empty()) results.command = command_line();
  if (!output.empty()) save_results(output, results);
  Format f = parse_format(format);
  if (f == Format::table || f == Format::md) {
    std::set<std::string> said;
    for (const auto& p : results.points) {
      if (p.status == "failed" || p.load || !said.insert(p.params.label).second) continue;
      std::cout << one_line(p.params.label) << ": weights: " << p.weights
                << (p.weights == "random" ? " (timings are valid, generated text is not)" : " (" + p.checkpoint + ")")
                << ", prompts: " << p.prompt_source << ", tokenizer: " << p.tokenizer << "\n";
    }
    for (const auto& p : results.points) {
      if (!p.load || !said.insert(p.params.label + "\x1fload").second) continue;
      std::cout << one_line(p.params.label) << " at " << p.load->endpoint << " (" << p.load->api << "): prompts: "
                << p.prompt_source << ", tokenizer: " << p.tokenizer << ", output tokens counted by "
                << p.load->token_count_source << "; failed requests are excluded from the latencies\n";
    }
    std::cout << "\n";
  }
  std::cout << (baseline.empty() && f != Format::json ? format_results(results, f)
                                                      : format_comparison(results, f, baseline));
  if (f == Format::table || f == Format::md)
    for (const auto& line : search_summaries(results)) std::cout << "\n" << line << "\n";
  if (f == Format::table || f == Format::md)
    for (const auto& block : turn_summaries(results)) std::cout << "\n" << block << "\n";
  if (f == Format::table || f == Format::md)
    for (const auto& block : slice_summaries(results)) std::cout << "\n" << block << "\n";
  if (f == Format::table || f == Format::md)
    for (const auto& line : prompt_cache_summaries(results)) std::cout << "\n" << line << "\n";
  if (f == Format::table || f == Format::md)
    for (const auto& line : cancel_summaries(results)) std::cout << "\n" << line << "\n";
  for (const auto& w : cv_warnings(results)) log::warn(w);
  if (!output.empty()) log::info(cat("results written to ", output));
  if (results.interrupted) {
    log::warn("interrupted: the finished points were kept");
    return interrupt_exit_code();
  }
  return any_point_failed(results) ? kExitFailure : kExitOk;
}

void add_run_command(CLI::App& root, Commands& out) {
  struct State {
    RunFlags flags;
    std::string output;
    std::string format = "table";
    bool no_roofline = false;
  };
  auto st = std::make_shared<State>();
  auto* app = root.add_subcommand("run", "Measure generation latency: warm-ups, timed runs, statistics, results JSON");
  add_run_flags(*app, st->flags);
  app->add_option("--output,-o", st->output, "Write the results JSON here (atomically)");
  app->add_option("--format", st->format, "Console output: table, md, csv or json")->capture_default_str();
  app->add_flag("--no-roofline", st->no_roofline, "Skip measuring the device ceilings (no MBU/MFU)");
  out.push_back({app, [st] {
                   RunOptions options = finish_run_flags(st->flags);
                   parse_format(st->format);
                   const bool rank0 = dist::process_rank() == 0;  // only rank 0 prints and writes
                   if (!st->output.empty() && rank0) {
                     check_writable(st->output);
                     check_not_an_input(st->output, {st->flags.prompt_file});
                   }
                   install_interrupt_handlers();
                   RunHooks hooks;
                   hooks.measure_ceilings = !st->no_roofline;
                   const bool tty = ::isatty(STDERR_FILENO) && rank0;
                   if (tty) hooks.on_progress = draw_progress;
                   Results results = run_benchmark(options, hooks);
                   if (tty) std::fprintf(stderr, "\r\033[K");
                   if (dist::process_rank() != 0) return kExitOk;
                   if (auto failure = dist::finish_tensor_parallel(std::chrono::seconds(30))) throw Error(*failure);
                   return finish_results(results, st->output, st->format, "");
                 }});
}

}  // namespace llmbench::cli
