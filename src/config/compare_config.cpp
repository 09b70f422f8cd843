#include "llmbench/config/compare_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/report/load_result.h"

namespace llmbench {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string closest_key(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, key.size() / 3) + 1;  // typos only
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(key, c);
    if (d < best_distance) best = c, best_distance = d;
  }
  if (!best.empty() || key.size() < 3) return best;
  // A truncated name ("ttft" for "ttft_ms") is far in edits but obvious.
  for (const auto& c : candidates)
    if (c.rfind(key, 0) == 0) return c;
  return best;
}

namespace {

// Where we are in the file, for messages: "FILE:LINE:COL: path: ...".
struct Context {
  std::string file;

  [[noreturn]] void fail(const YAML::Node& at, const std::string& path, const std::string& message) const {
    const YAML::Mark m = at.Mark();
    std::string where = m.is_null() ? file : cat(file, ":", m.line + 1, ":", m.column + 1);
    throw UsageError(cat(where, ": ", path.empty() ? "" : path + ": ", message));
  }
};

const char* kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing (null)";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "an undefined value";
  }
}

template <class T>
T scalar(const Context& ctx, const YAML::Node& n, const std::string& path, const char* what) {
  if (!n.IsScalar()) ctx.fail(n, path, cat("expected ", what, ", got ", kind_of(n)));
  if constexpr (std::is_unsigned_v<T>) {
    if (!n.Scalar().empty() && n.Scalar()[0] == '-')
      ctx.fail(n, path, cat("expected ", what, ", got '", n.Scalar(), "'"));
  }
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    ctx.fail(n, path, cat("expected ", what, ", got '", n.Scalar(), "'"));
  }
}

// A scalar or a non-empty list of scalars.
template <class T>
std::vector<T> axis(const Context& ctx, const YAML::Node& n, const std::string& path, const char* what) {
  if (n.IsScalar()) return {scalar<T>(ctx, n, path, what)};
  if (!n.IsSequence()) ctx.fail(n, path, cat("expected ", what, " or a list of them, got ", kind_of(n)));
  if (n.size() == 0) ctx.fail(n, path, "empty list (give at least one value)");
  std::vector<T> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    out.push_back(scalar<T>(ctx, n[i], cat(path, "[", i, "]"), what));
    // The same point twice would be measured twice: refused where it is written, as validate() refuses it for a flag.
    if (std::find(out.begin(), out.end() - 1, out.back()) != out.end() - 1) ctx.fail(n, path, cat(out.back(), " is given twice"));
  }
  return out;
}

std::string key_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// An option of named values, each checked where it is written (in defaults: or an entry), not only at the
// model entry that inherits it.
std::vector<std::string> named_axis(const Context& c, const YAML::Node& n, const std::string& p,
                                    const std::vector<std::string>& allowed) {
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  std::vector<std::string> values = axis<std::string>(c, n, p, list.c_str());
  for (const auto& v : values)
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      c.fail(n, p, cat("unknown value '", v, "' (expected one of: ", list, ")"));
  return values;
}

using Setter = std::function<void(RunOptions&, const Context&, const YAML::Node&, const std::string&)>;

// Every run option settable from YAML (names as the struct fields; the CLI spells them with '-').
const std::map<std::string, Setter>& option_setters() {
  static const std::map<std::string, Setter> setters = {
      {"batch", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.batch = axis<int>(c, n, p, "an integer");
       }},
      {"prompt_len", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.prompt_len = axis<int>(c, n, p, "an integer");
       }},
      {"max_new_tokens", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.max_new_tokens = axis<int>(c, n, p, "an integer");
       }},
      {"temperature", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.temperature = axis<double>(c, n, p, "a number");
       }},
      {"attn", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.attn = named_axis(c, n, p, {"eager", "sdpa"});
       }},
      {"dtype", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.dtype = named_axis(c, n, p, {"bfloat16", "float16", "float32"});
       }},
      {"weights", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.weights = named_axis(c, n, p, {"bf16", "int8", "fp8"});
       }},
      {"kv_dtype", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.kv_dtype = named_axis(c, n, p, {"bf16", "fp8"});
       }},
      {"gemv", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.gemv = scalar<bool>(c, n, p, "true or false");
       }},
      {"fp8_gemm", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.fp8_gemm = scalar<std::string>(c, n, p, "dequant or scaled-mm");
         if (o.fp8_gemm != "dequant" && o.fp8_gemm != "scaled-mm")
           c.fail(n, p, cat("unknown value '", o.fp8_gemm, "' (expected one of: dequant, scaled-mm)"));
       }},
      {"warmup", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.warmup = scalar<int>(c, n, p, "an integer");
       }},
      {"runs", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.runs = scalar<int>(c, n, p, "an integer");
       }},
      {"trim", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.trim = scalar<int>(c, n, p, "an integer");
       }},
      {"device", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.device = scalar<std::string>(c, n, p, "a device (auto, cpu, cuda, cuda:N)");
       }},
      {"top_k", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.top_k = scalar<int>(c, n, p, "an integer");
       }},
      {"top_p", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.top_p = scalar<double>(c, n, p, "a number");
       }},
      {"seed", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.seed = scalar<std::uint64_t>(c, n, p, "a non-negative integer");
       }},
      {"prompt", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.prompt = scalar<std::string>(c, n, p, "a string");
       }},
      {"prompt_file", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.prompt_file = scalar<std::string>(c, n, p, "a path");
       }},
      {"chat", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.chat = scalar<bool>(c, n, p, "true or false");
       }},
      {"chat_format", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.chat_format = scalar<std::string>(c, n, p, "a string");
       }},
      {"cuda_graph", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.cuda_graph = scalar<bool>(c, n, p, "true or false");
       }},
      {"fused", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.fused = scalar<bool>(c, n, p, "true or false");
       }},
      {"tp", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.tp = scalar<int>(c, n, p, "an integer");
       }},
      {"verify", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.verify = scalar<bool>(c, n, p, "true or false");
       }},
  };
  return setters;
}

using LoadSetter = std::function<void(LoadOptions&, const Context&, const YAML::Node&, const std::string&)>;

template <class T>
LoadSetter load_scalar(T LoadOptions::*field, const char* what) {
  return [=](LoadOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
    o.*field = scalar<T>(c, n, p, what);
  };
}

template <class T>
LoadSetter load_axis(std::vector<T> LoadOptions::*field, const char* what) {
  return [=](LoadOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
    o.*field = axis<T>(c, n, p, what);
  };
}

// num_requests and duration: 0 stands for "not given" in LoadOptions, so a 0 written in the file is refused.
template <class T>
LoadSetter load_positive(T LoadOptions::*field, const char* what) {
  return [=](LoadOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
    o.*field = scalar<T>(c, n, p, what);
    if (!(o.*field > 0)) c.fail(n, p, cat("must be positive, got ", o.*field));
  };
}

// "ttft_ms=500,tpot_ms=50", or the mapping {ttft_ms: 500, tpot_ms: 50}; checked by parse_slo.
void set_slo(LoadOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
  if (n.IsMap()) {
    o.slo.clear();
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string key = scalar<std::string>(c, it->first, p, "a key");
      const double value = scalar<double>(c, it->second, key_path(p, key), "a number");
      o.slo += cat(o.slo.empty() ? "" : ",", key, "=", value);
    }
  } else {
    o.slo = scalar<std::string>(c, n, p, "objectives (ttft_ms=X,tpot_ms=Y,e2e_ms=Z) or a mapping of them");
  }
  try {
    if (!o.slo.empty()) parse_slo(o.slo);
  } catch (const UsageError& e) {
    c.fail(n, p, e.what());
  }
}

// "KEY: VALUE", a list of them, or the mapping {KEY: VALUE, ...}.
void set_headers(LoadOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
  if (!n.IsMap()) {
    o.headers = axis<std::string>(c, n, p, "KEY:VALUE");
    return;
  }
  o.headers.clear();
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string key = scalar<std::string>(c, it->first, p, "a header name");
    o.headers.push_back(key + ": " + scalar<std::string>(c, it->second, key_path(p, key), "a header value"));
  }
}

// Every `llmbench load` option settable from YAML: the flag names with '_' instead of '-' (`header`
// also takes a mapping). endpoint, model and label only appear in entries.
const std::map<std::string, LoadSetter>& load_setters() {
  static const std::map<std::string, LoadSetter> setters = {
      {"api", load_scalar(&LoadOptions::api, "completions or chat")},
      {"concurrency", load_axis(&LoadOptions::concurrency, "an integer")},
      {"request_rate", load_axis(&LoadOptions::request_rate, "a number")},
      {"arrival", load_scalar(&LoadOptions::arrival, "poisson, constant or gamma:SHAPE")},
      {"max_concurrency", load_positive(&LoadOptions::max_concurrency, "an integer")},
      {"search", load_scalar(&LoadOptions::search, "rate:MIN:MAX or concurrency:MIN:MAX")},
      {"search_goodput", load_scalar(&LoadOptions::search_goodput, "a fraction in (0, 1]")},
      {"search_steps", load_scalar(&LoadOptions::search_steps, "an integer")},
      {"num_requests", load_positive(&LoadOptions::num_requests, "an integer")},
      {"duration", load_positive(&LoadOptions::duration_s, "a number of seconds")},
      {"warmup_requests", load_scalar(&LoadOptions::warmup_requests, "an integer")},
      {"input_len", load_scalar(&LoadOptions::input_len, "an integer")},
      {"output_len", [](LoadOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.output_len = scalar<int>(c, n, p, "an integer");
         o.output_len_given = true;
       }},
      {"range_ratio", load_scalar(&LoadOptions::range_ratio, "a number in [0, 1)")},
      {"prefix_len", load_scalar(&LoadOptions::prefix_len, "an integer")},
      {"dataset", load_scalar(&LoadOptions::dataset, "synthetic, sharegpt:FILE, jsonl:FILE or trace:FILE")},
      {"trace_speedup", load_scalar(&LoadOptions::trace_speedup, "a number")},
      {"trace_block_size", load_scalar(&LoadOptions::trace_block_size, "an integer")},
      {"turns", load_scalar(&LoadOptions::turns, "an integer")},
      {"turns_stddev", load_scalar(&LoadOptions::turns_stddev, "a number")},
      {"turn_delay_ms", load_scalar(&LoadOptions::turn_delay_ms, "a number of milliseconds")},
      {"turn_delay_stddev_ms", load_scalar(&LoadOptions::turn_delay_stddev_ms, "a number of milliseconds")},
      {"tokenizer", load_scalar(&LoadOptions::tokenizer, "a path or tiny")},
      {"slo", set_slo},
      {"seed", load_scalar(&LoadOptions::seed, "a non-negative integer")},
      {"timeout_s", load_scalar(&LoadOptions::timeout_s, "a number of seconds")},
      {"cancel_rate", load_scalar(&LoadOptions::cancel_rate, "a percent")},
      {"slice_s", load_scalar(&LoadOptions::slice_s, "a number of seconds")},
      {"cancel_delay_ms", load_scalar(&LoadOptions::cancel_delay_ms, "a number of milliseconds")},
      {"header", set_headers},
      {"api_key", load_scalar(&LoadOptions::api_key, "a string")},
      {"api_key_env", load_scalar(&LoadOptions::api_key_env, "the name of an environment variable")},
      {"ca_cert", load_scalar(&LoadOptions::ca_cert, "a path")},
      {"insecure", load_scalar(&LoadOptions::insecure, "true or false")},
      {"extra_body", load_scalar(&LoadOptions::extra_body, "a JSON object as a string")},
      {"no_stream", load_scalar(&LoadOptions::no_stream, "true or false")},
      {"server_metrics", load_scalar(&LoadOptions::server_metrics, "true or false")},
      {"server_metrics_url", load_axis(&LoadOptions::server_metrics_urls, "a URL")},
      {"server_metrics_interval_ms", load_scalar(&LoadOptions::server_metrics_interval_ms, "a number of milliseconds")},
  };
  return setters;
}

const std::vector<std::string> kMatrixAxes = {"batch", "prompt_len", "max_new_tokens", "temperature", "attn", "dtype", "weights",
                                            "kv_dtype"};
const std::vector<std::string> kTopLevel = {"models", "defaults", "matrix", "baseline"};

template <class Map>
std::vector<std::string> names_of(const Map& m, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> out = extra;
  for (const auto& [k, _] : m) out.push_back(k);
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

[[noreturn]] void unknown_key(const Context& ctx, const YAML::Node& key, const std::string& path,
                              const std::vector<std::string>& known) {
  const std::string name = key.Scalar();
  const std::string best = closest_key(name, known);
  if (!best.empty()) ctx.fail(key, path, cat("unknown key '", name, "' (did you mean '", best, "'?)"));
  ctx.fail(key, path, cat("unknown key '", name, "' (known keys: ", join(known), ")"));
}

void require_map(const Context& ctx, const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) ctx.fail(n, path, cat("expected a mapping of keys, got ", kind_of(n)));
}

// Calls fn(key node, key, value, key path) for every key of a mapping; refuses duplicates.
void for_each_key(const Context& ctx, const YAML::Node& n, const std::string& path,
                  const std::function<void(const YAML::Node&, const std::string&, const YAML::Node&,
                                           const std::string&)>& fn) {
  require_map(ctx, n, path);
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string key = scalar<std::string>(ctx, it->first, path, "a key");
    const std::string p = key_path(path, key);
    if (!seen.insert(key).second) ctx.fail(it->first, p, "duplicate key");
    fn(it->first, key, it->second, p);
  }
}

bool is_run_key(const std::string& k) { return option_setters().count(k) > 0; }
bool is_load_key(const std::string& k) { return load_setters().count(k) > 0; }

// Keys that exclude each other: an entry that sets one of a group replaces what `defaults:` set for the whole
// group (two of one group in the same mapping are still refused, by validate()).
bool sets_any(const YAML::Node& entry, std::initializer_list<const char*> keys) {
  if (!entry.IsMap()) return false;
  for (const char* k : keys)
    if (entry[k]) return true;
  return false;
}

// A model entry (`model:` and run options).
RunOptions run_entry(const Context& ctx, const YAML::Node& entry, const std::string& path, RunOptions o) {
  if (sets_any(entry, {"prompt", "prompt_file"})) o.prompt.reset(), o.prompt_file.reset();
  bool has_model = false;
  if (entry.IsScalar()) {
    o.model = scalar<std::string>(ctx, entry, path, "a model");
    has_model = true;
  } else {
    for_each_key(ctx, entry, path,
                 [&](const YAML::Node& k, const std::string& key, const YAML::Node& v, const std::string& p) {
                   if (key == "model") o.model = scalar<std::string>(ctx, v, p, "a model"), has_model = true;
                   else if (key == "label") o.label = scalar<std::string>(ctx, v, p, "a string");
                   else if (is_run_key(key)) option_setters().at(key)(o, ctx, v, p);
                   else if (is_load_key(key))
                     ctx.fail(k, p, cat("'", key, "' is an option of `llmbench load`: only an entry with 'endpoint:' ",
                                        "takes it"));
                   else unknown_key(ctx, k, path, names_of(option_setters(), {"model", "label", "endpoint"}));
                 });
  }
  if (!has_model || o.model.empty()) ctx.fail(entry, path + ".model", "missing (preset, directory or HF id)");
  try {
    validate(o);
  } catch (const UsageError& e) {
    ctx.fail(entry, path, e.what());
  }
  return o;
}

// An `endpoint:` entry (a load target: endpoint, model, label and load options).
LoadOptions load_entry(const Context& ctx, const YAML::Node& entry, const std::string& path, LoadOptions o) {
  if (sets_any(entry, {"num_requests", "duration"})) o.num_requests = 0, o.duration_s = 0;
  if (sets_any(entry, {"concurrency", "request_rate"})) o.concurrency.clear(), o.request_rate.clear();
  for_each_key(ctx, entry, path,
               [&](const YAML::Node& k, const std::string& key, const YAML::Node& v, const std::string& p) {
                 if (key == "endpoint") o.endpoint = scalar<std::string>(ctx, v, p, "a URL (http://HOST:PORT)");
                 else if (key == "model") o.model = scalar<std::string>(ctx, v, p, "a model name");
                 else if (key == "label") o.label = scalar<std::string>(ctx, v, p, "a string");
                 else if (is_load_key(key)) load_setters().at(key)(o, ctx, v, p);
                 else if (is_run_key(key))
                   ctx.fail(k, p, cat("'", key, "' is an option of `llmbench run`; an entry with 'endpoint:' is a "
                                      "load target and takes the options of `llmbench load` (docs/config.md)"));
                 else unknown_key(ctx, k, path, names_of(load_setters(), {"endpoint", "model", "label"}));
               });
  if (o.endpoint.empty()) ctx.fail(entry, path + ".endpoint", "empty (give the server's base URL)");
  if (o.label.empty()) o.label = o.endpoint;
  return o;
}

}  // namespace

void require_one_yaml_document(const std::string& text, const std::string& name) {
  std::size_t documents = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const bool marker = line.rfind("---", 0) == 0 && (line.size() == 3 || std::isspace(static_cast<unsigned char>(line[3])));
    if (marker) ++documents;                      // each `---` starts one (a leading one the first)
    else documents = std::max<std::size_t>(documents, 1);  // content before any `---`: the first
  }
  if (documents > 1) throw UsageError(cat(name, ": ", documents, " YAML documents (separated by ---); expected one"));
}

ComparePlan parse_compare_config(const std::string& text, const std::string& name) {
  Context ctx{name};
  YAML::Node root;
  try {
    require_one_yaml_document(text, name);
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UsageError(cat(name, ":", e.mark.line + 1, ":", e.mark.column + 1, ": YAML syntax error: ", e.msg));
  }
  if (!root.IsMap()) ctx.fail(root, "", cat("expected a mapping with 'models:' at the top level, got ", kind_of(root)));
  std::set<std::string> top_seen;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = scalar<std::string>(ctx, it->first, "", "a key");
    if (std::find(kTopLevel.begin(), kTopLevel.end(), key) == kTopLevel.end()) unknown_key(ctx, it->first, "", kTopLevel);
    // yaml-cpp keeps both and root[key] finds the first: the second would be dropped without a word.
    if (!top_seen.insert(key).second) ctx.fail(it->first, key, "duplicate key");
  }

  // `defaults:` takes run and load options; each applies to the entries of its kind (seed to both).
  RunOptions base;
  LoadOptions load_base;
  if (root["defaults"])
    for_each_key(ctx, root["defaults"], "defaults",
                 [&](const YAML::Node& k, const std::string& key, const YAML::Node& v, const std::string& p) {
                   if (!is_run_key(key) && !is_load_key(key)) {
                     std::set<std::string> known;
                     for (const auto& n : names_of(load_setters(), names_of(option_setters()))) known.insert(n);
                     unknown_key(ctx, k, "defaults", {known.begin(), known.end()});
                   }
                   if (is_run_key(key)) option_setters().at(key)(base, ctx, v, p);
                   if (is_load_key(key)) load_setters().at(key)(load_base, ctx, v, p);
                 });
  if (base.prompt && base.prompt_file)  // here, not at every entry that would inherit both
    ctx.fail(root["defaults"]["prompt_file"], "defaults.prompt_file", "prompt and prompt_file: give only one");
  if (root["matrix"])
    for_each_key(ctx, root["matrix"], "matrix",
                 [&](const YAML::Node& k, const std::string& key, const YAML::Node& v, const std::string& p) {
                   if (std::find(kMatrixAxes.begin(), kMatrixAxes.end(), key) == kMatrixAxes.end())
                     unknown_key(ctx, k, "matrix", kMatrixAxes);
                   option_setters().at(key)(base, ctx, v, p);
                 });

  ComparePlan plan;
  const YAML::Node models = root["models"];
  if (!models) ctx.fail(root, "models", "missing (list the models to compare)");
  if (!models.IsSequence()) ctx.fail(models, "models", cat("expected a list of models, got ", kind_of(models)));
  if (models.size() == 0) ctx.fail(models, "models", "empty list (give at least one model)");
  std::map<std::string, YAML::Node> labels;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const YAML::Node entry = models[i];
    const std::string path = cat("models[", i, "]");
    if (!entry.IsScalar() && !entry.IsMap())
      ctx.fail(entry, path,
               cat("expected a model (preset, directory, HF id) or a mapping with 'model:' or 'endpoint:', got ",
                   kind_of(entry)));
    std::string label;
    if (entry.IsMap() && entry["endpoint"]) {
      const YAML::Mark m = entry.Mark();
      LoadTarget t{load_entry(ctx, entry, path, load_base), cat(name, ":", m.line + 1, ":", m.column + 1, ": ", path)};
      label = t.options.label;
      plan.loads.push_back(std::move(t));
    } else {
      plan.models.push_back(run_entry(ctx, entry, path, base));
      label = plan.models.back().label.empty() ? plan.models.back().model : plan.models.back().label;
      const YAML::Mark m = entry.Mark();
      plan.model_where.push_back(cat(name, ":", m.line + 1, ":", m.column + 1, ": ", path, " (", label, ")"));
    }
    if (labels.count(label))
      ctx.fail(entry, path, cat("label '", label, "' is used by two models (give each a distinct 'label:')"));
    labels[label] = entry;
  }

  if (const YAML::Node b = root["baseline"]) {
    plan.baseline = scalar<std::string>(ctx, b, "baseline", "a model label");
    if (!labels.count(plan.baseline)) {
      std::vector<std::string> names;
      for (const auto& [l, _] : labels) names.push_back(l);
      const std::string best = closest_key(plan.baseline, names);
      ctx.fail(b, "baseline",
               cat("'", plan.baseline, "' is not the label of any model",
                   best.empty() ? cat(" (labels: ", join(names), ")") : cat(" (did you mean '", best, "'?)")));
    }
  }
  return plan;
}

ComparePlan load_compare_config(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  ComparePlan plan = parse_compare_config(text, path);
  const auto dir = std::filesystem::path(path).parent_path();
  auto resolve = [&](const std::string& p) {
    return std::filesystem::path(p).is_relative() ? (dir / p).lexically_normal().string() : p;
  };
  for (auto& m : plan.models)
    if (m.prompt_file) m.prompt_file = resolve(*m.prompt_file);
  for (auto& t : plan.loads) {
    LoadOptions& o = t.options;
    const auto colon = o.dataset.find(':');
    if (colon != std::string::npos && colon + 1 < o.dataset.size())
      o.dataset = o.dataset.substr(0, colon + 1) + resolve(o.dataset.substr(colon + 1));
    if (!o.tokenizer.empty() && o.tokenizer != "tiny") o.tokenizer = resolve(o.tokenizer);
    if (!o.ca_cert.empty()) o.ca_cert = resolve(o.ca_cert);
  }
  return plan;
}

}  // namespace llmbench
