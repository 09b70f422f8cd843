#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace llmbench {

// Incremental Server-Sent Events parser: feed() takes bytes as they arrive, split anywhere, and
// calls on_event with the data of every complete event ("data:" lines joined by '\n'). Comments,
// `event:`, `id:` and `retry:` fields are skipped; CRLF and LF line ends both work.
class SseParser {
 public:
  using Handler = std::function<void(std::string_view data)>;
  explicit SseParser(Handler on_event) : on_event_(std::move(on_event)) {}

  void feed(std::string_view bytes);
  // Bytes held back waiting for the end of a line or event (a stream that ends here was cut short).
  bool pending() const { return !line_.empty() || has_data_; }

 private:
  void take_line(std::string_view line);

  Handler on_event_;
  std::string line_;   // the unfinished line
  std::string data_;   // data of the unfinished event
  bool has_data_ = false;
};

// One OpenAI streaming chunk (the data of one SSE event) as the load client needs it.
struct StreamChunk {
  bool done = false;              // the "[DONE]" sentinel
  std::string content;            // text delta: choices[0].text or choices[0].delta.content
  // A token event: choices[0] carries that text field, even "" (a token that decodes to nothing), except
  // chat's role announcement ({"role": …, "content": ""}) and a finish marker (finish_reason set, text "").
  // Role-only, usage-only and finish-only chunks without the field are none either.
  bool token = false;
  std::optional<int> prompt_tokens;      // usage, when present
  std::optional<int> completion_tokens;
  std::map<std::string, double> timing;  // llmbench_timing, when present (ms per stage)
  std::string error;              // the chunk is an {"error": ...} object
};

// Parses the data of one event; throws Error when it is neither "[DONE]" nor a JSON object.
StreamChunk parse_chunk(std::string_view data);

// SSE events of a synthetic completions stream that the client can parse per second on one core
// (SseParser + parse_chunk over `events` events). The client's own overhead, reported in results.
double measure_parse_rate(int events = 20000);

}  // namespace llmbench
