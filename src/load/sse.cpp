#include "llmbench/load/sse.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/base/utf8.h"

namespace llmbench {

void SseParser::feed(std::string_view bytes) {
  if (skip_lf_ && !bytes.empty()) {
    skip_lf_ = false;
    if (bytes.front() == '\n') bytes.remove_prefix(1);
  }
  while (!bytes.empty()) {
    // The line ends at the first CR or LF; a CR followed by LF ends it once.
    const char* lf = static_cast<const char*>(std::memchr(bytes.data(), '\n', bytes.size()));
    const std::size_t until = lf ? lf - bytes.data() : bytes.size();
    const char* cr = static_cast<const char*>(std::memchr(bytes.data(), '\r', until));
    const char* end = cr ? cr : lf;
    if (!end) {
      if (line_.size() + bytes.size() > kMaxSseEventBytes)
        throw Error(cat("SSE line longer than ", kMaxSseEventBytes, " bytes"));
      line_.append(bytes);
      return;
    }
    const std::size_t n = end - bytes.data();
    if (line_.empty()) {
      take_line(bytes.substr(0, n));
    } else {
      if (line_.size() + n > kMaxSseEventBytes) throw Error(cat("SSE line longer than ", kMaxSseEventBytes, " bytes"));
      line_.append(bytes.substr(0, n));
      std::string line = std::move(line_);
      line_.clear();
      take_line(line);
    }
    std::size_t eol = 1;
    if (*end == '\r') {
      if (n + 1 == bytes.size()) skip_lf_ = true;  // the LF, if any, comes with the next bytes
      else if (bytes[n + 1] == '\n') eol = 2;
    }
    bytes.remove_prefix(n + eol);
  }
}

void SseParser::take_line(std::string_view line) {
  if (first_line_) {
    first_line_ = false;
    if (line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
  }
  if (line.empty()) {  // end of event
    const bool error = error_field_ || type_ == "error";
    const bool message = type_.empty() || type_ == "message";
    error_field_ = false;
    type_.clear();
    if (has_data_) {
      has_data_ = false;
      std::string data = std::move(data_);
      data_.clear();
      if (error) {
        if (on_error_) on_error_(data);
      } else if (message) {
        on_event_(data);
      }
    }
    return;
  }
  if (line.front() == ':') return;  // comment
  const auto colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "event") {
    type_.assign(value.substr(0, 64));  // only "message" and "error" matter
    return;
  }
  // llama.cpp ends a failed stream with an `error: {...}` line: no SSE field, but an error event all the same.
  if (field == "error") error_field_ = true;
  else if (field != "data") return;
  if (data_.size() + value.size() + 1 > kMaxSseEventBytes)
    throw Error(cat("SSE event longer than ", kMaxSseEventBytes, " bytes"));
  if (has_data_) data_ += '\n';
  data_.append(value);
  has_data_ = true;
}

namespace {

// A token count of usage: a whole number (4.0 counts) in [0, 2^24] (the most --input-len and --output-len
// take), else none (negative, fractional, beyond it, a string: the server's count is not to be trusted, and
// the caller counts by itself).
constexpr double kMaxUsageTokens = 1 << 24;
std::optional<int> token_count(const nlohmann::json& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!(d >= 0 && d <= kMaxUsageTokens) || d != std::floor(d)) return std::nullopt;
  return static_cast<int>(d);
}

// A server's stage timing is kept only as a plain name (an HTTP token: letters, digits, !#$%&'*+-.^_`|~) with
// a duration in [0, 10^9] ms; anything else (bytes that are not text, a negative or endless time) is dropped.
constexpr double kMaxStageMs = 1e9;
bool plain_stage(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (unsigned char c : name)
    if (!std::isalnum(c) && !std::strchr("!#$%&'*+-.^_`|~", c)) return false;
  return true;
}
bool plain_ms(double ms) { return std::isfinite(ms) && ms >= 0 && ms <= kMaxStageMs; }

// Control characters (a line break, a tab) become one space; bytes that are not UTF-8 are dropped.
std::string message_line(std::string_view text, std::size_t max_bytes) {
  std::string out;
  bool space = false;
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = text[i];
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    // Well-formed (RFC 3629), not merely the right shape: no overlong forms, surrogates or code points above
    // U+10FFFF, which JSON writers refuse.
    if (n > 1 && (i + n > text.size() || !utf8::is_valid(text.substr(i, n)))) n = 0;
    if (n == 0) {  // not UTF-8: dropped
      ++i;
      continue;
    }
    if (n == 1 && (c < 0x20 || c == 0x7F)) {
      space = !out.empty();
      ++i;
      continue;
    }
    if (space && out.back() != ' ') {
      if (out.size() + 1 > max_bytes) break;
      out += ' ';
    }
    space = false;
    if (out.size() + n > max_bytes) {
      out += "...";
      break;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::string server_message(std::string_view body) {
  const nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  std::string text;
  if (!j.is_discarded() && j.is_object()) {
    auto str = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    const auto error = j.find("error"), message = j.find("message"), detail = j.find("detail");
    if (error != j.end() && !error->is_null()) {
      const auto m = error->is_object() ? error->find("message") : error->end();
      text = m != error->end() && m->is_string() ? m->get<std::string>() : str(*error);
    } else if (message != j.end() && !message->is_null()) {
      text = str(*message);
    } else if (detail != j.end() && !detail->is_null()) {
      text = str(*detail);
    } else {
      text = j.dump();
    }
  } else {
    const auto start = body.find_first_not_of(" \t\r\n");
    if (start != std::string_view::npos) body.remove_prefix(start);
    text = body.substr(0, body.find_first_of("\r\n"));
  }
  return message_line(text, kMaxServerMessageBytes);
}

StreamChunk parse_chunk(std::string_view data) {
  StreamChunk c;
  // "[DONE] " counts too: whitespace around the data (a server's stray space) is no part of it.
  const auto first = data.find_first_not_of(" \t\r\n");
  const std::string_view trimmed =
      first == std::string_view::npos ? std::string_view{} : data.substr(first, data.find_last_not_of(" \t\r\n") - first + 1);
  if (trimmed == "[DONE]") {
    c.done = true;
    return c;
  }
  nlohmann::json j = nlohmann::json::parse(data.begin(), data.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(cat("SSE data is not a JSON object: ", data.substr(0, 80)));
  // An error object: {"error": ...} (OpenAI, SGLang), {"object": "error", "message": ...} (vLLM), or
  // {"detail": ...} without choices (FastAPI's HTTPException).
  const auto object = j.find("object");
  if ((j.contains("error") && !j["error"].is_null()) || (object != j.end() && *object == "error") ||
      (j.contains("detail") && !j.contains("choices"))) {
    c.error = server_message(data);
    if (c.error.empty()) c.error = "(no message)";
    return c;
  }
  if (auto choices = j.find("choices"); choices != j.end() && choices->is_array() && !choices->empty()) {
    const auto& choice = (*choices)[0];
    bool has_text = false, marker = false;
    std::string reasoning;
    if (auto t = choice.find("text"); t != choice.end() && t->is_string()) {
      c.content = t->get<std::string>();
      has_text = true;
    }
    // A reasoning model's thinking (DeepSeek-R1: reasoning_content; newer vLLM: reasoning), before its answer.
    // One of the two: vLLM sends both, reasoning_content a copy of reasoning for older clients.
    auto take_reasoning = [&](const nlohmann::json& o) {
      for (const char* key : {"reasoning", "reasoning_content"})
        if (auto t = o.find(key); t != o.end() && t->is_string() && !t->get_ref<const std::string&>().empty()) {
          reasoning += t->get<std::string>();
          return;
        }
    };
    // A whole (non-streamed) chat response: choices[0].message.content.
    if (auto m = choice.find("message"); m != choice.end() && m->is_object()) {
      if (auto t = m->find("content"); t != m->end() && t->is_string()) {
        c.content = t->get<std::string>();
        has_text = true;
      }
      take_reasoning(*m);
    }
    if (auto d = choice.find("delta"); d != choice.end() && d->is_object()) {
      if (auto t = d->find("content"); t != d->end() && t->is_string()) {
        c.content = t->get<std::string>();
        has_text = true;
      }
      take_reasoning(*d);
      marker = d->contains("role");
    }
    if (auto f = choice.find("finish_reason"); f != choice.end() && !f->is_null()) marker = true;
    // Reasoning text is generated text too: an event carrying some is a token event, and its text is counted.
    c.token = (has_text && !(marker && c.content.empty())) || !reasoning.empty();
    c.content = reasoning + c.content;
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    if (auto p = u->find("prompt_tokens"); p != u->end()) c.prompt_tokens = token_count(*p);
    if (auto p = u->find("completion_tokens"); p != u->end()) c.completion_tokens = token_count(*p);
    if (auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object())
      if (auto k = d->find("cached_tokens"); k != d->end()) c.cached_tokens = token_count(*k);
  }
  if (auto t = j.find("llmbench_timing"); t != j.end() && t->is_object()) {
    for (const auto& [stage, ms] : t->items())
      if (ms.is_number() && plain_stage(stage) && plain_ms(ms.get<double>())) c.timing[stage] = ms.get<double>();
  }
  return c;
}

std::map<std::string, double> parse_server_timing(const std::string& header) {
  auto trim = [](std::string t) {
    const auto b = t.find_first_not_of(" \t"), e = t.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
  };
  std::map<std::string, double> out;
  std::size_t start = 0;
  while (start <= header.size()) {
    const std::size_t comma = std::min(header.find(',', start), header.size());
    const std::string entry = header.substr(start, comma - start);
    start = comma + 1;
    const std::size_t semi = entry.find(';');
    const std::string name = trim(entry.substr(0, semi));
    for (std::size_t at = semi; !name.empty() && at != std::string::npos;) {
      const std::size_t next = entry.find(';', at + 1);
      const std::string param = trim(entry.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
      at = next;
      if (param.rfind("dur=", 0) != 0) continue;
      char* end = nullptr;
      const std::string value = param.substr(4);
      // A plain decimal number (strtod alone would also take hex, "inf" and "nan").
      if (value.empty() || value.find_first_not_of("0123456789.eE+-") != std::string::npos) continue;
      const double ms = std::strtod(value.c_str(), &end);
      if (end == value.c_str() + value.size() && plain_stage(name) && plain_ms(ms)) out[name + "_ms"] = ms;
    }
  }
  return out;
}

std::vector<double> split_gaps(const std::vector<double>& gaps, const std::vector<int>& event_tokens, int output_tokens) {
  const int events = static_cast<int>(event_tokens.size());
  if (gaps.size() + 1 != event_tokens.size()) throw Error(cat("split_gaps: ", gaps.size(), " gaps for ", events, " events"));
  std::vector<std::int64_t> extra(events);
  for (int i = 0; i < events; ++i) extra[i] = std::max(event_tokens[i] - 1, 0);
  const std::int64_t total_extra = std::accumulate(extra.begin(), extra.end(), std::int64_t{0});
  if (output_tokens <= events || total_extra == 0) return gaps;
  // A count far above what the text holds (hidden reasoning tokens, or a server whose usage is wrong) says
  // nothing about how the visible events were spaced, and splitting by it would make up to 2^24 ITLs of one
  // request: the gaps as they are.
  const std::int64_t counted = events + total_extra;
  if (output_tokens > kMaxSplitOverText * counted) return gaps;
  // Largest remainder: each event's share of the tokens to give out, floored; the rest one each to the
  // events with the largest remainders.
  const std::int64_t give = output_tokens - events;
  std::vector<int> tokens(events, 1);
  std::vector<std::int64_t> remainder(events);
  std::int64_t left = give;
  for (int i = 0; i < events; ++i) {
    tokens[i] += static_cast<int>(give * extra[i] / total_extra);
    remainder[i] = give * extra[i] % total_extra;
    left -= give * extra[i] / total_extra;
  }
  std::vector<int> order(events);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return remainder[a] > remainder[b]; });
  for (int i = 0; i < left; ++i) ++tokens[order[i]];
  std::vector<double> itl;
  for (int i = 1; i < events; ++i)
    for (int j = 0; j < tokens[i]; ++j) itl.push_back(gaps[i - 1] / tokens[i]);
  return itl;
}

double measure_parse_rate(int events) {
  // A vLLM-like completions chunk, delivered in reads of 4 KiB that split events anywhere.
  const std::string event =
      "data: {\"id\":\"cmpl-0123456789abcdef\",\"object\":\"text_completion\",\"created\":1700000000,"
      "\"model\":\"tiny\",\"choices\":[{\"index\":0,\"text\":\" token\",\"logprobs\":null,"
      "\"finish_reason\":null,\"stop_reason\":null}],\"usage\":null}\n\n";
  std::string stream;
  stream.reserve(event.size() * events);
  for (int i = 0; i < events; ++i) stream += event;
  std::size_t seen = 0, chars = 0;
  SseParser parser([&](std::string_view data) {
    chars += parse_chunk(data).content.size();
    ++seen;
  });
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t at = 0; at < stream.size(); at += 4096)
    parser.feed(std::string_view(stream).substr(at, 4096));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (seen != static_cast<std::size_t>(events) || chars != 6u * events) throw Error("SSE self-measurement miscounted");
  return s > 0 ? seen / s : 0;
}

}  // namespace llmbench
