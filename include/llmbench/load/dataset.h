#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace llmbench {

class Tokenizer;

// One request's prompt and how many tokens to ask for. (Not runner/prompts.h's PromptSpec: two classes of one
// name in one program broke each other's destructors.)
struct LoadPrompt {
  std::string text;
  int prompt_tokens = 0;  // by the tokenizer (without special tokens); 0 when unknown
  int output_len = 0;     // max_tokens (and min_tokens) of the request
  std::string extra;      // a trace line's "extra": a JSON object merged into its body after --extra-body; "" if none
};

// `synthetic`, `sharegpt:FILE`, `jsonl:FILE` or `trace:FILE`.
struct DatasetSpec {
  std::string kind = "synthetic";
  std::string path;
};
DatasetSpec parse_dataset(const std::string& text);  // UsageError on anything else

// `n` prompts of exactly `input_len` tokens of `tokenizer` (without special tokens): random ids
// decoded to text, re-encoded, and adjusted until the count is exact. Throws Error if it cannot.
// Returns fewer as soon as `should_stop` (polled per prompt) says so. With `range_ratio` R > 0 each
// prompt's input and output lengths are drawn uniformly from the integers in [L·(1−R), L·(1+R)]
// (truncated, at least 1; vLLM's --random-range-ratio), from their own stream of `seed`. With
// `prefix_len` P > 0 every prompt starts with the same text of exactly P tokens (one per seed) and has
// P + input length tokens in all (vLLM's --random-prefix-len): prefix caches hit. R = 0 and P = 0 give
// exactly the prompts they always gave.
std::vector<LoadPrompt> synthetic_prompts(const Tokenizer& tokenizer, int n, int input_len, int output_len,
                                          std::uint64_t seed, const std::function<bool()>& should_stop = {},
                                          double range_ratio = 0, int prefix_len = 0);

// The integers [lo, hi] a length L spreads over with range ratio R (both L when R = 0).
std::pair<int, int> length_range(int length, double range_ratio);

// ShareGPT JSON: [{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}, ...].
// The first human turn is the prompt; output_len is the next turn's length in tokens, or
// `output_len` when > 0. Entries without two turns are skipped; UsageError on unreadable or invalid files.
std::vector<LoadPrompt> load_sharegpt(const std::string& path, const Tokenizer& tokenizer, int output_len);

// JSON lines: {"prompt": "...", "output_len": 128} per line (output_len optional when `output_len` > 0,
// which then overrides it; else an integer in [1, kMaxJsonlOutputLen]). Blank lines skipped; UsageError
// naming FILE:LINE on a bad line (invalid UTF-8 is said as such).
constexpr int kMaxJsonlOutputLen = 1 << 24;
std::vector<LoadPrompt> load_jsonl(const std::string& path, const Tokenizer& tokenizer, int output_len);

// A request trace (`trace:FILE`, the Mooncake / AIPerf JSON-lines format), one request per line:
//   {"timestamp": MS, "input_length": N, "output_length": M, "hash_ids": [H, ...]}
// timestamp: arrival in milliseconds (any origin; a number >= 0). input_length: the prompt's tokens, made
// up of blocks of `block_size` tokens, one per hash id (ceil(N / block_size) of them, optional): prompts
// with the same hash id at the same place share that block's text, so they share a prefix as the traced
// requests did. Instead of input_length a line may carry the prompt itself ("prompt" or "text_input").
// output_length: max_tokens, unless `output_len` > 0 overrides it. "extra" (optional): a JSON object merged
// into that request's body (as --extra-body is, after it). Instead of a prompt a line may give "messages"
// (chat messages, sent as they are). Lines with the same "session_id" (a string or an integer) are one
// multi-turn session, in file order: its first line's timestamp starts it; a later line goes when the answer
// before it has come, and then at its own "timestamp" if it has one, else "delay" ms after the answer (0
// without). A session's lines all give messages (sent as they are) or none do (their prompts are new user
// turns after the history so far); with "message_mode": "delta" (every line of the session) a line's
// messages are that turn's new ones, sent after the history so far with the server's answers in it.
// UsageError naming FILE:LINE on a bad line.
struct TraceRequest {
  double arrival_ms = 0;  // from the earliest request of the file (which is at 0); a later turn: its timestamp if any
  LoadPrompt prompt;
  std::string messages;   // "messages" as compact JSON (an array); "" when the line gives a prompt
  bool delta = false;     // "message_mode": "delta": only the turn's new messages (after the history and answers)
  int session = -1;       // lines with a session_id: the session (from 0, in order of their starts); -1: alone
  int turn = 0;           // in a session: the line's turn (from 1); 0 alone
  bool timed = true;      // a later turn: false when it has no timestamp (it goes `delay_ms` after the answer)
  double delay_ms = 0;    // a later turn without a timestamp: after the answer before it
};
struct TraceSelection {
  int output_len = 0;           // > 0: every request's max_tokens
  int block_size = 512;         // tokens per hash id (Mooncake's)
  std::uint64_t seed = 0;       // the synthesized prompts' text
  std::size_t max_requests = 0; // > 0: only the first N by arrival
  double before_ms = 0;         // > 0: only requests arriving before this
  long long max_tokens = 50'000'000;  // the selected prompts' input_length in all (about 200 MB of text), refused beyond
  bool need_times = true;       // false (a load of its own, not a replay): lines and sessions may lack timestamps
};
// The selected requests in arrival order (ties in file order; a session's later turns right after its first),
// prompts of exactly their input_length tokens of `tokenizer`. A session is selected whole: max_requests
// and before_ms count sessions by their first line (max_requests: whole sessions up to that many requests,
// at least one). Returns what it has when `should_stop` (polled per request) says so.
std::vector<TraceRequest> load_trace(const std::string& path, const Tokenizer& tokenizer, const TraceSelection& select,
                                     const std::function<bool()>& should_stop = {});

}  // namespace llmbench
