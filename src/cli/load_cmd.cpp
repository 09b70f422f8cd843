#include <unistd.h>

#include <cctype>
#include <climits>
#include <iostream>
#include <memory>

#include "command.h"
#include "run_options_cli.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/base/log.h"
#include "llmbench/bench/interrupt.h"
#include "llmbench/load/runner.h"
#include "llmbench/report/format.h"

namespace llmbench::cli {
namespace {

// This executable, for starting `llmbench serve` when no --endpoint is given.
std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error("cannot find this executable (/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}


}  // namespace

void add_load_command(CLI::App& root, Commands& out) {
  struct State {
    LoadOptions options;
    std::string output;
    std::string format = "table";
    // Comma lists, each occurrence parsed strictly (CLI11's own delimiter skipped empty items: 1,,2 was 1,2).
    std::vector<std::string> concurrency, request_rate;
  };
  auto st = std::make_shared<State>();
  LoadOptions& o = st->options;
  auto* app = root.add_subcommand(
      "load", "Load-test an OpenAI-compatible endpoint (or our own `llmbench serve`): TTFT, ITL, TPOT, goodput");
  app->add_option("--endpoint", o.endpoint, "Base URL, e.g. http://127.0.0.1:8000 (none: start `llmbench serve` on loopback)");
  app->add_option("--model", o.model, "Model name in requests (none: the first of /v1/models; the preset `serve` loads)");
  app->add_option("--label", o.label, "Label of the points in tables and reports (none: the model)");
  app->add_option("--api", o.api, "completions or chat")->capture_default_str();
  app->add_option("--concurrency", st->concurrency, "Closed loop: requests in flight; a comma list sweeps (default 1 without --request-rate or --search)");
  app->add_option("--request-rate", st->request_rate, "Open loop: requests per second; a comma list sweeps");
  app->add_option("--max-concurrency", o.max_concurrency,
                  "Open loop: at most N requests in flight; later arrivals wait for one to finish (vLLM's "
                  "--max-concurrency)");
  app->add_option("--search", o.search,
                  "rate:MIN:MAX or concurrency:MIN:MAX: find the highest load whose goodput under --slo reaches "
                  "--search-goodput, by bisection (each probe is a point)");
  auto* search_goodput = app->add_option("--search-goodput", o.search_goodput, "Goodput fraction a --search probe must reach")
      ->capture_default_str();
  auto* search_steps = app->add_option("--search-steps", o.search_steps, "Bisection steps of --search after its two bounds")
      ->capture_default_str();
  app->add_option("--arrival", o.arrival, "Open-loop arrivals: poisson, constant or gamma:SHAPE")->capture_default_str();
  auto* num_requests = app->add_option("--num-requests,--num-prompts", o.num_requests,
                                       "Timed requests per point (default 100; --num-prompts: vLLM's name)");
  auto* duration = app->add_option("--duration", o.duration_s, "Seconds per point instead of a request count");
  app->add_option("--warmup-requests", o.warmup_requests, "Requests before each point, never recorded")->capture_default_str();
  app->add_option("--input-len,--random-input-len", o.input_len, "Synthetic prompt tokens (--random-input-len: vLLM's name)")->capture_default_str();
  auto* output_len = app->add_option("--output-len,--random-output-len", o.output_len,
                                     "Output tokens per request (max_tokens = min_tokens, ignore_eos); with a "
                                     "--dataset, given: instead of the dataset's lengths (--random-output-len: vLLM's name)")
                         ->capture_default_str();
  auto* max_concurrency = app->get_option("--max-concurrency");
  app->add_option("--range-ratio,--random-range-ratio", o.range_ratio,
                  "Synthetic input and output lengths uniform in [L*(1-R), L*(1+R)] per request (vLLM's "
                  "--random-range-ratio); 0: every request exactly L")
      ->capture_default_str();
  app->add_option("--prefix-len,--random-prefix-len", o.prefix_len,
                  "Synthetic prompts start with the same P tokens, then --input-len of their own (vLLM's "
                  "--random-prefix-len): measures prefix caching")
      ->capture_default_str();
  app->add_option("--dataset", o.dataset,
                  "synthetic, sharegpt:FILE, jsonl:FILE or trace:FILE (a Mooncake-style trace: without --concurrency "
                  "or --request-rate its arrival times are replayed)")
      ->capture_default_str();
  app->add_option("--trace-speedup", o.trace_speedup, "Replay a trace F times faster (its timestamps divided by F)")
      ->capture_default_str();
  app->add_option("--trace-block-size", o.trace_block_size,
                  "Tokens per hash id of a trace (prompts sharing a hash id share that block's text)")
      ->capture_default_str();
  app->add_option("--turns", o.turns,
                  "Multi-turn conversations of N requests: each turn sends the history so far (its prompts and the "
                  "server's answers); --concurrency and --request-rate then count conversations")
      ->capture_default_str();
  app->add_option("--turns-stddev", o.turns_stddev,
                  "Spread of the turns: each conversation's drawn from a normal distribution around --turns (rounded, "
                  "at least 1; seeded by --seed)")
      ->capture_default_str();
  app->add_option("--turn-delay-ms", o.turn_delay_ms, "Think time between an answer and the conversation's next turn")
      ->capture_default_str();
  app->add_option("--turn-delay-stddev-ms", o.turn_delay_stddev_ms,
                  "Spread of the think time: each drawn from a normal distribution around --turn-delay-ms (at least 0)")
      ->capture_default_str();
  app->add_option("--tokenizer", o.tokenizer, "Tokenizer (directory, tokenizer.json, or tiny) for prompts and counts");
  app->add_option("--slo", o.slo, "Goodput objectives, e.g. ttft_ms=200,tpot_ms=50,e2e_ms=5000");
  app->add_option("--seed", o.seed, "Prompt and arrival seed")->capture_default_str()->check(not_negative());
  app->add_option("--timeout-s", o.timeout_s, "Per-request timeout, connect to last byte")->capture_default_str();
  app->add_option("--slice-s", o.slice_s,
                  "Also report each point in windows of S seconds from its start (requests by issue time, output "
                  "tokens by arrival): drift, warm-up, a server slowing down")
      ->capture_default_str();
  app->add_option("--cancel-rate", o.cancel_rate,
                  "Percent of the requests (chosen by --seed) the client abandons, closing the connection, "
                  "--cancel-delay-ms after each was sent; counted as cancelled, left out of the latencies")
      ->capture_default_str();
  app->add_option("--cancel-delay-ms", o.cancel_delay_ms, "How long after it was sent a cancelled request is abandoned")
      ->capture_default_str();
  app->add_option("--header", o.headers, "Extra request header KEY:VALUE (repeatable)");
  app->add_option("--api-key", o.api_key, "Sent as Authorization: Bearer KEY");
  app->add_option("--api-key-env", o.api_key_env,
                  "The API key is in this environment variable (e.g. OPENAI_API_KEY): out of the process list, "
                  "the shell history and the results");
  app->add_option("--ca-cert", o.ca_cert,
                  "https: a PEM file of certificates to trust besides the system's (a private CA, a self-signed server)");
  app->add_flag("--insecure,-k", o.insecure, "https: do not check the server's certificate or host name (as curl -k)");
  app->add_flag("--no-stream", o.no_stream,
               "Ask for whole responses (\"stream\": false): end-to-end latency and throughput only");
  app->add_option("--extra-body", o.extra_body,
                  "JSON object merged into every request (merge patch: null removes a field), e.g. "
                  "'{\"top_k\": 20}' or '{\"min_tokens\": null}'");
  app->add_flag("--server-metrics", o.server_metrics,
               "Scrape the server's Prometheus /metrics while each point runs: gauges, counter rates and "
               "histograms of the point go into its results");
  app->add_option("--server-metrics-url", o.server_metrics_urls,
                  "The metrics page's full URL (implies --server-metrics; default ENDPOINT/metrics); repeatable: "
                  "several servers (e.g. prefill and decode workers), each series labelled instance=HOST:PORT")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--server-metrics-interval-ms", o.server_metrics_interval_ms, "Between two scrapes")
      ->capture_default_str();
  app->add_option("--output,-o", st->output, "Write the results JSON here (atomically)");
  app->add_option("--format", st->format, "Console output: table, md, csv or json")->capture_default_str();
  out.push_back({app, [st, num_requests, duration, search_goodput, search_steps, output_len, max_concurrency] {
                   LoadOptions options = st->options;
                   for (const auto& text : st->concurrency)
                     for (int c : parse_int_list(text, "--concurrency")) options.concurrency.push_back(c);
                   for (const auto& text : st->request_rate) {
                     // vLLM's `--request-rate inf` sends every request at once: here that is a closed loop.
                     std::string lower = text;
                     for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
                     if (lower.find("inf") != std::string::npos)
                       throw UsageError("--request-rate inf (every request at once) is the closed loop "
                                        "--concurrency N with N = --num-requests");
                     for (double r : parse_double_list(text, "--request-rate")) options.request_rate.push_back(r);
                   }
                   options.output_len_given = output_len->count() > 0;
                   // 0 inside LoadOptions means "not given": given as 0, it is a mistake.
                   if (num_requests->count() && options.num_requests < 1)
                     throw UsageError(cat("--num-requests must be at least 1, got ", options.num_requests));
                   if (duration->count() && !(options.duration_s > 0))
                     throw UsageError(cat("--duration must be a positive number of seconds, got ", options.duration_s));
                   if (max_concurrency->count() && options.max_concurrency < 1)
                     throw UsageError(cat("--max-concurrency must be at least 1, got ", options.max_concurrency));
                   if ((search_goodput->count() || search_steps->count()) && options.search.empty())
                     throw UsageError("--search-goodput and --search-steps only apply with --search");
                   parse_format(st->format);
                   if (options.endpoint.empty()) {
                     options.serve_command = {self_exe(), "serve", "--model",
                                              options.model.empty() ? "tiny" : options.model};
                     if (!options.tokenizer.empty()) {  // the server needs it too (a model without its own)
                       options.serve_command.push_back("--tokenizer");
                       options.serve_command.push_back(options.tokenizer);
                     }
                   }
                   validate(options);
                   if (!st->output.empty()) check_writable(st->output);
                   install_interrupt_handlers();
                   LoadHooks hooks;
                   hooks.should_stop = [] { return interrupted(); };
                   hooks.on_progress = [](const std::string& line) { log::info(line); };
                   Results results = run_load(options, hooks);
                   const int rc = finish_results(results, st->output, st->format, "");
                   // A failed point is the command's error: one line naming it and why its requests failed.
                   for (std::size_t i = 0; rc == kExitFailure && i < results.points.size(); ++i)
                     if (results.points[i].status == "failed")
                       throw Error(results.points.size() > 1 ? cat("point ", i + 1, ": ", results.points[i].error)
                                                             : results.points[i].error);
                   return rc;
                 }});
}

}  // namespace llmbench::cli
