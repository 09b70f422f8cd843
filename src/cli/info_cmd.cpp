#include <iostream>
#include <memory>

#include "command.h"
#include "llmbench/bench/device_env.h"

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
  app->add_flag("--measure", opt->measure, "Measure copy bandwidth and matmul rate (median of --repetitions)");
  app->add_option("--device", opt->device, "Device to measure: auto, cpu, cuda, cuda:N")->capture_default_str();
  app->add_option("--repetitions", opt->repetitions, "Timed repetitions per ceiling")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  out.push_back({app, [opt] {
                   const std::string device = resolve_device(opt->device);
                   EnvInfo env = collect_env();
                   if (opt->measure) env.ceilings = measure_ceilings(device, opt->repetitions);
                   if (opt->json)
                     std::cout << to_json(env).dump(2) << "\n";
                   else
                     std::cout << format_env(env);
                   return 0;
                 }});
}

}  // namespace llmbench::cli
