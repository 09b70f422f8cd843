#include <gtest/gtest.h>

#include <filesystem>

#include "llmbench/base/error.h"
#include "llmbench/config/compare_config.h"

using namespace llmbench;

namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_compare_config(yaml, "c.yaml");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(CompareConfig, EditDistanceAndSuggestion) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("prompt-len", "prompt_len"), 1u);
  EXPECT_EQ(closest_key("prompt-len", {"batch", "prompt_len", "max_new_tokens"}), "prompt_len");
  EXPECT_EQ(closest_key("tempreature", {"temperature", "top_p"}), "temperature");
  EXPECT_EQ(closest_key("zzzzzz", {"batch", "attn"}), "");
  EXPECT_EQ(closest_key("max_new", {"batch", "max_new_tokens"}), "max_new_tokens");
}

TEST(CompareConfig, DefaultsMatrixAndOverridesApplyInOrder) {
  ComparePlan plan = parse_compare_config(R"(
defaults:
  device: cpu
  warmup: 1
  runs: 5
  trim: 1
  batch: 8
  seed: 7
matrix:
  batch: [1, 2]
  prompt_len: 16
  temperature: [0, 0.7]
models:
  - tiny
  - model: /models/llama
    label: llama
    attn: sdpa
    batch: 4
    cuda_graph: false
baseline: tiny
)",
                                          "c.yaml");
  ASSERT_EQ(plan.models.size(), 2u);
  EXPECT_EQ(plan.baseline, "tiny");
  const RunOptions& a = plan.models[0];
  EXPECT_EQ(a.model, "tiny");
  EXPECT_EQ(a.device, "cpu");
  EXPECT_EQ(a.runs, 5);
  EXPECT_EQ(a.seed, 7u);
  EXPECT_EQ(a.batch, (std::vector<int>{1, 2}));  // matrix beats defaults
  EXPECT_EQ(a.prompt_len, (std::vector<int>{16}));
  EXPECT_EQ(a.temperature, (std::vector<double>{0, 0.7}));
  EXPECT_EQ(a.max_new_tokens, (std::vector<int>{64}));  // built-in default
  const RunOptions& b = plan.models[1];
  EXPECT_EQ(b.label, "llama");
  EXPECT_EQ(b.batch, (std::vector<int>{4}));  // the model's override beats the matrix
  EXPECT_EQ(b.attn, (std::vector<std::string>{"sdpa"}));
  EXPECT_FALSE(b.cuda_graph);
  EXPECT_EQ(b.trim, 1);
}

TEST(CompareConfig, SyntaxErrorNamesLineAndColumn) {
  const std::string e = error_of("models:\n  - tiny\n  - [oops\n");
  EXPECT_EQ(e.rfind("c.yaml:", 0), 0u) << e;
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
}

TEST(CompareConfig, UnknownKeysSuggestTheClosest) {
  EXPECT_EQ(error_of("models: [tiny]\ndefaults:\n  prompt-len: 5\n"),
            "c.yaml:3:3: defaults: unknown key 'prompt-len' (did you mean 'prompt_len'?)");
  EXPECT_EQ(error_of("modles: [tiny]\n"), "c.yaml:1:1: unknown key 'modles' (did you mean 'models'?)");
  EXPECT_EQ(error_of("models:\n  - model: tiny\n    lable: t\n"),
            "c.yaml:3:5: models[0]: unknown key 'lable' (did you mean 'label'?)");
  // The matrix takes only axes: `runs` is an option, but not one to sweep.
  const std::string e = error_of("models: [tiny]\nmatrix:\n  runs: 3\n");
  EXPECT_EQ(e.rfind("c.yaml:3:3: matrix: unknown key 'runs'", 0), 0u) << e;
  EXPECT_NE(e.find("batch, prompt_len, max_new_tokens, temperature, attn, dtype"), std::string::npos) << e;
}

TEST(CompareConfig, WrongTypesNameTheKeyPath) {
  EXPECT_EQ(error_of("models: [tiny]\nmatrix:\n  batch: [1, two]\n"),
            "c.yaml:3:14: matrix.batch[1]: expected an integer, got 'two'");
  EXPECT_EQ(error_of("models: [tiny]\ndefaults:\n  runs: 2.5\n"),
            "c.yaml:3:9: defaults.runs: expected an integer, got '2.5'");
  EXPECT_EQ(error_of("models: [tiny]\ndefaults:\n  batch: {a: 1}\n"),
            "c.yaml:3:10: defaults.batch: expected an integer or a list of them, got a mapping");
  EXPECT_EQ(error_of("models: [tiny]\ndefaults:\n  seed: -3\n"),
            "c.yaml:3:9: defaults.seed: expected a non-negative integer, got '-3'");
  EXPECT_EQ(error_of("models: [tiny]\ndefaults:\n  chat: maybe\n"),
            "c.yaml:3:9: defaults.chat: expected true or false, got 'maybe'");
  EXPECT_EQ(error_of("models: tiny\n"), "c.yaml:1:9: models: expected a list of models, got a scalar");
  EXPECT_EQ(error_of("- tiny\n"), "c.yaml:1:1: expected a mapping with 'models:' at the top level, got a list");
}

TEST(CompareConfig, EmptyListsAndMissingModels) {
  EXPECT_EQ(error_of("models: []\n"), "c.yaml:1:9: models: empty list (give at least one model)");
  EXPECT_EQ(error_of("models: [tiny]\nmatrix:\n  attn: []\n"),
            "c.yaml:3:9: matrix.attn: empty list (give at least one value)");
  EXPECT_EQ(error_of("defaults:\n  runs: 3\n"), "c.yaml:1:1: models: missing (list the models to compare)");
  EXPECT_EQ(error_of("models:\n  - label: x\n"), "c.yaml:2:5: models[0].model: missing (preset, directory or HF id)");
}

TEST(CompareConfig, LabelsBaselineAndValidation) {
  EXPECT_EQ(error_of("models: [tiny, tiny]\n"),
            "c.yaml:1:16: models[1]: label 'tiny' is used by two models (give each a distinct 'label:')");
  EXPECT_EQ(error_of("models:\n  - {model: tiny, label: eager}\n  - {model: tiny, label: sdpa}\nbaseline: eagre\n"),
            "c.yaml:4:11: baseline: 'eagre' is not the label of any model (did you mean 'eager'?)");
  EXPECT_EQ(error_of("models:\n  - {model: tiny, runs: 4, trim: 2}\n"),
            "c.yaml:2:5: models[0]: --runs 4 with --trim 2: trimming would drop every run (need runs > 2 * trim)");
  EXPECT_EQ(error_of("models: [tiny]\nmatrix:\n  attn: [eager, flash]\n"),
            "c.yaml:1:10: models[0]: --attn: unknown value 'flash' (expected one of: eager, sdpa)");
}

TEST(CompareConfig, ShippedConfigsParse) {
  const auto dir = std::filesystem::path(LLMBENCH_TEST_DATA).parent_path().parent_path() / "configs";
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().extension() != ".yaml") continue;
    ++n;
    EXPECT_NO_THROW({
      ComparePlan plan = load_compare_config(f.path().string());
      EXPECT_FALSE(plan.models.empty()) << f.path();
    }) << f.path();
  }
  EXPECT_GE(n, 5);
  ComparePlan tiny = load_compare_config((dir / "tiny-ci.yaml").string());
  EXPECT_EQ(tiny.models.at(0).device, "cpu");
  ComparePlan orthogonal = load_compare_config((dir / "orthogonal.yaml").string());
  EXPECT_EQ(expand(orthogonal.models.at(0)).size(), 27u);
}
