#include <iostream>
#include <memory>

#include "command.h"
#include "llmbench/bench/device_env.h"
#include "llmbench/report/web_assets.h"

namespace llmbench::cli {

void add_info_command(CLI::App& root, Commands& out) {
  struct Options {
    bool json = false;
    bool measure = false;
    std::string device = "auto";
    int repetitions = 10;
  };
  auto opt = std::make_shared<Options>();
  auto* app = root.add_subcommand("info", "Show tool, host, libtorch and GPU facts; --measure the device ceilings");
  app->add_flag("--json", opt->json, "Print JSON on stdout");
  auto* measure = app->add_flag("--measure", opt->measure, "Measure copy bandwidth and matmul rate (median of --repetitions)");
  app->add_option("--device", opt->device, "Device to measure: auto, cpu, cuda, cuda:N")->capture_default_str();
  app->add_option("--repetitions", opt->repetitions, "Timed repetitions per ceiling")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000))
      ->needs(measure);  // nothing is repeated without --measure: not silently ignored
  out.push_back({app, [opt] {
                   const std::string device = resolve_device(opt->device);
                   EnvInfo env = collect_env();
                   if (opt->measure) env.ceilings = measure_ceilings(device, opt->repetitions);
                   // Whether `report` can draw charts without a source tree (web_assets.h).
                   const bool charts = embedded_web_assets().has_value();
                   if (opt->json) {
                     nlohmann::json j = to_json(env);
                     j["report_charts_embedded"] = charts;
                     std::cout << j.dump(2) << "\n";
                   } else {
                     std::cout << format_env(env)
                               << "report charts: " << (charts ? "embedded (vega, vega-lite, vega-embed)"
                                                               : "not embedded (run scripts/fetch-web-assets.sh and rebuild)")
                               << "\n";
                   }
                   return 0;
                 }});
}

}  // namespace llmbench::cli
