#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "command.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/tokenizer/bench_text.h"
#include "llmbench/tokenizer/tokenizer.h"

namespace llmbench::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::string text;
  std::string text_file;
  bool no_special = false;
  bool json = false;
  bool chat = false;
  std::string chat_format;
  bool bench = false;
  std::string corpus = "tests/data/tokenizer/corpus.json";
  double bench_mb = 1.0;
  int repetitions = 5;
};

// Encode throughput, one thread, best of `repetitions` (the first run also fills the word cache,
// as it does for HF tokenizers).
int run_bench(const Tokenizer& tokenizer, const TokenizeOptions& opt) {
  std::string text;
  std::string what;
  if (!opt.text_file.empty()) {
    text = read_file(opt.text_file);
    what = opt.text_file;
  } else {
    std::string corpus_text;
    try {
      corpus_text = read_file(opt.corpus);
    } catch (const Error& e) {  // the default is relative to the repository root
      throw UsageError(cat(e.what(), " (--bench reads its corpus relative to the working directory: run it from the "
                           "repository root, or give --corpus FILE or --text-file FILE)"));
    }
    auto corpus = nlohmann::json::parse(corpus_text, nullptr, false);
    if (!corpus.is_array()) throw Error(cat(opt.corpus, ": not a JSON list of strings"));
    text = bench_text(corpus.get<std::vector<std::string>>(), std::size_t(opt.bench_mb * (1 << 20)));
    what = cat("bench_text(", opt.corpus, ")");
  }
  std::size_t tokens = 0;
  double best = 1e30;
  for (int r = 0; r < opt.repetitions; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto ids = tokenizer.encode(text, false);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    tokens = ids.size();
  }
  double mb_s = double(text.size()) / best / 1e6;
  if (opt.json) {
    nlohmann::json j = {{"text", what},        {"bytes", text.size()}, {"tokens", tokens},
                        {"best_s", best},      {"mb_s", mb_s},         {"repetitions", opt.repetitions},
                        {"threads", 1},        {"tokenizer", tokenizer.info().source}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "encode " << text.size() << " bytes of " << what << " → " << tokens << " tokens: " << mb_s
              << " MB/s (best of " << opt.repetitions << ", one thread)\n";
  }
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& root, Commands& out) {
  auto opt = std::make_shared<TokenizeOptions>();
  auto* app = root.add_subcommand("tokenize", "Encode text with a model's tokenizer (ids identical to HF's)");
  app->add_option("--tokenizer", opt->tokenizer,
                  "Model directory, tokenizer.json, tokenizer.model, or 'tiny' (built in)")
      ->required();
  auto* text = app->add_option("--text", opt->text, "Text to encode");
  auto* file = app->add_option("--text-file", opt->text_file, "File whose content is encoded");
  text->excludes(file);
  app->add_flag("--no-special", opt->no_special, "Do not add special tokens (HF add_special_tokens=False)");
  app->add_flag("--json", opt->json, R"(Print {"ids": [...], "count": N, "decoded": "..."})");
  app->add_flag("--chat", opt->chat, "Wrap the text as one user message in the chat format");
  app->add_option("--chat-format", opt->chat_format, "llama3, chatml, deepseek-r1 (default: from tokenizer_config)");
  app->add_flag("--bench", opt->bench, "Measure encode throughput (MB/s, one thread) instead");
  app->add_option("--corpus", opt->corpus, "--bench: corpus the benchmark text is made from")->capture_default_str();
  app->add_option("--bench-mb", opt->bench_mb, "--bench: MiB of benchmark text")->capture_default_str();
  app->add_option("--repetitions", opt->repetitions, "--bench: timed repetitions")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  out.push_back({app, [opt, text, file] {
                   if (!opt->bench && text->count() == 0 && file->count() == 0)
                     throw UsageError("tokenize needs --text or --text-file");
                   auto tokenizer = load_tokenizer(opt->tokenizer);
                   if (opt->bench) return run_bench(*tokenizer, *opt);
                   std::string input = file->count() ? read_file(opt->text_file) : opt->text;
                   std::vector<TokenId> ids;
                   if (opt->chat || !opt->chat_format.empty()) {
                     const ChatFormat format = tokenizer->chat_format_for(
                         opt->chat_format.empty() ? ChatFormat::none : parse_chat_format(opt->chat_format));
                     ids = tokenizer->encode_chat({{"user", input}}, true, format);
                   } else {
                     ids = tokenizer->encode(input, !opt->no_special);
                   }
                   if (opt->json) {
                     nlohmann::json j = {{"ids", ids}, {"count", ids.size()}, {"decoded", tokenizer->decode(ids)}};
                     std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
                   } else {
                     for (std::size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
                     std::cout << "\n";
                   }
                   return 0;
                 }});
}

}  // namespace llmbench::cli
