#include "llmbench/serve/openai.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

namespace llmbench::serve {

using nlohmann::json;

namespace {

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

ApiError wrong_type(const std::string& param, const char* want, const json& got) {
  return bad_request(param, cat("'", param, "' must be ", want, ", got ", type_name(got)), "invalid_type");
}

// The field `name` of `body`, or null when absent; JSON null counts as absent (OpenAI's clients send it).
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

bool get_bool(const json& body, const char* name, bool fallback) {
  const json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_boolean()) throw wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::optional<double> get_number(const json& body, const char* name, double lo, double hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw wrong_type(name, "a number", *v);
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) {
    char got[32];
    std::snprintf(got, sizeof got, "%.10g", x);  // 2.0000001, not the 6 digits of "2"
    throw bad_request(name, cat("'", name, "' must be in [", lo, ", ", hi, "], got ", got));
  }
  return x;
}

std::optional<std::int64_t> get_integer(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (v->is_number_float()) {
    const double x = v->get<double>();
    if (x == std::floor(x) && std::abs(x) < 9e15) return static_cast<std::int64_t>(x);  // 16.0
    if (x == std::floor(x)) throw bad_request(name, cat("'", name, "' is out of range"));  // 1e20: whole, too large
  }
  if (!v->is_number_integer()) throw wrong_type(name, "an integer", *v);
  if (v->is_number_unsigned() && v->get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    throw bad_request(name, cat("'", name, "' is out of range"));
  return v->get<std::int64_t>();
}

std::vector<std::int64_t> token_ids(const json& array, const std::string& param) {
  std::vector<std::int64_t> ids;
  ids.reserve(array.size());
  for (const json& id : array) {
    if (!id.is_number_integer()) throw wrong_type(param, "a string or an array of token ids", id);
    if (id.is_number_unsigned() && id.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
      throw bad_request(param, cat("token id ", id.get<std::uint64_t>(), " is outside the vocabulary"));
    ids.push_back(id.get<std::int64_t>());
  }
  return ids;
}

void parse_prompt(const json& body, CompletionRequest& r) {
  const json* p = field(body, "prompt");
  if (!p) throw bad_request("prompt", "'prompt' is required", "missing_field");
  if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
    return;
  }
  if (!p->is_array()) throw wrong_type("prompt", "a string or an array of token ids", *p);
  // A batch (several strings or id lists) would need n prompts per request: one only.
  if (!p->empty() && ((*p)[0].is_string() || (*p)[0].is_array())) {
    if (p->size() != 1) throw bad_request("prompt", "one prompt per request (a batch of prompts is not supported)");
    if ((*p)[0].is_string()) r.prompt_text = (*p)[0].get<std::string>();
    else r.prompt_ids = token_ids((*p)[0], "prompt");
    return;
  }
  r.prompt_ids = token_ids(*p, "prompt");
}

void parse_messages(const json& body, CompletionRequest& r) {
  const json* m = field(body, "messages");
  if (!m) throw bad_request("messages", "'messages' is required", "missing_field");
  if (!m->is_array() || m->empty()) throw bad_request("messages", "'messages' must be a non-empty array", "invalid_type");
  for (std::size_t i = 0; i < m->size(); ++i) {
    const json& msg = (*m)[i];
    const std::string param = cat("messages[", i, "]");
    if (!msg.is_object()) throw wrong_type(param, "an object", msg);
    const json* role = field(msg, "role");
    if (!role || !role->is_string()) throw bad_request(param + ".role", "each message needs a string 'role'", "invalid_type");
    ChatMessage out;
    out.role = role->get<std::string>();
    if (out.role == "developer") out.role = "system";  // OpenAI's newer name for the system role
    if (out.role != "system" && out.role != "user" && out.role != "assistant")
      throw bad_request(param + ".role", cat("role '", out.role, "' is not supported (system, developer, user, assistant)"));
    const json* content = field(msg, "content");
    if (!content) {
      if (out.role != "assistant") throw bad_request(param + ".content", "each message needs 'content'", "missing_field");
    } else if (content->is_string()) {
      out.content = content->get<std::string>();
    } else if (content->is_array()) {  // [{"type": "text", "text": "…"}, …]
      for (const json& part : *content) {
        const json* type = part.is_object() ? field(part, "type") : nullptr;
        const json* text = part.is_object() ? field(part, "text") : nullptr;
        if (!type || *type != "text" || !text || !text->is_string())
          throw bad_request(param + ".content", "only text content parts are supported");
        out.content += text->get<std::string>();
      }
    } else {
      throw wrong_type(param + ".content", "a string or an array of text parts", *content);
    }
    r.messages.push_back(std::move(out));
  }
}

void parse_stop(const json& body, CompletionRequest& r) {
  const json* s = field(body, "stop");
  if (!s) return;
  if (s->is_string()) {
    r.stop.push_back(s->get<std::string>());
  } else if (s->is_array()) {
    for (const json& item : *s) {
      if (!item.is_string()) throw wrong_type("stop", "a string or an array of strings", item);
      r.stop.push_back(item.get<std::string>());
    }
  } else {
    throw wrong_type("stop", "a string or an array of strings", *s);
  }
  // Every token is matched against every stop string on a connection's I/O thread: bound the work.
  if (r.stop.size() > kMaxStopStrings)
    throw bad_request("stop", cat("at most ", kMaxStopStrings, " stop strings, got ", r.stop.size()), "invalid_value");
  for (const auto& text : r.stop) {
    if (text.empty()) throw bad_request("stop", "stop strings must not be empty");
    if (text.size() > kMaxStopBytes)
      throw bad_request("stop", cat("a stop string may have at most ", kMaxStopBytes, " bytes, got ", text.size()),
                        "invalid_value");
  }
}

}  // namespace

ApiError bad_request(const std::string& param, const std::string& message, const std::string& code) {
  return ApiError(400, "invalid_request_error", code, message, param);
}

CompletionRequest parse_request(std::string_view body, Endpoint endpoint) {
  if (body.empty()) throw ApiError(400, "invalid_request_error", "invalid_json", "the body is empty (expected a JSON object)");
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 6: …": the library's tag is no help to a client.
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) what.erase(0, what.find("] ") + 2);
    throw ApiError(400, "invalid_request_error", "invalid_json", cat("the body is not valid JSON: ", what));
  }
  if (!j.is_object()) throw ApiError(400, "invalid_request_error", "invalid_json", "the body must be a JSON object");

  CompletionRequest r;
  r.endpoint = endpoint;
  if (const json* m = field(j, "model")) {
    if (!m->is_string()) throw wrong_type("model", "a string", *m);
    r.model = m->get<std::string>();
  }
  if (endpoint == Endpoint::completions) parse_prompt(j, r);
  else parse_messages(j, r);

  // Chat: max_completion_tokens, OpenAI's successor of the deprecated max_tokens, wins when both are given (as in vLLM).
  std::optional<std::int64_t> max_tokens;
  const char* max_name = "max_tokens";
  if (endpoint == Endpoint::chat && (max_tokens = get_integer(j, "max_completion_tokens"))) max_name = "max_completion_tokens";
  else max_tokens = get_integer(j, "max_tokens");
  if (max_tokens) {
    if (*max_tokens < 1) throw bad_request(max_name, cat("'", max_name, "' must be at least 1, got ", *max_tokens));
    r.max_tokens = static_cast<int>(std::min<std::int64_t>(*max_tokens, std::numeric_limits<int>::max()));
  }
  if (auto n = get_integer(j, "n"); n && *n != 1) throw bad_request("n", cat("only n = 1 is supported, got ", *n));
  if (auto t = get_number(j, "temperature", 0, 2)) r.temperature = *t;
  if (const json* p = field(j, "top_p")) {
    if (!p->is_number()) throw wrong_type("top_p", "a number", *p);
    r.top_p = p->get<double>();
    if (!(r.top_p > 0 && r.top_p <= 1)) throw bad_request("top_p", cat("'top_p' must be in (0, 1], got ", r.top_p));
  }
  if (auto s = get_integer(j, "seed")) r.seed = static_cast<std::uint64_t>(*s);
  parse_stop(j, r);
  r.ignore_eos = get_bool(j, "ignore_eos", false);
  if (auto m = get_integer(j, "min_tokens")) {
    if (*m < 0) throw bad_request("min_tokens", cat("'min_tokens' must be at least 0, got ", *m));
    if (r.max_tokens && *m > *r.max_tokens)
      throw bad_request("min_tokens", cat("'min_tokens' (", *m, ") exceeds 'max_tokens' (", *r.max_tokens, ")"));
    r.min_tokens = static_cast<int>(std::min<std::int64_t>(*m, std::numeric_limits<int>::max()));
  }
  if (get_bool(j, "echo", false)) throw bad_request("echo", "'echo' is not supported by this server", "unsupported");
  if (const json* lp = field(j, "logprobs"); lp && !(lp->is_boolean() && !lp->get<bool>()))
    throw bad_request("logprobs", "'logprobs' is not supported by this server", "unsupported");
  r.stream = get_bool(j, "stream", false);
  if (const json* so = field(j, "stream_options")) {
    if (!so->is_object()) throw wrong_type("stream_options", "an object", *so);
    r.include_usage = get_bool(*so, "include_usage", false);
  }
  return r;
}

std::vector<std::int64_t> prompt_tokens(const CompletionRequest& r, const Tokenizer& tokenizer, std::int64_t vocab_size) {
  std::vector<std::int64_t> ids;
  if (r.endpoint == Endpoint::chat) {
    std::vector<TokenId> t = tokenizer.encode_chat(r.messages, true);
    ids.assign(t.begin(), t.end());
  } else if (r.prompt_text) {
    std::vector<TokenId> t = tokenizer.encode(*r.prompt_text, true);
    ids.assign(t.begin(), t.end());
  } else {
    ids = r.prompt_ids;
    for (std::int64_t id : ids)
      if (id < 0 || id >= vocab_size)
        throw bad_request("prompt", cat("token id ", id, " is outside the vocabulary [0, ", vocab_size, ")"));
  }
  if (ids.empty()) throw bad_request(r.endpoint == Endpoint::chat ? "messages" : "prompt", "the prompt is empty");
  return ids;
}

int resolve_max_tokens(const CompletionRequest& r, std::size_t prompt_len, int max_context) {
  const char* param = r.endpoint == Endpoint::chat ? "messages" : "prompt";
  if (prompt_len >= std::size_t(max_context))
    throw bad_request(param, cat("the prompt has ", prompt_len, " tokens; this model's context is ", max_context,
                                 " tokens, leaving no room to generate"),
                      "context_length_exceeded");
  const int room = max_context - int(prompt_len);
  if (r.max_tokens && *r.max_tokens > room)
    throw bad_request("max_tokens", cat("max_tokens = ", *r.max_tokens, " with a prompt of ", prompt_len,
                                        " tokens exceeds this model's context of ", max_context, " tokens"),
                      "context_length_exceeded");
  const int max_tokens = r.max_tokens ? *r.max_tokens : r.endpoint == Endpoint::chat ? room : std::min(16, room);
  if (r.min_tokens > max_tokens)  // against the default max_tokens (a given one was checked when parsed)
    throw bad_request("min_tokens", cat("'min_tokens' (", r.min_tokens, ") exceeds 'max_tokens' (", max_tokens, ")"));
  return max_tokens;
}

std::string error_json(const ApiError& e) {
  json err{{"message", e.what()}, {"type", e.type}, {"code", e.code}};
  err["param"] = e.param.empty() ? json(nullptr) : json(e.param);
  return dump_json(json{{"error", err}});
}

std::string dump_json(const nlohmann::json& value) {
  // A message may quote the client's bytes (a path, a JSON parse error cut inside a character): not UTF-8.
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0;  // start of the bytes copied as they are
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

namespace {

std::string head_json(Endpoint endpoint, bool chunk, const std::string& id, std::int64_t created, const std::string& model) {
  std::string h = "{\"id\":";
  append_json_string(h, id);
  h += ",\"object\":";
  h += endpoint == Endpoint::chat ? (chunk ? "\"chat.completion.chunk\"" : "\"chat.completion\"") : "\"text_completion\"";
  h += ",\"created\":" + std::to_string(created) + ",\"model\":";
  append_json_string(h, model);
  h += ",";
  return h;
}

std::string usage_json(Usage u) {
  return cat("{\"prompt_tokens\":", u.prompt_tokens, ",\"completion_tokens\":", u.completion_tokens,
             ",\"total_tokens\":", u.prompt_tokens + u.completion_tokens, "}");
}

}  // namespace

std::string completion_json(Endpoint endpoint, const std::string& id, std::int64_t created, const std::string& model,
                            const std::string& text, const std::string& finish_reason, Usage usage,
                            const std::string& timing_json) {
  std::string out = head_json(endpoint, false, id, created, model);
  out += "\"choices\":[{\"index\":0,";
  if (endpoint == Endpoint::chat) {
    out += "\"message\":{\"role\":\"assistant\",\"content\":";
    append_json_string(out, text);
    out += "}";
  } else {
    out += "\"text\":";
    append_json_string(out, text);
  }
  out += ",\"logprobs\":null,\"finish_reason\":";
  append_json_string(out, finish_reason);
  out += "}],\"usage\":" + usage_json(usage);
  if (!timing_json.empty()) out += ",\"llmbench_timing\":" + timing_json;
  out += "}";
  return out;
}

ChunkFormat::ChunkFormat(Endpoint endpoint, const std::string& id, std::int64_t created, const std::string& model)
    : endpoint_(endpoint), head_(head_json(endpoint, true, id, created, model)) {
  text_prefix_ = head_ + (endpoint == Endpoint::chat ? "\"choices\":[{\"index\":0,\"delta\":{\"content\":"
                                                     : "\"choices\":[{\"index\":0,\"text\":");
  text_suffix_ = endpoint == Endpoint::chat ? "},\"logprobs\":null,\"finish_reason\":null}]}"
                                            : ",\"logprobs\":null,\"finish_reason\":null}]}";
}

std::string ChunkFormat::role_chunk() const {
  return head_ + "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
                 "\"finish_reason\":null}]}";
}

void ChunkFormat::append_text(std::string& out, std::string_view text) const {
  out += text_prefix_;
  append_json_string(out, text);
  out += text_suffix_;
}

std::string ChunkFormat::finish_chunk(const std::string& finish_reason, const std::string& extra) const {
  std::string out = head_ + (endpoint_ == Endpoint::chat ? "\"choices\":[{\"index\":0,\"delta\":{}"
                                                         : "\"choices\":[{\"index\":0,\"text\":\"\"");
  out += ",\"logprobs\":null,\"finish_reason\":";
  append_json_string(out, finish_reason);
  out += "}]" + extra + "}";
  return out;
}

std::string ChunkFormat::usage_chunk(Usage usage, const std::string& extra) const {
  return head_ + "\"choices\":[],\"usage\":" + usage_json(usage) + extra + "}";
}

std::string make_response_id(Endpoint endpoint) {
  static const std::uint64_t process_salt = std::random_device{}();
  static std::atomic<std::uint64_t> counter{0};
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08llx%012llx", static_cast<unsigned long long>(process_salt & 0xffffffffu),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return (endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-") + std::string(buf);
}

}  // namespace llmbench::serve
