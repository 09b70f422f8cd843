// libFuzzer: what the load client does with a response body (src/load/client.cpp's Exchange, without the
// socket). Streamed: the bytes go to SseParser in chunks cut at points the input picks, every message event to
// parse_chunk and every error event to server_message, and the content events' gaps to split_gaps, as the
// client does; a whole (non-streamed) response: parse_chunk + server_message on all of it; and the bytes as a
// Server-Timing header. The client turns an Error of feed() into event_too_large and one of parse_chunk() into
// malformed_sse / malformed_json, so Error is a clean refusal; anything else escaping, a crash or a hang is a bug.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/load/sse.h"
#include "llmbench/base/utf8.h"

namespace {

// A server's message goes into the results JSON (error_detail) and onto the terminal: one short line of UTF-8.
void check_message(const std::string& m) {
  if (m.size() > llmbench::kMaxServerMessageBytes + 3 || !llmbench::utf8::is_valid(m)) __builtin_trap();
  for (unsigned char c : m)
    if (c < 0x20 || c == 0x7F) __builtin_trap();
}

// The client's view of one streamed response: stops at the first failure, ignores events after [DONE].
struct Stream {
  bool failed = false, done = false;
  std::vector<int> event_tokens;  // per content event: its text's length stands in for the tokenizer's count
  std::optional<int> usage;

  void on_event(std::string_view data) {
    if (failed || done) return;
    llmbench::StreamChunk c;
    try {
      c = llmbench::parse_chunk(data);
    } catch (const llmbench::Error&) {
      failed = true;  // malformed_sse
      return;
    }
    if (c.done) {
      done = true;
      return;
    }
    if (!c.error.empty()) {
      check_message(c.error);
      failed = true;  // server_error
      return;
    }
    if (c.completion_tokens) usage = c.completion_tokens;
    for (const auto& [stage, ms] : c.timing)
      if (!(ms >= 0 && ms <= 1e9)) __builtin_trap();
    if (c.token) event_tokens.push_back(static_cast<int>(c.content.size() % 8));
  }
  void on_error(std::string_view data) {
    if (failed || done) return;
    check_message(llmbench::server_message(data));
    failed = true;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);

  // Streamed. The chunk lengths come from the input's own bytes (1 to 16, then the next byte), so splits
  // land anywhere, CR|LF and inside the byte order mark included.
  Stream s;
  llmbench::SseParser parser([&](std::string_view d) { s.on_event(d); }, [&](std::string_view d) { s.on_error(d); });
  try {
    for (std::size_t at = 0, k = 0; at < in.size() && !s.failed && !s.done;) {
      const std::size_t n = 1 + static_cast<unsigned char>(in[k++ % in.size()]) % 16;
      parser.feed(in.substr(at, n));
      at += n;
    }
    parser.pending();
  } catch (const llmbench::Error&) {
    s.failed = true;  // event_too_large
  }
  if (!s.failed && !s.event_tokens.empty()) {
    const std::vector<double> gaps(s.event_tokens.size() - 1, 1.0);
    const int events = static_cast<int>(s.event_tokens.size());
    const int output = s.usage && *s.usage >= events ? std::min(*s.usage, 4 * events + 64) : events;
    const std::vector<double> itl = llmbench::split_gaps(gaps, s.event_tokens, output);
    if (itl.size() > static_cast<std::size_t>(std::max(output - 1, events - 1))) __builtin_trap();
    double sum = 0;
    for (double g : itl) sum += g;
    if (std::abs(sum - (events - 1)) > 1e-6 * events) __builtin_trap();  // they span first to last event
  }

  // A whole response: one JSON object (the client refuses [DONE] there as malformed_json).
  try {
    llmbench::parse_chunk(in);
  } catch (const llmbench::Error&) {
  }
  check_message(llmbench::server_message(in));
  for (const auto& [stage, ms] : llmbench::parse_server_timing(std::string(in)))
    if (!(ms >= 0 && ms <= 1e9)) __builtin_trap();
  return 0;
}
