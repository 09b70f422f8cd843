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
#include "llmbench/base/utf8.h"

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

constexpr double kMaxBenchMb = 1024;  // --bench-mb: 1 GiB of text, far beyond what the figure needs

// The text of --text-file (or --text): a file that cannot be read or is not UTF-8 is bad input, named by its flag.
std::string input_text(const std::string& flag, const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) {
    throw UsageError(cat(flag, ": ", e.what()));
  }
  const std::size_t bad = utf8::first_invalid(text);
  if (bad != text.size()) throw UsageError(cat(flag, ": ", path, " is not valid UTF-8 at byte offset ", bad));
  return text;
}

void check_utf8(const std::string& flag, const std::string& text) {
  const std::size_t bad = utf8::first_invalid(text);
  if (bad != text.size()) throw UsageError(cat(flag, ": not valid UTF-8 at byte offset ", bad));
}

// --bench's corpus: a JSON list of strings.
std::vector<std::string> read_corpus(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) {  // the default is relative to the repository root
    throw UsageError(cat(e.what(), " (--bench reads its corpus relative to the working directory: run it from the "
                         "repository root, or give --corpus FILE or --text-file FILE)"));
  }
  nlohmann::json corpus;
  try {
    corpus = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(cat("--corpus: ", path, ": malformed JSON (", e.what(), ")"));
  }
  if (!corpus.is_array() || corpus.empty())
    throw UsageError(cat("--corpus: ", path, ": not a non-empty JSON list of strings"));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    if (!corpus[i].is_string())
      throw UsageError(cat("--corpus: ", path, ": item ", i, " is ", corpus[i].type_name(), ", not a string"));
    out.push_back(corpus[i].get<std::string>());
  }
  return out;
}

// Encode throughput, one thread, best of `repetitions` (the first run also fills the word cache,
// as it does for HF tokenizers).
int run_bench(const Tokenizer& tokenizer, const TokenizeOptions& opt) {
  std::string text;
  std::string what;
  if (!opt.text_file.empty()) {
    text = input_text("--text-file", opt.text_file);
    what = opt.text_file;
    if (text.empty()) throw UsageError(cat("--text-file: ", opt.text_file, " is empty: nothing to measure"));
  } else {
    text = bench_text(read_corpus(opt.corpus), static_cast<std::size_t>(opt.bench_mb * (1 << 20)));
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
  app->add_option("--chat-format", opt->chat_format, "With --chat: llama3, chatml, deepseek-r1 or none (no template; default: from tokenizer_config)");
  auto* bench = app->add_flag("--bench", opt->bench, "Measure encode throughput (MB/s, one thread) instead");
  app->add_option("--corpus", opt->corpus, "--bench: corpus the benchmark text is made from")
      ->capture_default_str()
      ->needs(bench);
  app->add_option("--bench-mb", opt->bench_mb, "--bench: MiB of benchmark text (at most 1024)")
      ->capture_default_str()
      ->needs(bench);
  app->add_option("--repetitions", opt->repetitions, "--bench: timed repetitions")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000))
      ->needs(bench);
  text->excludes(bench);
  out.push_back({app, [opt, text, file] {
                   if (!opt->bench && text->count() == 0 && file->count() == 0)
                     throw UsageError("tokenize needs --text or --text-file");
                   if (!(opt->bench_mb > 0 && opt->bench_mb <= kMaxBenchMb))
                     throw UsageError(cat("--bench-mb must be in (0, ", kMaxBenchMb, "] MiB, got ", shown(opt->bench_mb)));
                   if (static_cast<std::size_t>(opt->bench_mb * (1 << 20)) == 0)  // 0 bytes: nothing would be measured
                     throw UsageError(cat("--bench-mb ", shown(opt->bench_mb), " is less than one byte of text: nothing to measure"));
                   // --bench measures encode without special tokens, never a chat template: nothing to apply them to.
                   if (opt->bench && (opt->chat || opt->no_special))
                     throw UsageError(cat(opt->chat ? "--chat" : "--no-special", " does not apply to --bench (it measures ",
                                          "encode of plain text without special tokens)"));
                   if (!opt->chat_format.empty()) {
                     if (!opt->chat) throw UsageError("--chat-format needs --chat");
                     parse_chat_format(opt->chat_format);
                   }
                   if (text->count()) check_utf8("--text", opt->text);
                   // Inputs before the tokenizer: a bad file is named before anything is loaded.
                   const std::string input = file->count() && !opt->bench ? input_text("--text-file", opt->text_file) : opt->text;
                   auto tokenizer = load_tokenizer(opt->tokenizer);
                   if (opt->bench) return run_bench(*tokenizer, *opt);
                   std::vector<TokenId> ids;
                   if (opt->chat_format == "none") {
                     ids = tokenizer->encode(input, false);  // no template: the message's text alone
                   } else if (opt->chat) {
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
