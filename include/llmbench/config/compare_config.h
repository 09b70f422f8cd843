#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "llmbench/config/load_options.h"
#include "llmbench/config/run_options.h"

namespace llmbench {

// An `endpoint:` entry: what `llmbench load` would run, and where the entry is in the file
// ("FILE:LINE:COL: models[i]") for the checks that only the load library can make (validate()).
struct LoadTarget {
  LoadOptions options;
  std::string where;
};

// What `llmbench compare CONFIG.yaml` runs: one RunOptions per model entry, with the built-in
// defaults, then `defaults:`, then `matrix:`, then the entry's own overrides applied in that order;
// one LoadTarget per `endpoint:` entry, with the built-in defaults of `llmbench load`, then the load
// keys of `defaults:`, then the entry's own keys. Labels are distinct over both kinds.
struct ComparePlan {
  std::vector<RunOptions> models;
  std::vector<std::string> model_where;  // per model: "FILE:LINE:COL: models[i] (LABEL)", for later checks' messages
  std::vector<LoadTarget> loads;
  std::string baseline;  // a label of `models` or `loads`, or empty
};

// Throws UsageError "FILE:LINE:COL: key.path: message" on syntax errors, unknown keys (with the
// closest known key), wrong types, empty lists, duplicate labels, an unknown baseline, a run option in
// an `endpoint:` entry (or a load option without one), a bad `slo`, and on any run option that
// validate() refuses. Relative prompt_file, dataset and tokenizer paths are taken relative to the YAML file.
ComparePlan load_compare_config(const std::string& path);
// Same, from text; `name` stands for the file in messages.
ComparePlan parse_compare_config(const std::string& text, const std::string& name);

// Levenshtein distance, and the candidate closest to `key` when it is close enough to be a typo.
std::size_t edit_distance(const std::string& a, const std::string& b);

// Throws UsageError "NAME: N YAML documents …" when `text` holds more than one document (the rest would be
// ignored), judged by its `---` lines: one before any content only starts the first. Counted on the text
// because yaml-cpp 0.7's LoadAll can loop forever on malformed input (found by fuzz_compare_config).
void require_one_yaml_document(const std::string& text, const std::string& name);
std::string closest_key(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace llmbench
