// libFuzzer: the load generator's dataset files (--dataset sharegpt:FILE, jsonl:FILE and trace:FILE): the input
// bytes as a file (a memfd), read by load_sharegpt, load_jsonl and load_trace (blocks of 4 tokens, at most 4,096
// prompt tokens made), with --output-len 7 (odd length) or without, counted
// by the tiny tokenizer (assets/tiny/tokenizer.json, read once). Error (UsageError) is a clean refusal; an
// accepted file must give prompts with text and an output length in [1, 2^24] (a trace: or messages, and its
// sessions' turns in order after their first); anything else is a bug.
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
    select.need_times = size % 3 != 0;  // a load of its own (every third input): timestamps optional
    std::vector<llmbench::LoadPrompt> prompts;
    double last_ms = 0;
    int sessions = 0, last_session = -1, last_turn = 0;
    const auto trace = llmbench::load_trace(path, tok, select);
    if (trace.empty()) __builtin_trap();
    for (auto r : trace) {
      if (r.arrival_ms < 0) __builtin_trap();
      // Lines alone and sessions' first turns in arrival order from 0, a session's turns 1, 2, ... right
      // after its first; sessions numbered in order.
      if (r.session >= 0 && r.turn > 1) {
        if (r.session != last_session || r.turn != last_turn + 1) __builtin_trap();
      } else {
        if (r.arrival_ms < last_ms) __builtin_trap();
        if (r.session >= 0 && (r.turn != 1 || r.session != sessions++)) __builtin_trap();
        if (r.session < 0 && r.turn != 0) __builtin_trap();
        last_ms = r.arrival_ms;
      }
      if (r.session >= 0) last_session = r.session, last_turn = r.turn;
      if (!r.messages.empty()) {  // sent as they are: a JSON array, no prompt text
        if (r.messages.front() != '[' || !r.prompt.text.empty() || r.prompt.output_len < 1) __builtin_trap();
        continue;
      }
      // Every made prompt has exactly its tokens (given texts: the tokenizer's count).
      if (r.prompt.prompt_tokens != static_cast<int>(tok.encode(r.prompt.text, false).size())) __builtin_trap();
      prompts.push_back(std::move(r.prompt));
    }
    if (!prompts.empty()) check(prompts);
  } catch (const llmbench::Error&) {
  }
  close(fd);
  return 0;
}
