#include "llmbench/load/dataset.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/load/draw.h"
#include "llmbench/stats/stats.h"
#include "llmbench/tokenizer/tokenizer.h"
#include "llmbench/base/utf8.h"

namespace llmbench {

using nlohmann::json;

DatasetSpec parse_dataset(const std::string& text) {
  DatasetSpec d;
  if (text == "synthetic") return d;
  for (const std::string kind : {"sharegpt", "jsonl", "trace"}) {
    if (text.rfind(kind + ":", 0) == 0 && text.size() > kind.size() + 1) {
      d.kind = kind;
      d.path = text.substr(kind.size() + 1);
      return d;
    }
  }
  throw UsageError(cat("--dataset '", text, "': expected synthetic, sharegpt:FILE, jsonl:FILE or trace:FILE"));
}

std::pair<int, int> length_range(int length, double range_ratio) {
  if (range_ratio <= 0) return {length, length};
  const int lo = std::max(1, static_cast<int>(length * (1 - range_ratio)));
  const int hi = std::max(lo, static_cast<int>(length * (1 + range_ratio)));
  return {lo, hi};
}

namespace {

// `head` (exactly `head_tokens` tokens) followed by random plain-text ids (or, without a head, `start`
// when given), adjusted until the whole re-encodes to exactly head_tokens + len tokens; "" when 50
// attempts cannot get there. Only the tail changes, so every text starts with `head`; with no head this is
// the plain cut-or-extend loop, which keeps the start of `start` (cut or extended at its end).
std::string exact_text(const Tokenizer& tokenizer, const std::string& head, std::size_t head_tokens, std::size_t len,
                       const std::function<TokenId()>& random_id, std::vector<TokenId> start = {}) {
  const std::size_t target = head_tokens + len;
  std::vector<TokenId> ids = std::move(start);
  if (ids.empty()) {
    ids.resize(len);
    for (auto& id : ids) id = random_id();
  }
  for (int attempt = 0; attempt < 50; ++attempt) {
    const std::string tail = tokenizer.decode(ids, true);
    const std::string text = head + tail;
    const std::size_t count = tokenizer.encode(text, false).size();
    if (count == target) return text;
    ids = head.empty() ? tokenizer.encode(text, false) : tokenizer.encode(tail, false);
    if (count > target) {
      // Cut, decode again: merges at the cut may change the count once more.
      ids.resize(ids.size() > count - target ? ids.size() - (count - target) : 0);
    } else {
      for (std::size_t k = count; k < target; ++k) ids.push_back(random_id());
    }
  }
  return "";
}

// Ids whose text is printable ASCII: any cut of their concatenation is still valid text, so decoding
// and re-encoding cannot drift through U+FFFD replacements. Uniform over [3, 0.95 vocab) otherwise.
std::vector<TokenId> plain_text_ids(const Tokenizer& tokenizer) {
  const std::size_t vocab = tokenizer.vocab_size();
  const std::size_t lo = 3, hi = std::max<std::size_t>(lo + 1, static_cast<std::size_t>(0.95 * vocab));
  std::vector<TokenId> candidates;
  for (std::size_t id = lo; id < hi; ++id) {
    const std::string piece = tokenizer.decode({static_cast<TokenId>(id)}, true);
    if (!piece.empty() && std::all_of(piece.begin(), piece.end(), [](char c) { return c >= 0x20 && c < 0x7f; }))
      candidates.push_back(static_cast<TokenId>(id));
  }
  if (candidates.empty()) throw Error(cat("tokenizer ", tokenizer.info().source, " has no plain-text tokens for prompts"));
  return candidates;
}

}  // namespace

std::vector<LoadPrompt> synthetic_prompts(const Tokenizer& tokenizer, int n, int input_len, int output_len,
                                          std::uint64_t seed, const std::function<bool()>& should_stop,
                                          double range_ratio, int prefix_len) {
  const std::vector<TokenId> candidates = plain_text_ids(tokenizer);
  std::mt19937_64 rng(seed);
  const std::function<TokenId()> random_id = [&] { return candidates[uniform_index(rng, candidates.size())]; };
  // The shared prefix and the lengths come from streams of their own: without them the prompts are
  // exactly those of before.
  std::string prefix;
  if (prefix_len > 0) {
    std::mt19937_64 prefix_rng(seed ^ 0x2545f4914f6cdd1dULL);
    prefix = exact_text(tokenizer, "", 0, static_cast<std::size_t>(prefix_len),
                        [&] { return candidates[uniform_index(prefix_rng, candidates.size())]; });
    if (prefix.empty())
      throw Error(cat("cannot make a prefix of exactly ", prefix_len, " tokens with tokenizer ", tokenizer.info().source));
  }
  std::mt19937_64 length_rng(seed ^ 0x9e3779b97f4a7c15ULL);
  const auto [in_lo, in_hi] = length_range(input_len, range_ratio);
  const auto [out_lo, out_hi] = length_range(output_len, range_ratio);
  auto draw = [&](int lo, int hi) { return lo + static_cast<int>(uniform_index(length_rng, static_cast<std::size_t>(hi - lo) + 1)); };
  std::vector<LoadPrompt> out;
  for (int i = 0; i < n && !(should_stop && should_stop()); ++i) {
    const int this_input = range_ratio > 0 ? draw(in_lo, in_hi) : input_len;
    const int this_output = range_ratio > 0 ? draw(out_lo, out_hi) : output_len;
    const std::string text = exact_text(tokenizer, prefix, static_cast<std::size_t>(std::max(prefix_len, 0)),
                                        static_cast<std::size_t>(this_input), random_id);
    if (text.empty())
      throw Error(cat("cannot make a prompt of exactly ", this_input, " tokens", prefix_len > 0 ? cat(" after the prefix of ", prefix_len) : "",
                      " with tokenizer ", tokenizer.info().source));
    out.push_back({text, std::max(prefix_len, 0) + this_input, this_output, ""});
  }
  return out;
}

namespace {

json parse_json_file(const std::string& path, const std::string& what) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) {
    throw UsageError(cat(what, ": ", e.what()));
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw UsageError(cat(what, " ", path, ": not valid JSON"));
  return j;
}

int count_tokens(const Tokenizer& tokenizer, const std::string& text) {
  return static_cast<int>(tokenizer.encode(text, false).size());
}

}  // namespace

std::vector<LoadPrompt> load_sharegpt(const std::string& path, const Tokenizer& tokenizer, int output_len) {
  const json j = parse_json_file(path, "ShareGPT dataset");
  if (!j.is_array()) throw UsageError(cat("ShareGPT dataset ", path, ": expected a JSON array of conversations"));
  std::vector<LoadPrompt> out;
  for (const auto& entry : j) {
    if (!entry.is_object() || !entry.contains("conversations") || !entry["conversations"].is_array()) continue;
    const auto& turns = entry["conversations"];
    if (turns.size() < 2 || !turns[0].is_object() || !turns[1].is_object()) continue;
    const auto prompt = turns[0].find("value"), reply = turns[1].find("value");
    if (prompt == turns[0].end() || reply == turns[1].end() || !prompt->is_string() || !reply->is_string()) continue;
    LoadPrompt p;
    p.text = prompt->get<std::string>();
    if (p.text.empty()) continue;
    p.prompt_tokens = count_tokens(tokenizer, p.text);
    p.output_len = output_len > 0 ? output_len : count_tokens(tokenizer, reply->get<std::string>());
    if (p.output_len < 1) continue;
    out.push_back(std::move(p));
  }
  if (out.empty()) throw UsageError(cat("ShareGPT dataset ", path, ": no conversation with a prompt and a reply"));
  return out;
}

std::vector<LoadPrompt> load_jsonl(const std::string& path, const Tokenizer& tokenizer, int output_len) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) {
    throw UsageError(cat("JSONL dataset: ", e.what()));
  }
  std::istringstream in(text);
  std::string line;
  std::vector<LoadPrompt> out;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto bad = [&](const std::string& why) { return UsageError(cat(path, ":", number, ": ", why)); };
    if (const std::size_t at = utf8::first_invalid(line); at != line.size())
      throw bad(cat("invalid UTF-8 at byte ", at + 1, " of the line"));
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw bad("not a JSON object");
    if (!j.contains("prompt") || !j["prompt"].is_string() || j["prompt"].get<std::string>().empty())
      throw bad("\"prompt\" must be a non-empty string");
    LoadPrompt p;
    p.text = j["prompt"].get<std::string>();
    p.prompt_tokens = count_tokens(tokenizer, p.text);
    if (output_len > 0) {
      p.output_len = output_len;
    } else {
      const auto n = j.find("output_len");
      if (n == j.end() || !n->is_number_integer() || n->get<double>() < 1 || n->get<double>() > kMaxJsonlOutputLen)
        throw bad(cat("\"output_len\" must be an integer in [1, ", kMaxJsonlOutputLen, "] (or give --output-len)"));
      p.output_len = n->get<int>();
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) throw UsageError(cat("JSONL dataset ", path, ": no prompts"));
  return out;
}

namespace {

constexpr double kMaxTraceMs = 1e9;          // timestamps (11.6 days)
constexpr long long kMaxTraceInput = 1 << 24;  // input_length (16.8 M tokens)

// One line of a trace as written, before any prompt is made.
struct TraceLine {
  int number = 0;
  double timestamp_ms = 0;
  long long input_length = 0;            // 0: `text` is the prompt
  std::string text;
  int output_len = 0;
  std::vector<std::uint64_t> hash_ids;
  std::string extra;  // compact JSON object, "" when none
  std::string messages;  // compact JSON array, "" when the line gives a prompt
  std::optional<std::string> session;  // "session_id" as JSON text
  bool delta = false;  // "message_mode": "delta": the messages are the turn's new ones only
  bool timed = false;  // has a timestamp
  double delay_ms = 0;
};

TraceLine parse_trace_line(const std::string& path, int number, const std::string& line, int output_len, int block_size,
                           bool need_times) {
  auto bad = [&](const std::string& why) { return UsageError(cat(path, ":", number, ": ", why)); };
  if (const std::size_t at = utf8::first_invalid(line); at != line.size())
    throw bad(cat("invalid UTF-8 at byte ", at + 1, " of the line"));
  const json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw bad("not a JSON object");
  TraceLine t;
  t.number = number;
  if (const auto s = j.find("session_id"); s != j.end() && !s->is_null()) {
    if (!s->is_string() && !s->is_number_integer()) throw bad("\"session_id\" must be a string or an integer");
    t.session = s->dump();
  }
  if (const auto m = j.find("message_mode"); m != j.end() && !m->is_null()) {
    if (!m->is_string() || (m->get<std::string>() != "history" && m->get<std::string>() != "delta"))
      throw bad("\"message_mode\" must be \"history\" (messages sent as they are) or \"delta\" (a turn's new messages)");
    t.delta = m->get<std::string>() == "delta";
    if (t.delta && !j.contains("messages")) throw bad("\"message_mode\": \"delta\" is for a line with \"messages\"");
  }
  const auto ts = j.find("timestamp");
  if (ts != j.end() && !ts->is_null()) {
    if (!ts->is_number() || !(ts->get<double>() >= 0 && ts->get<double>() <= kMaxTraceMs))
      throw bad(cat("\"timestamp\" must be a number of milliseconds in [0, ", shown(kMaxTraceMs), "]"));
    t.timestamp_ms = ts->get<double>();
    t.timed = true;
  }
  // Whether a line without a timestamp may be is known once its session is (a later turn may).
  if (need_times && !t.timed && !t.session)
    throw bad(cat("\"timestamp\" must be a number of milliseconds in [0, ", shown(kMaxTraceMs), "]"));
  if (const auto d = j.find("delay"); d != j.end() && !d->is_null()) {
    if (!t.session) throw bad("\"delay\" is for a later line of a session (\"session_id\")");
    if (!d->is_number() || !(d->get<double>() >= 0 && d->get<double>() <= kMaxTraceMs))
      throw bad(cat("\"delay\" must be a number of milliseconds in [0, ", shown(kMaxTraceMs), "]"));
    t.delay_ms = d->get<double>();
  }
  const auto len = j.find("input_length");
  std::vector<std::string> texts;
  for (const char* key : {"prompt", "text_input", "messages"})
    if (j.contains(key)) texts.push_back(key);
  if ((len != j.end()) + texts.size() != 1)
    throw bad("give exactly one of \"input_length\", \"prompt\", \"text_input\" and \"messages\"");
  if (texts.size() == 1 && texts[0] == "messages") {
    const json& m = j["messages"];
    bool ok = m.is_array() && !m.empty();
    for (const auto& message : ok ? m : json::array())
      ok = ok && message.is_object() && message.contains("role") && message["role"].is_string() && message.contains("content") &&
           (message["content"].is_string() || message["content"].is_array() || message["content"].is_null());
    if (!ok)
      throw bad("\"messages\" must be a non-empty array of {\"role\": string, \"content\": string, array or null}");
    t.messages = m.dump();
  } else if (len != j.end()) {
    if (!len->is_number_integer() || len->get<double>() < 1 || len->get<double>() > kMaxTraceInput)
      throw bad(cat("\"input_length\" must be an integer in [1, ", kMaxTraceInput, "]"));
    t.input_length = len->get<long long>();
  } else {
    const json& text = j[texts[0]];
    if (!text.is_string() || text.get<std::string>().empty()) throw bad(cat("\"", texts[0], "\" must be a non-empty string"));
    t.text = text.get<std::string>();
  }
  if (const auto h = j.find("hash_ids"); h != j.end()) {
    if (t.input_length == 0) throw bad("\"hash_ids\" describe a prompt made from \"input_length\", not a given text");
    if (!h->is_array()) throw bad("\"hash_ids\" must be an array of integers >= 0");
    for (const auto& id : *h) {
      if (!id.is_number_unsigned()) throw bad("\"hash_ids\" must be an array of integers >= 0");
      t.hash_ids.push_back(id.get<std::uint64_t>());
    }
    const long long blocks = (t.input_length + block_size - 1) / block_size;
    if (static_cast<long long>(t.hash_ids.size()) != blocks)
      throw bad(cat("\"input_length\" ", t.input_length, " is ", blocks, " block", blocks == 1 ? "" : "s", " of ", block_size,
                    " tokens, but \"hash_ids\" has ", t.hash_ids.size(), " (--trace-block-size)"));
  }
  if (const auto e = j.find("extra"); e != j.end()) {
    if (!e->is_object()) throw bad("\"extra\" must be a JSON object (merged into the request body)");
    for (const char* key : {"model", "prompt", "messages", "stream"})
      if (e->contains(key)) throw bad(cat("\"extra\" may not set \"", key, "\" (llmbench load sets it)"));
    if (!e->empty()) t.extra = e->dump();
  }
  if (output_len > 0) {
    t.output_len = output_len;
  } else {
    const auto n = j.find("output_length");
    if (n == j.end() || !n->is_number_integer() || n->get<double>() < 1 || n->get<double>() > kMaxJsonlOutputLen)
      throw bad(cat("\"output_length\" must be an integer in [1, ", kMaxJsonlOutputLen, "] (or give --output-len)"));
    t.output_len = n->get<int>();
  }
  return t;
}

// Independent random streams from (seed, purpose, id).
std::mt19937_64 stream_of(std::uint64_t seed, std::uint64_t purpose, std::uint64_t id) {
  return std::mt19937_64(splitmix64(seed ^ splitmix64(purpose ^ splitmix64(id))));
}

}  // namespace

std::vector<TraceRequest> load_trace(const std::string& path, const Tokenizer& tokenizer, const TraceSelection& select,
                                     const std::function<bool()>& should_stop) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) {
    throw UsageError(cat("trace: ", e.what()));
  }
  std::vector<TraceLine> lines;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number)
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      lines.push_back(parse_trace_line(path, number, line, select.output_len, select.block_size, select.need_times));
  if (lines.empty()) throw UsageError(cat("trace ", path, ": no requests"));
  // Units of the schedule: a session's lines (in file order) or a line alone, each starting at its first
  // line's timestamp.
  std::vector<std::vector<TraceLine>> units;
  std::unordered_map<std::string, std::size_t> unit_of;
  for (auto& l : lines) {
    if (!l.session) {
      units.push_back({std::move(l)});
      continue;
    }
    const auto [it, fresh] = unit_of.emplace(*l.session, units.size());
    if (fresh) units.emplace_back();
    auto& unit = units[it->second];
    auto bad = [&](const std::string& why) { return UsageError(cat(path, ":", l.number, ": session ", *l.session, ": ", why)); };
    if (unit.empty() && !l.timed && select.need_times) throw bad("its first line needs a \"timestamp\" (when the session starts)");
    if (!unit.empty() && unit.front().messages.empty() != l.messages.empty())
      throw bad("its lines all give \"messages\" or none do");
    if (!unit.empty() && unit.front().delta != l.delta) throw bad("its lines all have \"message_mode\": \"delta\" or none do");
    unit.push_back(std::move(l));
  }
  std::stable_sort(units.begin(), units.end(), [](const auto& a, const auto& b) { return a.front().timestamp_ms < b.front().timestamp_ms; });
  const double origin = units.front().front().timestamp_ms;
  std::size_t keep = 0, requests = 0;
  for (const auto& unit : units) {
    if (select.before_ms > 0 && unit.front().timestamp_ms >= origin + select.before_ms) break;
    if (select.max_requests > 0 && keep > 0 && requests + unit.size() > select.max_requests) break;
    ++keep;
    requests += unit.size();
  }
  units.resize(keep);
  long long tokens = 0;
  for (const auto& unit : units)
    for (const auto& l : unit) tokens += l.input_length;
  if (tokens > select.max_tokens)
    throw UsageError(cat("trace ", path, ": the ", requests, " requests replayed have ", tokens, " prompt tokens, more than ",
                         select.max_tokens, " (fewer with --num-requests or --duration)"));

  const std::vector<TokenId> candidates = plain_text_ids(tokenizer);
  auto ids_from = [&candidates](std::mt19937_64& rng) {
    return std::function<TokenId()>([&candidates, r = &rng] { return candidates[uniform_index(*r, candidates.size())]; });
  };
  enum : std::uint64_t { kBlock = 1, kUnique = 2, kExtend = 3 };
  const auto block_len = static_cast<std::size_t>(select.block_size);
  std::unordered_map<std::uint64_t, std::string> blocks;  // hash id -> its text of exactly block_size tokens
  auto block_text = [&](std::uint64_t hash, int number) -> const std::string& {
    auto it = blocks.find(hash);
    if (it != blocks.end()) return it->second;
    std::mt19937_64 rng = stream_of(select.seed, kBlock, hash);
    std::string t = exact_text(tokenizer, "", 0, block_len, ids_from(rng));
    if (t.empty()) throw UsageError(cat(path, ":", number, ": cannot make a block of exactly ", block_len, " tokens"));
    return blocks.emplace(hash, std::move(t)).first->second;
  };

  std::vector<TraceRequest> out;
  out.reserve(requests);
  int sessions = 0;
  for (const auto& unit : units) {
    const int session = unit.front().session ? sessions++ : -1;
    for (std::size_t turn = 0; turn < unit.size(); ++turn) {
      const TraceLine& l = unit[turn];
      if (should_stop && should_stop()) return out;
      TraceRequest r;
      r.arrival_ms = l.timed ? std::max(0.0, l.timestamp_ms - origin) : 0;
      r.session = session;
      r.turn = session >= 0 ? static_cast<int>(turn) + 1 : 0;
      r.timed = l.timed;
      r.delay_ms = l.delay_ms;
      r.messages = l.messages;
      r.delta = l.delta;
      r.prompt.output_len = l.output_len;
      r.prompt.extra = l.extra;
      if (!l.messages.empty()) {
        std::string contents;  // for a token count (the server's chat template adds its own)
        for (const auto& m : json::parse(l.messages))
          if (m["content"].is_string()) contents += m["content"].get<std::string>();
        r.prompt.prompt_tokens = count_tokens(tokenizer, contents);
      } else if (l.input_length == 0) {
        r.prompt.text = l.text;
        r.prompt.prompt_tokens = count_tokens(tokenizer, l.text);
      } else {
        // The blocks' texts one after another, cut at the end (or, where seams merged tokens, extended) until
        // the whole has exactly input_length tokens: each prompt is a prefix of its blocks' text, whatever
        // the seams do to the count.
        std::string blocks_text;
        for (const std::uint64_t hash : l.hash_ids) blocks_text += block_text(hash, l.number);
        std::mt19937_64 rng = l.hash_ids.empty() ? stream_of(select.seed, kUnique, static_cast<std::uint64_t>(l.number))
                                                 : stream_of(select.seed, kExtend, l.hash_ids.back());
        std::vector<TokenId> start;
        if (!blocks_text.empty()) {
          start = tokenizer.encode(blocks_text, false);
          start.resize(std::min<std::size_t>(start.size(), static_cast<std::size_t>(l.input_length)));
        }
        r.prompt.text = exact_text(tokenizer, "", 0, static_cast<std::size_t>(l.input_length), ids_from(rng), std::move(start));
        if (r.prompt.text.empty())
          throw UsageError(cat(path, ":", l.number, ": cannot make a prompt of exactly ", l.input_length, " tokens with tokenizer ",
                               tokenizer.info().source));
        r.prompt.prompt_tokens = static_cast<int>(l.input_length);
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace llmbench
