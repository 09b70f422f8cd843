#include "llmbench/config/compare_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"

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
  for (std::size_t i = 0; i < n.size(); ++i) out.push_back(scalar<T>(ctx, n[i], cat(path, "[", i, "]"), what));
  return out;
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
         o.attn = axis<std::string>(c, n, p, "eager or sdpa");
       }},
      {"dtype", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.dtype = axis<std::string>(c, n, p, "bfloat16, float16 or float32");
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
      {"verify", [](RunOptions& o, const Context& c, const YAML::Node& n, const std::string& p) {
         o.verify = scalar<bool>(c, n, p, "true or false");
       }},
  };
  return setters;
}

const std::vector<std::string> kMatrixAxes = {"batch", "prompt_len", "max_new_tokens", "temperature", "attn", "dtype"};
const std::vector<std::string> kTopLevel = {"models", "defaults", "matrix", "baseline"};

std::vector<std::string> option_names() {
  std::vector<std::string> out;
  for (const auto& [k, _] : option_setters()) out.push_back(k);
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

std::string key_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

void require_map(const Context& ctx, const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) ctx.fail(n, path, cat("expected a mapping of keys, got ", kind_of(n)));
}

// Applies the keys of a mapping; `allowed` restricts them (empty: every run option); `extra` handles
// keys that are not run options (model, label) and returns false for unknown ones.
void apply_map(RunOptions& o, const Context& ctx, const YAML::Node& n, const std::string& path,
               const std::vector<std::string>& allowed,
               const std::function<bool(const std::string&, const YAML::Node&, const std::string&)>& extra,
               const std::vector<std::string>& extra_names) {
  require_map(ctx, n, path);
  std::vector<std::string> known = allowed.empty() ? option_names() : allowed;
  known.insert(known.end(), extra_names.begin(), extra_names.end());
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string key = scalar<std::string>(ctx, it->first, path, "a key");
    const std::string p = key_path(path, key);
    if (!seen.insert(key).second) ctx.fail(it->first, p, "duplicate key");
    if (extra && extra(key, it->second, p)) continue;
    const bool permitted = allowed.empty() || std::find(allowed.begin(), allowed.end(), key) != allowed.end();
    auto setter = option_setters().find(key);
    if (!permitted || setter == option_setters().end()) unknown_key(ctx, it->first, path, known);
    setter->second(o, ctx, it->second, p);
  }
}

}  // namespace

ComparePlan parse_compare_config(const std::string& text, const std::string& name) {
  Context ctx{name};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw UsageError(cat(name, ":", e.mark.line + 1, ":", e.mark.column + 1, ": YAML syntax error: ", e.msg));
  }
  if (!root.IsMap()) ctx.fail(root, "", cat("expected a mapping with 'models:' at the top level, got ", kind_of(root)));
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = scalar<std::string>(ctx, it->first, "", "a key");
    if (std::find(kTopLevel.begin(), kTopLevel.end(), key) == kTopLevel.end()) unknown_key(ctx, it->first, "", kTopLevel);
  }

  RunOptions base;
  if (root["defaults"]) apply_map(base, ctx, root["defaults"], "defaults", {}, nullptr, {});
  if (root["matrix"]) apply_map(base, ctx, root["matrix"], "matrix", kMatrixAxes, nullptr, {});

  ComparePlan plan;
  const YAML::Node models = root["models"];
  if (!models) ctx.fail(root, "models", "missing (list the models to compare)");
  if (!models.IsSequence()) ctx.fail(models, "models", cat("expected a list of models, got ", kind_of(models)));
  if (models.size() == 0) ctx.fail(models, "models", "empty list (give at least one model)");
  std::map<std::string, YAML::Node> labels;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const YAML::Node entry = models[i];
    const std::string path = cat("models[", i, "]");
    RunOptions o = base;
    bool has_model = false;
    if (entry.IsScalar()) {
      o.model = scalar<std::string>(ctx, entry, path, "a model");
      has_model = true;
    } else {
      if (!entry.IsMap())
        ctx.fail(entry, path, cat("expected a model (preset, directory, HF id) or a mapping with 'model:', got ",
                                  kind_of(entry)));
      apply_map(o, ctx, entry, path, {},
                [&](const std::string& key, const YAML::Node& v, const std::string& p) {
                  if (key == "model") o.model = scalar<std::string>(ctx, v, p, "a model"), has_model = true;
                  else if (key == "label") o.label = scalar<std::string>(ctx, v, p, "a string");
                  else return false;
                  return true;
                },
                {"model", "label"});
    }
    if (!has_model || o.model.empty()) ctx.fail(entry, path + ".model", "missing (preset, directory or HF id)");
    const std::string label = o.label.empty() ? o.model : o.label;
    if (labels.count(label))
      ctx.fail(entry, path, cat("label '", label, "' is used by two models (give each a distinct 'label:')"));
    labels[label] = entry;
    try {
      validate(o);
    } catch (const UsageError& e) {
      ctx.fail(entry, path, e.what());
    }
    plan.models.push_back(o);
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
  for (auto& m : plan.models)
    if (m.prompt_file && std::filesystem::path(*m.prompt_file).is_relative())
      m.prompt_file = (dir / *m.prompt_file).lexically_normal().string();
  return plan;
}

}  // namespace llmbench
