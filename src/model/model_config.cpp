#include "llmbench/model/model_config.h"

#include <algorithm>
#include <cmath>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"

namespace llmbench {

namespace {

using nlohmann::json;

// Fields larger than this are typos or corrupt files, not models.
constexpr std::int64_t kMaxDim = 1 << 20;
constexpr std::int64_t kMaxVocab = 1 << 24;
constexpr std::int64_t kMaxPositions = std::int64_t{1} << 26;

class Reader {
 public:
  Reader(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(cat(source_, ": field '", field, "' ", what));
  }

  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  std::int64_t integer(const std::string& key, std::int64_t lo, std::int64_t hi) const {
    if (!has(key)) fail(key, "is missing");
    return checked_integer(j_.at(key), key, lo, hi);
  }

  std::int64_t integer_or(const std::string& key, std::int64_t fallback, std::int64_t lo, std::int64_t hi) const {
    return has(key) ? checked_integer(j_.at(key), key, lo, hi) : fallback;
  }

  double number_or(const std::string& key, double fallback, double lo, double hi) const {
    if (!has(key)) return fallback;
    return checked_number(j_.at(key), key, lo, hi);
  }

  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_boolean()) fail(key, cat("must be true or false, got ", j_.at(key).dump()));
    return j_.at(key).get<bool>();
  }

  std::int64_t checked_integer(const json& v, const std::string& key, std::int64_t lo, std::int64_t hi) const {
    // 64.0 counts as 64; the range test comes first because casting 1e300 to an integer is undefined.
    if (v.is_number_float() && std::abs(v.get<double>()) < 9e18 && v.get<double>() == std::trunc(v.get<double>()))
      return checked_integer(json(static_cast<std::int64_t>(v.get<double>())), key, lo, hi);
    if (!v.is_number_integer()) fail(key, cat("must be an integer, got ", v.dump()));
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi) fail(key, cat("= ", x, " is out of range [", lo, ", ", hi, "]"));
    return x;
  }

  double checked_number(const json& v, const std::string& key, double lo, double hi) const {
    if (!v.is_number()) fail(key, cat("must be a number, got ", v.dump()));
    const double x = v.get<double>();
    if (!(x >= lo && x <= hi)) fail(key, cat("= ", x, " is out of range [", lo, ", ", hi, "]"));
    return x;
  }

  const json& j_;
  std::string source_;
};

RopeType parse_rope_type(const std::string& name, const Reader& r, const std::string& field) {
  if (name == "default" || name.empty()) return RopeType::none;
  if (name == "linear") return RopeType::linear;
  if (name == "dynamic") return RopeType::dynamic;
  if (name == "llama3") return RopeType::llama3;
  r.fail(field, cat("has unsupported rope type '", name, "' (supported: default, linear, dynamic, llama3)"));
}

// One rope object (rope_parameters or rope_scaling); `theta` is the top-level rope_theta or its default.
RopeConfig parse_rope_object(const json& j, const Reader& r, const std::string& key, double theta) {
  RopeConfig rope;
  rope.theta = theta;
  const json& s = j.at(key);
  if (!s.is_object()) r.fail(key, cat("must be an object or null, got ", s.dump()));
  Reader sr(s, r.source_ + ": " + key);
  std::string type;
  if (sr.has("rope_type")) type = s.at("rope_type").is_string() ? s.at("rope_type").get<std::string>() : "?";
  else if (sr.has("type")) type = s.at("type").is_string() ? s.at("type").get<std::string>() : "?";
  rope.type = parse_rope_type(type, r, key + ".rope_type");
  rope.theta = sr.number_or("rope_theta", rope.theta, 1.0, 1e12);
  if (rope.type == RopeType::none) return rope;
  if (!sr.has("factor")) sr.fail("factor", "is missing");
  rope.factor = sr.number_or("factor", 1.0, 1e-3, 1e6);
  rope.original_max_position_embeddings = sr.integer_or("original_max_position_embeddings", 0, 1, kMaxPositions);
  if (rope.type == RopeType::llama3) {
    rope.low_freq_factor = sr.number_or("low_freq_factor", 1.0, 1e-6, 1e6);
    rope.high_freq_factor = sr.number_or("high_freq_factor", 4.0, 1e-6, 1e6);
    if (rope.original_max_position_embeddings == 0)
      sr.fail("original_max_position_embeddings", "is missing (required by llama3 scaling)");
    if (rope.high_freq_factor <= rope.low_freq_factor)
      sr.fail("high_freq_factor", "must be greater than low_freq_factor");
  }
  return rope;
}

std::string describe(const RopeConfig& c) {
  std::string s = cat("type ", to_string(c.type), ", rope_theta ", shown(c.theta));
  if (c.type != RopeType::none) s += cat(", factor ", shown(c.factor));
  if (c.original_max_position_embeddings) s += cat(", original_max_position_embeddings ", c.original_max_position_embeddings);
  if (c.type == RopeType::llama3)
    s += cat(", low_freq_factor ", shown(c.low_freq_factor), ", high_freq_factor ", shown(c.high_freq_factor));
  return s;
}

bool same_rope(const RopeConfig& a, const RopeConfig& b) {
  return a.type == b.type && a.theta == b.theta && a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
         a.high_freq_factor == b.high_freq_factor &&
         a.original_max_position_embeddings == b.original_max_position_embeddings;
}

// transformers 5 writes rope_parameters (with rope_theta inside); older files write rope_scaling. A file
// with both is accepted only when they say the same thing.
void parse_rope(const json& j, const Reader& r, ModelConfig& c) {
  const double theta = r.number_or("rope_theta", 10000.0, 1.0, 1e12);
  c.rope.theta = theta;
  const bool params = r.has("rope_parameters"), scaling = r.has("rope_scaling");
  if (params) c.rope = parse_rope_object(j, r, "rope_parameters", theta);
  // A top-level rope_theta beside rope_parameters' own must agree with it (legacy readers take the top-level one).
  if (params && r.has("rope_theta") && c.rope.theta != theta)
    throw Error(cat(r.source_, ": fields 'rope_theta' (", shown(theta), ") and 'rope_parameters.rope_theta' (", shown(c.rope.theta),
                    ") disagree: remove one or make them agree"));
  if (!scaling) return;
  // rope_scaling rarely carries rope_theta: without one it takes rope_parameters' value.
  const RopeConfig legacy = parse_rope_object(j, r, "rope_scaling", c.rope.theta);
  if (!params) {
    c.rope = legacy;
  } else if (!same_rope(c.rope, legacy)) {
    throw Error(cat(r.source_, ": fields 'rope_parameters' and 'rope_scaling' disagree (rope_parameters: ",
                    describe(c.rope), "; rope_scaling: ", describe(legacy), "): remove one or make them agree"));
  }
}

std::vector<std::int64_t> parse_ids(const json& v, const Reader& r, const std::string& key) {
  std::vector<std::int64_t> ids;
  if (v.is_array()) {
    for (const auto& x : v) ids.push_back(r.checked_integer(x, key, 0, kMaxVocab));
  } else {
    ids.push_back(r.checked_integer(v, key, 0, kMaxVocab));
  }
  return ids;
}

}  // namespace

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> names{"LlamaForCausalLM", "Qwen2ForCausalLM", "MistralForCausalLM"};
  return names;
}

std::int64_t ModelConfig::parameter_count() const {
  const std::int64_t attn = hidden_size * (q_size() + 2 * kv_size()) + q_size() * hidden_size +
                            (qkv_bias ? q_size() + 2 * kv_size() : 0) + (o_bias ? hidden_size : 0);
  const std::int64_t mlp = 3 * hidden_size * intermediate_size;
  const std::int64_t layer = attn + mlp + 2 * hidden_size;
  return vocab_size * hidden_size * (tie_word_embeddings ? 1 : 2) + num_layers * layer + hidden_size;
}

ModelConfig parse_model_config(const json& j, const std::string& source) {
  if (!j.is_object()) throw Error(cat(source, ": expected a JSON object"));
  Reader r(j, source);
  ModelConfig c;

  std::string arch;
  if (r.has("architectures")) {
    const json& a = j.at("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string()) r.fail("architectures", "must be a list of names");
    arch = a[0].get<std::string>();
  } else if (r.has("model_type") && j.at("model_type").is_string()) {
    const std::string t = j.at("model_type").get<std::string>();
    arch = t == "llama" ? "LlamaForCausalLM" : t == "qwen2" ? "Qwen2ForCausalLM" : t == "mistral" ? "MistralForCausalLM" : t;
  } else {
    r.fail("architectures", "is missing");
  }
  const auto& known = supported_architectures();
  if (std::find(known.begin(), known.end(), arch) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw Error(cat(source, ": unsupported architecture '", arch, "' (supported: ", list, ")"));
  }
  c.architecture = arch;

  c.hidden_size = r.integer("hidden_size", 1, kMaxDim);
  c.intermediate_size = r.integer("intermediate_size", 1, kMaxDim);
  c.num_layers = r.integer("num_hidden_layers", 1, 4096);
  c.num_heads = r.integer("num_attention_heads", 1, 4096);
  c.num_kv_heads = r.integer_or("num_key_value_heads", c.num_heads, 1, 4096);
  if (c.num_heads % c.num_kv_heads != 0)
    r.fail("num_key_value_heads", cat("= ", c.num_kv_heads, " does not divide num_attention_heads = ", c.num_heads));
  if (r.has("head_dim")) {
    c.head_dim = r.integer("head_dim", 1, 4096);
  } else {
    if (c.hidden_size % c.num_heads != 0)
      r.fail("num_attention_heads", cat("= ", c.num_heads, " does not divide hidden_size = ", c.hidden_size));
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.head_dim % 2 != 0) r.fail("head_dim", cat("= ", c.head_dim, " must be even for rotary embeddings"));
  c.vocab_size = r.integer("vocab_size", 1, kMaxVocab);
  c.rms_norm_eps = r.number_or("rms_norm_eps", 1e-6, 0.0, 1.0);
  c.max_position_embeddings = r.integer_or("max_position_embeddings", 2048, 1, kMaxPositions);
  c.tie_word_embeddings = r.boolean_or("tie_word_embeddings", false);
  parse_rope(j, r, c);

  if (arch == "Qwen2ForCausalLM") {
    c.qkv_bias = true;  // Qwen2 hard-codes q/k/v biases; config.json does not say so
  } else {
    c.qkv_bias = c.o_bias = r.boolean_or("attention_bias", false);
  }
  if (r.boolean_or("mlp_bias", false)) r.fail("mlp_bias", "= true is not supported");
  if (r.has("hidden_act") && j.at("hidden_act") != "silu")
    r.fail("hidden_act", cat("= ", j.at("hidden_act").dump(), " is not supported (only silu)"));

  for (const char* key : {"torch_dtype", "dtype"})
    if (r.has(key) && j.at(key).is_string()) c.torch_dtype = j.at(key).get<std::string>();
  if (r.has("bos_token_id")) c.bos_token_id = r.checked_integer(j.at("bos_token_id"), "bos_token_id", 0, kMaxVocab);
  if (r.has("eos_token_id")) c.eos_token_ids = parse_ids(j.at("eos_token_id"), r, "eos_token_id");

  const bool window_active = arch == "MistralForCausalLM" || (arch == "Qwen2ForCausalLM" && r.boolean_or("use_sliding_window", false));
  if (window_active && r.has("sliding_window"))
    c.sliding_window = r.integer("sliding_window", 1, kMaxPositions);
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  const std::string text = read_file(path);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw Error(cat(path, ": malformed JSON"));
  return parse_model_config(j, path);
}

void check_context(const ModelConfig& c, std::int64_t context) {
  if (context > c.max_position_embeddings)
    throw UsageError(cat("context of ", context, " tokens exceeds the model's max_position_embeddings = ",
                         c.max_position_embeddings));
  if (c.sliding_window && context > *c.sliding_window)
    throw UsageError(cat("context of ", context, " tokens exceeds the sliding_window = ", *c.sliding_window,
                         " (sliding-window attention is not implemented)"));
}

const char* to_string(RopeType type) {
  switch (type) {
    case RopeType::none: return "default";
    case RopeType::linear: return "linear";
    case RopeType::dynamic: return "dynamic";
    case RopeType::llama3: return "llama3";
  }
  return "?";
}

nlohmann::json to_json(const ModelConfig& c) {
  json j{{"architecture", c.architecture},
         {"hidden_size", c.hidden_size},
         {"intermediate_size", c.intermediate_size},
         {"num_hidden_layers", c.num_layers},
         {"num_attention_heads", c.num_heads},
         {"num_key_value_heads", c.num_kv_heads},
         {"head_dim", c.head_dim},
         {"vocab_size", c.vocab_size},
         {"rms_norm_eps", c.rms_norm_eps},
         {"rope_theta", c.rope.theta},
         {"rope_type", to_string(c.rope.type)},
         {"max_position_embeddings", c.max_position_embeddings},
         {"tie_word_embeddings", c.tie_word_embeddings},
         {"qkv_bias", c.qkv_bias},
         {"parameters", c.parameter_count()}};
  if (c.rope.type != RopeType::none) j["rope_factor"] = c.rope.factor;
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  j["eos_token_id"] = c.eos_token_ids;
  if (c.sliding_window) j["sliding_window"] = *c.sliding_window;
  return j;
}

}  // namespace llmbench
