#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmbench {

// The longest SSE line, and the most data of one event, a stream may send: beyond it the request fails
// (a line that never ends would otherwise grow without bound). A 10 MB event still passes.
constexpr std::size_t kMaxSseEventBytes = 16u << 20;

// Incremental Server-Sent Events parser: feed() takes bytes as they arrive, split anywhere, and
// calls on_event with the data of every complete message event ("data:" lines joined by '\n'): one
// without an `event:` field or with `event: message`. Events of another type (sse-starlette's `event: ping`
// keep-alives) are skipped, as the SSE spec says, except `event: error` (TGI) and events with an `error:`
// line (llama.cpp's way to end a failed stream; its value is taken as a data line), which go to on_error
// (dropped without one). Comments, `id:` and `retry:` fields are skipped; CRLF, LF and CR line ends all
// work. feed() throws Error when a line or an event's data passes kMaxSseEventBytes.
class SseParser {
 public:
  using Handler = std::function<void(std::string_view data)>;
  explicit SseParser(Handler on_event, Handler on_error = {})
      : on_event_(std::move(on_event)), on_error_(std::move(on_error)) {}

  void feed(std::string_view bytes);
  // Bytes held back waiting for the end of a line or event (a stream that ends here was cut short).
  bool pending() const { return !line_.empty() || has_data_; }

 private:
  void take_line(std::string_view line);

  Handler on_event_, on_error_;
  std::string line_;   // the unfinished line
  std::string data_;   // data of the unfinished event
  bool has_data_ = false;
  bool error_field_ = false;  // the unfinished event has an `error:` line
  std::string type_;          // the unfinished event's `event:` field ("": message)
  bool skip_lf_ = false;  // the last line ended with CR: a LF right after it belongs to that line end
  bool first_line_ = true;  // a UTF-8 byte order mark before it is dropped, as the SSE standard says
};

// One OpenAI streaming chunk (the data of one SSE event) as the load client needs it.
struct StreamChunk {
  bool done = false;              // the "[DONE]" sentinel (whitespace around it allowed)
  std::string content;            // text delta: choices[0].text, choices[0].delta.content, or a whole
                                  // non-streamed response's choices[0].message.content; preceded by the
                                  // reasoning text of delta/message .reasoning_content or .reasoning
  // A token event: choices[0] carries that text field, even "" (a token that decodes to nothing), except
  // chat's role announcement ({"role": …, "content": ""}) and a finish marker (finish_reason set, text "").
  // Role-only, usage-only and finish-only chunks without the field are none either. An event with non-empty
  // reasoning text is one whatever its content field (DeepSeek-R1 sends "content": null with it).
  bool token = false;
  // usage, when present as a whole number (4.0 counts) in [0, INT_MAX]; anything else counts as absent.
  std::optional<int> prompt_tokens;
  std::optional<int> completion_tokens;
  // usage.prompt_tokens_details.cached_tokens (OpenAI's field; vLLM with --enable-prompt-tokens-details
  // and other servers): the prompt tokens the server's prefix cache held, under the same rules.
  std::optional<int> cached_tokens;
  std::map<std::string, double> timing;  // llmbench_timing, when present (ms per stage)
  std::string error;              // the chunk is an error object: its server_message (never "" then)
};

// The most of a server's error message kept (in bytes; longer ones end in "...").
constexpr std::size_t kMaxServerMessageBytes = 200;

// A server's error message from an error body or event: a JSON object's error.message, error (a string),
// message or detail (others as compact JSON), else the text's first non-empty line; as one line (control
// characters become a space, bytes that are not UTF-8 are dropped) of at most kMaxServerMessageBytes.
std::string server_message(std::string_view body);

// Parses the data of one event; throws Error when it is neither "[DONE]" nor a JSON object.
StreamChunk parse_chunk(std::string_view data);

// A Server-Timing header ("queue;dur=1.5, prefill;dur=3.2;desc=x"): each entry whose name is an HTTP token
// and whose dur is a decimal number of ms in [0, 10^9], as NAME_ms (the keys of llmbench_timing); other
// entries are skipped, never an error. llmbench_timing entries are held to the same rule.
std::map<std::string, double> parse_server_timing(const std::string& header);

// Inter-token latencies of one streamed response from the gaps between its content events (gaps[i]: event i
// to event i + 1). `event_tokens[i]` is the tokenizer's count of event i's text; `output_tokens` the
// response's count (usage, tokenizer or events). Every event is one token; the output_tokens - events
// tokens beyond those go to the events in proportion to their tokenizer tokens beyond one (largest
// remainder, ties to the earlier event). An event after the first with k tokens gives k gaps of 1/k of its
// gap, so there are at most output_tokens - 1 of them and they sum to the first-to-last-event time. When
// output_tokens is at most the events, or no event has more than one tokenizer token, or output_tokens is
// more than kMaxSplitOverText times the tokenizer's count of the text (events + their tokens beyond one),
// the gaps as they are.
constexpr int kMaxSplitOverText = 4;
std::vector<double> split_gaps(const std::vector<double>& gaps, const std::vector<int>& event_tokens, int output_tokens);

// SSE events of a synthetic completions stream that the client can parse per second on one core
// (SseParser + parse_chunk over `events` events). The client's own overhead, reported in results.
double measure_parse_rate(int events = 20000);

}  // namespace llmbench
