#include <csignal>

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "command.h"
#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/bench/device_env.h"
#include "llmbench/bench/interrupt.h"
#include "llmbench/dist/launcher.h"
#include "llmbench/dist/session.h"
#include "llmbench/dist/shard.h"
#include "llmbench/engine/engine.h"
#include "llmbench/load/client.h"
#include "llmbench/model/presets.h"
#include "llmbench/runner/model_tokenizer.h"
#include "llmbench/serve/server.h"

namespace llmbench::cli {

void add_serve_command(CLI::App& root, Commands& out) {
  struct Options {
    EngineOptions engine;
    serve::ServeOptions server;
    std::string batching = "continuous";
    std::string tokenizer;
    int tp = 1;
    double dist_timeout_s = 300;
  };
  auto opt = std::make_shared<Options>();
  opt->engine.device = "auto";
  opt->engine.dtype = "auto";
  auto* app = root.add_subcommand("serve", "OpenAI-compatible HTTP server (completions, chat, SSE streaming, /metrics)");
  app->add_option("--model", opt->engine.model, "Preset (tiny, qwen2.5-7b, …), directory or org/name")->capture_default_str();
  app->add_option("--tokenizer", opt->tokenizer,
                  "tokenizer.json, tokenizer.model or a model directory (default: the model's own; required for "
                  "random-weight presets)");
  app->add_option("--host", opt->server.host, "Address to listen on")->capture_default_str();
  app->add_option("--port", opt->server.port, "Port (0: a free one)")->capture_default_str()->check(CLI::Range(0, 65535));
  app->add_option("--api-key", opt->server.api_key, "Require 'Authorization: Bearer KEY' on /v1/*");
  app->add_option("--device", opt->engine.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app->add_option("--dtype", opt->engine.dtype, "auto (bfloat16 on cuda, float32 on cpu), float32, bfloat16, float16")
      ->capture_default_str();
  app->add_option("--attn", opt->engine.attn,
                  "Prefill attention: eager or sdpa; decode on CUDA uses the fused decode kernel either way "
                  "(the chosen attention with --no-fused)")
      ->capture_default_str();
  app->add_flag("--sdpa-cudnn", opt->engine.sdpa_cudnn,
               "Let --attn sdpa use cuDNN's kernels: faster for a shape seen before, but each new prompt, chunk or "
               "pass shape first builds a plan (~47 ms on an H200); off, torch's flash / efficient kernels");
  app->add_option("--seed", opt->engine.seed, "Random-weights seed")->capture_default_str()->check(not_negative());
  app->add_option("--max-batch", opt->engine.max_batch, "KV-cache slots (requests decoded together)")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  app->add_option("--max-context", opt->engine.max_context, "Tokens per slot (0: min(model's, 4096))")
      ->capture_default_str()->check(CLI::Range(0, 1 << 22));
  app->add_option("--batching", opt->batching, "continuous or static")->capture_default_str()
      ->check(CLI::IsMember({"continuous", "static"}));
  app->add_option("--max-wait-ms", opt->engine.max_wait_ms, "Static batching: wait this long for a full batch")
      ->capture_default_str()->check(CLI::Range(0.0, 1e6));
  app->add_option("--max-prefill-tokens", opt->engine.max_prefill_tokens,
                  "Tokens (requests x longest prompt) of one batched prefill pass; a longer prompt runs alone")
      ->capture_default_str()->check(CLI::Range(1, 1 << 24));
  app->add_option("--prefill-passes", opt->engine.prefill_passes,
                  "Batched prefill passes one step boundary may run before the decode step (0: while requests wait "
                  "and slots are free)")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  app->add_flag("--chunked-prefill", opt->engine.chunked_prefill,
               "Continuous batching: feed prompts in chunks inside the decode steps instead of batched prefill passes "
               "that pause decoding");
  app->add_option("--max-step-tokens", opt->engine.max_step_tokens,
                  "Chunked prefill: tokens of one step (running rows + prompt chunk tokens; at least 64 prompt tokens)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 24));
  app->add_option("--max-queue", opt->engine.max_queue, "Waiting requests beyond this get 503")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app->add_flag("!--no-cuda-graph", opt->engine.cuda_graph, "Plain decode step instead of CUDA graphs");
  app->add_flag("!--no-fused", opt->engine.fused, "Plain ops instead of the fused kernels");
  app->add_option("--tp", opt->tp, "Tensor-parallel ranks: one process per rank, rank 0 serves (docs/distributed.md)")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  app->add_option("--dist-timeout", opt->dist_timeout_s,
                  "With --tp: seconds a collective may wait before the server fails (a dead or stuck rank)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app->add_option("--io-threads", opt->server.io_threads, "HTTP I/O threads")->capture_default_str()->check(CLI::Range(1, 64));
  app->add_option("--read-timeout", opt->server.read_timeout_s, "Seconds to receive a whole request (408 after)")
      ->capture_default_str()->check(CLI::Range(0.01, 3600.0));
  app->add_option("--idle-timeout", opt->server.idle_timeout_s, "Seconds a keep-alive connection may idle")
      ->capture_default_str()->check(CLI::Range(0.01, 86400.0));
  app->add_option("--shutdown-grace-ms", opt->server.shutdown_grace_ms,
                  "On SIGINT/SIGTERM, running requests may finish for this long, then are cancelled")
      ->capture_default_str()->check(CLI::Range(0.0, 600000.0));

  out.push_back({app, [opt] {
                   EngineOptions e = opt->engine;
                   e.batching = opt->batching == "static" ? Batching::static_batch : Batching::continuous;
                   const ResolvedModel resolved = resolve_model(e.model);
                   if (opt->tp > 1) dist::check_tp(resolved.config, opt->tp);
                   // The tokenizer before the weights: refuse in a second, not after loading gigabytes.
                   std::shared_ptr<const Tokenizer> tokenizer;
                   if (!opt->tokenizer.empty()) {
                     tokenizer = load_tokenizer(opt->tokenizer);
                   } else {
                     if (!load_model_tokenizer(resolved))
                       throw UsageError(cat("model '", e.model, "' has no tokenizer (none found with its weights): ",
                                            "give --tokenizer PATH (tokenizer.json, tokenizer.model or a model directory)"));
                   }
                   install_interrupt_handlers();    // every rank: Ctrl-C reaches the whole group, rank 0 stops the rest
                   std::signal(SIGPIPE, SIG_IGN);   // a peer rank gone is an error to report, not a silent death
                   const dist::TpSession tp = dist::start_tensor_parallel(
                       opt->tp, e.device, std::chrono::milliseconds(static_cast<std::int64_t>(opt->dist_timeout_s * 1000)));
                   e.device = tp.device;
                   e.group = tp.group;
                   if (e.dtype == "auto") e.dtype = e.device == "cpu" ? "float32" : "bfloat16";
                   if (tp.rank() != 0) {  // ranks 1 … N−1: replay rank 0's model calls until it stops
                     Engine::follow(e);
                     return kExitOk;
                   }
                   std::unique_ptr<Engine> engine = Engine::start(e);
                   if (!tokenizer) tokenizer = engine->tokenizer();
                   if (!tokenizer) throw Error(cat("model '", e.model, "' loaded without a tokenizer: give --tokenizer PATH"));
                   if (std::int64_t(tokenizer->vocab_size()) > engine->vocab_size())
                     log::warn(cat("serve: the tokenizer has ", tokenizer->vocab_size(), " ids, the model ",
                                   engine->vocab_size(), ": prompts with ids beyond the model's are refused"));
                   auto server = std::make_unique<serve::Server>(*engine, tokenizer, opt->server);
                   server->start();
                   std::cout << "llmbench serve: listening on " << Endpoint{false, server->host(), std::to_string(server->port()), ""}.url()
                             << std::endl;
                   std::optional<std::string> failure;
                   while (!interrupted() && !(failure = engine->failure()))
                     std::this_thread::sleep_for(std::chrono::milliseconds(50));
                   if (!failure) log::info(cat("serve: signal ", interrupt_signal(), ": stopping"));
                   server->shutdown();  // stops the engine too
                   engine.reset();      // before the server: its last requests' callbacks hold connections;
                                        // with --tp it tells the other ranks to stop
                   server.reset();
                   if (failure) {  // a rank stuck in a collective never exits by itself: end the ranks we launched
                     (void)dist::wait_for_ranks(std::chrono::seconds(1));
                     throw Error(*failure);  // main() names a launched rank that died, if one did, instead
                   }
                   if (auto ranks = dist::finish_tensor_parallel(std::chrono::seconds(30))) throw Error(*ranks);
                   return kExitOk;
                 }});
}

}  // namespace llmbench::cli
