// libFuzzer: the load generator's dataset files (--dataset sharegpt:FILE, jsonl:FILE and trace:FILE): the input
// bytes as a file (a memfd), read by load_sharegpt, load_jsonl and load_trace (blocks of 4 tokens, at most 4,096
// prompt tokens made), with --output-len 7 (odd length) or without, counted
// by the tiny tokenizer (assets/tiny/tokenizer.json, read once). Error (UsageError) is a clean refusal; an
// accepted file must give prompts with text and an output length in [1, 2^24]; anything else is a bug.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/load/dataset.h"
#include "llmbench/tokenizer/tokenizer.h"

namespace {

const llmbench::Tokenizer& tiny() {
  static const auto tok = llmbench::tokenizer_from_json(
      llmbench::read_file(LLMBENCH_SOURCE_DIR "/assets/tiny/tokenizer.json"), "", "assets/tiny/tokenizer.json");
  return *tok;
}

void check(const std::vector<llmbench::LoadPrompt>& prompts) {
  if (prompts.empty()) __builtin_trap();  // an empty dataset is refused
  for (const auto& p : prompts)
    if (p.text.empty() || p.prompt_tokens < 1 || p.output_len < 1 || p.output_len > llmbench::kMaxJsonlOutputLen)
      __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const llmbench::Tokenizer& tok = tiny();
  const int fd = memfd_create("fuzz.dataset", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  if (size && write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  // --output-len given or not, by the input's length (each read costs read_file's 1 MiB buffer: two, not four).
  const int output_len = size % 2 ? 7 : 0;
  try {
    check(llmbench::load_sharegpt(path, tok, output_len));
  } catch (const llmbench::Error&) {
  }
  try {
    check(llmbench::load_jsonl(path, tok, output_len));
  } catch (const llmbench::Error&) {
  }
  try {
    llmbench::TraceSelection select;
    select.output_len = output_len;
    select.block_size = 4;
    select.max_tokens = 4096;
    std::vector<llmbench::LoadPrompt> prompts;
    double last_ms = 0;
    for (auto& r : llmbench::load_trace(path, tok, select)) {
      // In arrival order from 0; every made prompt has exactly its tokens (given texts: the tokenizer's count).
      if (r.arrival_ms < last_ms || r.arrival_ms < 0) __builtin_trap();
      last_ms = r.arrival_ms;
      if (r.prompt.prompt_tokens != static_cast<int>(tok.encode(r.prompt.text, false).size())) __builtin_trap();
      prompts.push_back(std::move(r.prompt));
    }
    check(prompts);
  } catch (const llmbench::Error&) {
  }
  close(fd);
  return 0;
}
