#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "command.h"
#include "run_options_cli.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/bench/device_env.h"
#include "llmbench/bench/memory.h"
#include "llmbench/dist/launcher.h"
#include "llmbench/dist/session.h"
#include "llmbench/dist/shard.h"
#include "llmbench/model/model.h"
#include "llmbench/model/presets.h"
#include "llmbench/runner/model_tokenizer.h"
#include "llmbench/runner/prompts.h"
#include "llmbench/tokenizer/chat.h"

namespace llmbench::cli {

namespace {

// "1,2,3;4,5,6" → {{1,2,3},{4,5,6}}: ';' separates the prompts of a batch.
std::vector<std::vector<std::int64_t>> parse_prompt_ids(const std::string& text) {
  std::vector<std::vector<std::int64_t>> prompts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(';', start), text.size());
    const std::string prompt = text.substr(start, end - start);
    start = end + 1;
    std::vector<std::int64_t> ids;
    std::stringstream items(prompt);
    std::string item;
    while (std::getline(items, item, ',')) {
      const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
      if (b == std::string::npos) throw UsageError(cat("--prompt-ids: empty id in prompt ", prompts.size()));
      item = item.substr(b, e - b + 1);
      std::size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != item.size()) throw UsageError(cat("--prompt-ids: '", item, "' is not a token id"));
      ids.push_back(v);
    }
    if (ids.empty()) throw UsageError(cat("--prompt-ids: prompt ", prompts.size(), " is empty"));
    prompts.push_back(std::move(ids));
  }
  if (prompts.empty()) throw UsageError("--prompt-ids: no prompt given");
  return prompts;
}

}  // namespace

void add_generate_command(CLI::App& root, Commands& out) {
  struct Options {
    std::string model = "tiny";
    std::string prompt_ids;
    std::optional<std::string> prompt;
    std::string prompt_file;
    bool chat = false;
    std::string chat_format;
    std::int64_t max_new_tokens = 32;
    double temperature = 0.0;
    std::int64_t top_k = 0;
    double top_p = 1.0;
    std::uint64_t seed = 0;
    std::string device = "auto";
    std::string dtype = "auto";
    std::string attn = "eager";
    std::string kv_dtype = "bf16";
    bool ignore_eos = false;
    bool json = false;
    std::string dump_logits;
    int tp = 1;
    double dist_timeout_s = 300;
  };
  auto opt = std::make_shared<Options>();
  auto* app = root.add_subcommand("generate", "Generate tokens with the model core (greedy unless --temperature > 0)");
  app->add_option("--model", opt->model, "Preset (tiny, deepseek-r1-7b, llama-3-8b, qwen2.5-7b, llama-3-70b, qwen2.5-72b), directory or org/name")
      ->capture_default_str();
  app->add_option("--prompt", opt->prompt, "Prompt text, tokenized by the model's tokenizer (one prompt)");
  app->add_option("--prompt-file", opt->prompt_file, "File whose text is the prompt");
  app->add_flag("--chat", opt->chat, "Wrap the prompt as a user message in the model's chat format");
  app->add_option("--chat-format", opt->chat_format, "With --chat: llama3, chatml, deepseek-r1 or none (no template; default: from tokenizer_config)");
  app->add_option("--prompt-ids", opt->prompt_ids, "Token ids: \"1,2,3;4,5,6\" (';' separates the prompts of a batch)");
  app->add_option("--max-new-tokens", opt->max_new_tokens, "New tokens per prompt")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app->add_option("--temperature", opt->temperature, "0: greedy")->capture_default_str()->check(CLI::Range(0.0, 1e6));
  app->add_option("--top-k", opt->top_k, "0: off")->capture_default_str();
  app->add_option("--top-p", opt->top_p, "1: off")->capture_default_str();
  app->add_option("--seed", opt->seed, "Sampling seed (and random-weights seed)")->capture_default_str()->check(not_negative());
  app->add_option("--device", opt->device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  app->add_option("--dtype", opt->dtype, "auto (bfloat16 on cuda, float32 on cpu), float32, bfloat16, float16")->capture_default_str();
  app->add_option("--attn", opt->attn, "eager or sdpa")->capture_default_str();
  app->add_option("--kv-dtype", opt->kv_dtype, "KV cache: bf16 (the --dtype) or fp8 (e4m3, per-head scales; CUDA only)")
      ->capture_default_str();
  app->add_flag("--ignore-eos", opt->ignore_eos, "Always generate --max-new-tokens (do not stop at EOS)");
  app->add_flag("--json", opt->json, "Print {\"token_ids\": [[...], ...], ...} on stdout");
  app->add_option("--tp", opt->tp, "Tensor-parallel ranks: one process per rank (docs/distributed.md)")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  app->add_option("--dist-timeout", opt->dist_timeout_s, "With --tp: seconds a collective may wait before the run fails")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app->add_option("--dump-logits", opt->dump_logits, "Write the prefill's last-position logits as JSON {\"last_logits\": [[...]]}");

  out.push_back({app, [opt] {
                   if (!opt->prompt_file.empty()) {
                     if (opt->prompt) throw UsageError("give --prompt or --prompt-file, not both");
                     opt->prompt = read_prompt_file(opt->prompt_file, "--prompt-file");
                   }
                   if (opt->prompt.has_value() == !opt->prompt_ids.empty())
                     throw UsageError("give exactly one of --prompt-ids, --prompt or --prompt-file");
                   std::vector<std::vector<std::int64_t>> prompts;
                   if (!opt->prompt) prompts = parse_prompt_ids(opt->prompt_ids);
                   if (opt->prompt && opt->prompt->empty()) throw UsageError("the prompt is empty");
                   if (opt->chat && !opt->prompt) throw UsageError("--chat needs a text prompt (--prompt or --prompt-file)");
                   if (!opt->chat_format.empty()) {
                     if (!opt->chat) throw UsageError("--chat-format needs --chat");
                     parse_chat_format(opt->chat_format);
                   }
                   if (!opt->dump_logits.empty() && dist::process_rank() == 0) check_writable(opt->dump_logits);
                   if (opt->tp > 1) dist::check_tp(resolve_model(opt->model).config, opt->tp);
                   const std::string device = resolve_device(opt->device);
                   require_one_of({opt->kv_dtype}, "kv-dtype", {"bf16", "fp8"});  // as run checks it
                   const KvFormat kv_format = parse_kv_format(opt->kv_dtype);
                   if (kv_format == KvFormat::fp8) check_kv_fp8_supported(torch::Device(device));
                   std::string dtype = opt->dtype;
                   if (dtype == "auto") dtype = device == "cpu" ? "float32" : "bfloat16";
                   SamplingParams sampling{opt->temperature, opt->top_k, opt->top_p, opt->seed};
                   Sampler validated(sampling, torch::kCPU);  // throws on bad sampling flags before loading
                   if (opt->prompt) {  // refuse before loading gigabytes of weights
                     if (!load_model_tokenizer(resolve_model(opt->model)))
                       throw UsageError(cat("model '", opt->model, "' has no tokenizer (none found with its weights): use --prompt-ids"));
                   }
                   const dist::TpSession tp = dist::start_tensor_parallel(
                       opt->tp, opt->device, std::chrono::milliseconds(static_cast<std::int64_t>(opt->dist_timeout_s * 1000)));
                   {  // as `run`: a model that cannot fit is refused before its weights are read (a text prompt's
                      // length is not known yet: its new tokens are counted)
                     std::int64_t longest = 0;
                     for (const auto& ids : prompts) longest = std::max<std::int64_t>(longest, static_cast<std::int64_t>(ids.size()));
                     const ModelConfig rank_config = dist::shard_config(resolve_model(opt->model).config, std::max(1, opt->tp));
                     const std::int64_t batch = prompts.empty() ? 1 : static_cast<std::int64_t>(prompts.size());
                     check_fits(torch::Device(tp.device),
                                estimate_memory(shape_of(rank_config), batch, longest, opt->max_new_tokens,
                                                static_cast<int>(c10::elementSize(parse_dtype(dtype))), 0,
                                                kv_elem_bytes(opt->kv_dtype))
                                    .total(),
                                cat(opt->model, " at batch ", batch, " x ", longest + opt->max_new_tokens, " positions"));
                   }
                   auto model = Model::load({opt->model, dtype, tp.device, opt->attn, opt->seed, "bf16", tp.group});
                   model->set_kv_format(kv_format);
                   std::unique_ptr<Tokenizer> tokenizer = load_model_tokenizer(model->info());
                   if (opt->prompt) {
                     std::vector<TokenId> ids = opt->chat ? encode_chat_prompt(*tokenizer, *opt->prompt, opt->chat_format)
                                                          : tokenizer->encode(*opt->prompt, true);
                     if (ids.empty()) throw UsageError("the prompt tokenizes to no tokens");
                     prompts.push_back(std::vector<std::int64_t>(ids.begin(), ids.end()));
                   }
                   GenerateOptions g;
                   g.max_new_tokens = opt->max_new_tokens;
                   g.sampling = sampling;
                   g.ignore_eos = opt->ignore_eos;
                   const auto start = std::chrono::steady_clock::now();
                   GenerateResult r = model->generate(prompts, g);
                   const double gen_ms =
                       std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
                   const ModelInfo& info = model->info();
                   if (tp.rank() != 0) return 0;  // rank 0 prints and writes
                   if (auto failure = dist::finish_tensor_parallel(std::chrono::seconds(30))) throw Error(*failure);

                   if (!opt->dump_logits.empty()) {
                     nlohmann::json rows = nlohmann::json::array();
                     for (std::int64_t b = 0; b < r.last_logits.size(0); ++b) {
                       torch::Tensor row = r.last_logits[b].contiguous();
                       rows.push_back(std::vector<float>(row.data_ptr<float>(), row.data_ptr<float>() + row.numel()));
                     }
                     write_file_atomic(opt->dump_logits, nlohmann::json{{"last_logits", rows}}.dump() + "\n");
                   }
                   std::vector<std::string> texts;
                   if (tokenizer)
                     for (const auto& row : r.tokens) texts.push_back(tokenizer->decode(std::vector<TokenId>(row.begin(), row.end()), true));
                   if (opt->json) {
                     nlohmann::json j{{"token_ids", r.tokens},
                                      {"text", texts},
                                      {"model", info.spec},
                                      {"preset", info.preset},
                                      {"weights", info.weights},
                                      {"checkpoint", info.checkpoint_dir},
                                      {"dtype", info.dtype},
                                      {"device", info.device},
                                      {"attn", info.attn},
                                      {"load_ms", info.load_ms},
                                      {"generate_ms", gen_ms},
                                      {"weight_bytes", info.weight_bytes},
                                      {"kv_cache_bytes", model->cache().bytes()},
                                      {"kv_dtype", to_string(model->kv_format())},
                                      {"config", to_json(info.config)},
                                      {"tp", info.tp}};
                     if (tp.group) j["tp_backend"] = tp.group->backend();
                     if (model->device().is_cuda()) j["peak_memory_bytes"] = peak_allocated_bytes(model->device());
                     std::cout << j.dump() << "\n";
                   } else {
                     std::cout << "model: " << info.spec << " (weights: " << info.weights << ", " << info.dtype << " on "
                               << info.device << ", " << info.weight_bytes / 1e6 << " MB, load " << info.load_ms
                               << " ms)\n";
                     for (std::size_t b = 0; b < r.tokens.size(); ++b) {
                       std::cout << "[" << b << "]";
                       for (auto id : r.tokens[b]) std::cout << " " << id;
                       std::cout << "\n";
                       if (b < texts.size()) std::cout << "    " << nlohmann::json(texts[b]).dump() << "\n";
                     }
                   }
                   return 0;
                 }});
}

}  // namespace llmbench::cli
