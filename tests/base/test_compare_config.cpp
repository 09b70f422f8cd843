#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

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

TEST(CompareConfig, DuplicateKeysAreRefusedAtEveryLevel) {
  // yaml-cpp keeps both copies and a lookup finds the first: a second `defaults:` was dropped without a word.
  EXPECT_EQ(error_of("models: [tiny]\ndefaults:\n  runs: 3\ndefaults:\n  runs: 4\n"), "c.yaml:4:1: defaults: duplicate key");
  EXPECT_EQ(error_of("models: [tiny]\nmodels: [tiny]\n"), "c.yaml:2:1: models: duplicate key");
  EXPECT_EQ(error_of("models: [tiny]\ndefaults:\n  batch: 1\n  batch: 2\n"), "c.yaml:4:3: defaults.batch: duplicate key");
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
  // A bad named value is located where it is written, not at the model entry that inherits it.
  EXPECT_EQ(error_of("models: [tiny]\nmatrix:\n  attn: [eager, flash]\n"),
            "c.yaml:3:9: matrix.attn: unknown value 'flash' (expected one of: eager, sdpa)");
  EXPECT_EQ(error_of("models: [tiny]\ndefaults:\n  weights: int4\n"),
            "c.yaml:3:12: defaults.weights: unknown value 'int4' (expected one of: bf16, int8, fp8)");
  EXPECT_EQ(error_of("defaults:\n  kv_dtype: [bf16, int8]\nmodels: [tiny]\n"),
            "c.yaml:2:13: defaults.kv_dtype: unknown value 'int8' (expected one of: bf16, fp8)");
  // A value given twice too (it used to be reported at models[0], with the flag's name).
  EXPECT_EQ(error_of("models: [tiny]\nmatrix:\n  weights: [bf16, int8, bf16]\n"),
            "c.yaml:3:12: matrix.weights: bf16 is given twice");
  EXPECT_EQ(error_of("defaults:\n  kv_dtype: [bf16, bf16]\nmodels: [tiny]\n"),
            "c.yaml:2:13: defaults.kv_dtype: bf16 is given twice");
  EXPECT_EQ(error_of("models:\n  - {model: tiny, batch: [1, 2, 1]}\n"),
            "c.yaml:2:26: models[0].batch: 1 is given twice");
  EXPECT_EQ(error_of("models:\n  - {model: tiny, fp8_gemm: fast}\n"),
            "c.yaml:2:29: models[0].fp8_gemm: unknown value 'fast' (expected one of: dequant, scaled-mm)");
}

TEST(CompareConfig, EndpointEntriesAreLoadTargets) {
  ComparePlan plan = parse_compare_config(R"(
defaults:
  seed: 5
  runs: 5
  trim: 1
  concurrency: [1, 4]
  input_len: 32
  output_len: 8
  num_requests: 16
models:
  - tiny
  - endpoint: http://127.0.0.1:8000
    label: engine-a
    api: chat
    slo: {ttft_ms: 500, tpot_ms: 50}
    header: "X-Team: bench"  # quoted: KEY:VALUE
  - endpoint: http://127.0.0.1:8001
    model: served-name
    concurrency: 2
    request_rate: [1.5, 3]
    arrival: gamma:0.5
    slo: e2e_ms=900
    header: {A: 1, B: "2"}
    api_key: secret
    timeout_s: 10
    warmup_requests: 2
    range_ratio: 0.25
    max_concurrency: 3
    extra_body: '{"top_k": 5}'
baseline: engine-a
)",
                                          "c.yaml");
  ASSERT_EQ(plan.models.size(), 1u);
  EXPECT_EQ(plan.models[0].seed, 5u);  // seed applies to both kinds
  EXPECT_EQ(plan.models[0].runs, 5);
  ASSERT_EQ(plan.loads.size(), 2u);
  EXPECT_EQ(plan.baseline, "engine-a");
  const LoadOptions& a = plan.loads[0].options;
  EXPECT_EQ(plan.loads[0].where, "c.yaml:12:5: models[1]");
  EXPECT_EQ(a.endpoint, "http://127.0.0.1:8000");
  EXPECT_EQ(a.label, "engine-a");
  EXPECT_EQ(a.model, "");  // asked of the server
  EXPECT_EQ(a.api, "chat");
  EXPECT_EQ(a.concurrency, (std::vector<int>{1, 4}));  // from defaults
  EXPECT_EQ(a.input_len, 32);
  EXPECT_EQ(a.output_len, 8);
  EXPECT_EQ(a.num_requests, 16);
  EXPECT_EQ(a.seed, 5u);
  EXPECT_EQ(a.slo, "ttft_ms=500,tpot_ms=50");
  EXPECT_EQ(a.headers, (std::vector<std::string>{"X-Team: bench"}));
  EXPECT_EQ(a.timeout_s, 60);  // built-in default of `llmbench load`
  EXPECT_EQ(a.arrival, "poisson");
  const LoadOptions& b = plan.loads[1].options;
  EXPECT_EQ(b.label, "http://127.0.0.1:8001");  // no label: the endpoint
  EXPECT_EQ(b.model, "served-name");
  EXPECT_EQ(b.concurrency, (std::vector<int>{2}));  // the entry beats defaults
  EXPECT_EQ(b.request_rate, (std::vector<double>{1.5, 3}));
  EXPECT_EQ(b.arrival, "gamma:0.5");
  EXPECT_EQ(b.slo, "e2e_ms=900");
  EXPECT_EQ(b.headers, (std::vector<std::string>{"A: 1", "B: 2"}));
  EXPECT_EQ(b.api_key, "secret");
  EXPECT_EQ(b.timeout_s, 10);
  EXPECT_EQ(b.warmup_requests, 2);
  EXPECT_EQ(b.range_ratio, 0.25);
  EXPECT_EQ(b.max_concurrency, 3);
  EXPECT_EQ(b.extra_body, R"({"top_k": 5})");
  // A search target.
  const ComparePlan searched = parse_compare_config(
      "models:\n  - {endpoint: 'http://127.0.0.1:8000', slo: ttft_ms=500, search: 'rate:1:32', search_goodput: 0.9, "
      "search_steps: 4}\n",
      "c.yaml");
  EXPECT_EQ(searched.loads.at(0).options.search, "rate:1:32");
  EXPECT_EQ(searched.loads.at(0).options.search_goodput, 0.9);
  EXPECT_EQ(searched.loads.at(0).options.search_steps, 4);
  // (`llmbench load`'s own checks run in `compare`, before anything is sent: tests/cli/compare_load.sh.)
  EXPECT_EQ(a.range_ratio, 0);
}

TEST(CompareConfig, EndpointEntryErrors) {
  // Run options do not belong in a load target, nor load options in a model entry.
  EXPECT_EQ(error_of("models:\n  - endpoint: http://127.0.0.1:8000\n    batch: 4\n"),
            "c.yaml:3:5: models[0].batch: 'batch' is an option of `llmbench run`; an entry with 'endpoint:' is a "
            "load target and takes the options of `llmbench load` (docs/config.md)");
  EXPECT_EQ(error_of("models:\n  - model: tiny\n    concurrency: 4\n"),
            "c.yaml:3:5: models[0].concurrency: 'concurrency' is an option of `llmbench load`: only an entry with "
            "'endpoint:' takes it");
  EXPECT_EQ(error_of("models:\n  - endpoint: http://h:1\n    concurency: 4\n"),
            "c.yaml:3:5: models[0]: unknown key 'concurency' (did you mean 'concurrency'?)");
  EXPECT_EQ(error_of("models:\n  - endpoint: http://h:1\n    num-requests: 4\n"),
            "c.yaml:3:5: models[0]: unknown key 'num-requests' (did you mean 'num_requests'?)");
  EXPECT_EQ(error_of("models: [tiny]\ndefaults:\n  input-len: 5\n"),
            "c.yaml:3:3: defaults: unknown key 'input-len' (did you mean 'input_len'?)");
  EXPECT_EQ(error_of("models:\n  - endpoint: http://h:1\n    concurrency: [1, many]\n"),
            "c.yaml:3:22: models[0].concurrency[1]: expected an integer, got 'many'");
  EXPECT_EQ(error_of("models:\n  - endpoint: http://h:1\n    slo: {ttft_ms: fast}\n"),
            "c.yaml:3:20: models[0].slo.ttft_ms: expected a number, got 'fast'");
  const std::string slo = error_of("models:\n  - endpoint: http://h:1\n    slo: ttft=5\n");
  EXPECT_EQ(slo.rfind("c.yaml:3:10: models[0].slo: ", 0), 0u) << slo;
  EXPECT_NE(slo.find("ttft"), std::string::npos) << slo;
  EXPECT_EQ(error_of("models:\n  - endpoint: ''\n"),
            "c.yaml:2:5: models[0].endpoint: empty (give the server's base URL)");
  // 0 stands for "not given" inside LoadOptions: written in the file, it is a mistake.
  EXPECT_EQ(error_of("models:\n  - endpoint: http://h:1\n    duration: 0\n"),
            "c.yaml:3:15: models[0].duration: must be positive, got 0");
  EXPECT_EQ(error_of("models:\n  - endpoint: http://h:1\n    num_requests: 0\n"),
            "c.yaml:3:19: models[0].num_requests: must be positive, got 0");
  // Labels are distinct across both kinds; two entries for one endpoint need labels.
  EXPECT_EQ(error_of("models:\n  - endpoint: http://h:1\n  - endpoint: http://h:1\n"),
            "c.yaml:3:5: models[1]: label 'http://h:1' is used by two models (give each a distinct 'label:')");
  EXPECT_EQ(error_of("models:\n  - tiny\n  - {endpoint: http://h:1, label: tiny}\n"),
            "c.yaml:3:5: models[1]: label 'tiny' is used by two models (give each a distinct 'label:')");
  EXPECT_EQ(error_of("models:\n  - {endpoint: http://h:1, label: engine-a}\nbaseline: engine-b\n"),
            "c.yaml:3:11: baseline: 'engine-b' is not the label of any model (did you mean 'engine-a'?)");
}

TEST(CompareConfig, EndpointPathsAreRelativeToTheFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("llmbench_cc_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "c.yaml";
  {
    std::ofstream f(file);
    f << "models:\n"
         "  - {endpoint: https://h:1, label: a, dataset: jsonl:prompts.jsonl, tokenizer: tok/tokenizer.json, ca_cert: ca.pem}\n"
         "  - {endpoint: https://h:2, label: b, dataset: sharegpt:/abs/sg.json, tokenizer: tiny, insecure: true}\n"
         "  - {endpoint: http://h:3, label: c, cancel_rate: 12.5, cancel_delay_ms: 300, slice_s: 30}\n"
         "  - {endpoint: http://h:4, label: d, dataset: trace:traces/t.jsonl, trace_speedup: 4, trace_block_size: 16,"
         " turns: 3, turn_delay_ms: 250, turns_stddev: 1.5, turn_delay_stddev_ms: 80}\n";
  }
  ComparePlan plan = load_compare_config(file.string());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(plan.loads.size(), 4u);
  EXPECT_EQ(plan.loads[3].options.dataset, "trace:" + (dir / "traces/t.jsonl").string());
  EXPECT_EQ(plan.loads[3].options.trace_speedup, 4);
  EXPECT_EQ(plan.loads[3].options.trace_block_size, 16);
  EXPECT_EQ(plan.loads[3].options.turns, 3);
  EXPECT_EQ(plan.loads[3].options.turn_delay_ms, 250);
  EXPECT_EQ(plan.loads[3].options.turns_stddev, 1.5);
  EXPECT_EQ(plan.loads[2].options.cancel_rate, 12.5);
  EXPECT_EQ(plan.loads[2].options.cancel_delay_ms, 300);
  EXPECT_EQ(plan.loads[2].options.slice_s, 30);
  EXPECT_EQ(plan.loads[3].options.turn_delay_stddev_ms, 80);
  EXPECT_EQ(plan.loads[0].options.dataset, "jsonl:" + (dir / "prompts.jsonl").string());
  EXPECT_EQ(plan.loads[0].options.tokenizer, (dir / "tok/tokenizer.json").string());
  EXPECT_EQ(plan.loads[0].options.ca_cert, (dir / "ca.pem").string());
  EXPECT_FALSE(plan.loads[0].options.insecure);
  EXPECT_TRUE(plan.loads[1].options.insecure);
  EXPECT_EQ(plan.loads[1].options.ca_cert, "");
  EXPECT_EQ(plan.loads[1].options.dataset, "sharegpt:/abs/sg.json");
  EXPECT_EQ(plan.loads[1].options.tokenizer, "tiny");
  EXPECT_EQ(plan.loads[2].options.dataset, "synthetic");
  EXPECT_EQ(plan.loads[2].options.tokenizer, "");
}

TEST(CompareConfig, ShippedConfigsParse) {
  const auto dir = std::filesystem::path(LLMBENCH_TEST_DATA).parent_path().parent_path() / "configs";
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().extension() != ".yaml") continue;
    ++n;
    EXPECT_NO_THROW({
      ComparePlan plan = load_compare_config(f.path().string());
      EXPECT_FALSE(plan.models.empty() && plan.loads.empty()) << f.path();
    }) << f.path();
  }
  EXPECT_GE(n, 5);
  ComparePlan tiny = load_compare_config((dir / "tiny-ci.yaml").string());
  EXPECT_EQ(tiny.models.at(0).device, "cpu");
  ComparePlan orthogonal = load_compare_config((dir / "orthogonal.yaml").string());
  EXPECT_EQ(expand(orthogonal.models.at(0)).size(), 27u);
}

// `weights:` is a sweep axis (defaults, matrix or per model); gemv and fp8_gemm are per-model scalars.
TEST(CompareConfig, WeightsAxisAndQuantOptions) {
  ComparePlan plan = parse_compare_config(R"(
defaults:
  device: cpu
matrix:
  weights: [bf16, int8]
models:
  - tiny
  - model: qwen2.5-7b
    weights: fp8
    fp8_gemm: scaled-mm
    gemv: true
)",
                                          "c.yaml");
  ASSERT_EQ(plan.models.size(), 2u);
  EXPECT_EQ(plan.models[0].weights, (std::vector<std::string>{"bf16", "int8"}));
  EXPECT_FALSE(plan.models[0].gemv.has_value());  // not given: on (docs/quantization.md)
  EXPECT_EQ(plan.models[1].weights, (std::vector<std::string>{"fp8"}));
  EXPECT_EQ(plan.models[1].fp8_gemm, "scaled-mm");
  EXPECT_EQ(plan.models[1].gemv, std::optional<bool>(true));
  const auto points = expand(plan.models[0]);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].weights, "int8");
  EXPECT_TRUE(points[0].gemv);  // bf16: the kernel where it beats cuBLAS (one row of gate_up / lm_head)
  EXPECT_TRUE(points[1].gemv);  // int8: the GEMV kernel, not a dequantize + matmul per step
  RunOptions off = plan.models[0];
  off.gemv = false;  // --no-gemv / gemv: false wins for every weight format
  for (const PointParams& p : expand(off)) EXPECT_FALSE(p.gemv);
  EXPECT_THROW(parse_compare_config("models:\n  - model: tiny\n    weights: int4\n", "c.yaml"), UsageError);
}

// kv_dtype: a matrix axis and a per-model option, crossed with weights; bad values are UsageErrors.
TEST(CompareConfig, KvDtypeAxis) {
  ComparePlan plan = parse_compare_config(R"(
defaults:
  device: cuda
matrix:
  kv_dtype: [bf16, fp8]
  weights: [bf16, int8]
models:
  - tiny
  - model: qwen2.5-7b
    kv_dtype: fp8
)",
                                          "c.yaml");
  ASSERT_EQ(plan.models.size(), 2u);
  EXPECT_EQ(plan.models[0].kv_dtype, (std::vector<std::string>{"bf16", "fp8"}));
  EXPECT_EQ(plan.models[1].kv_dtype, (std::vector<std::string>{"fp8"}));
  const auto points = expand(plan.models[0]);
  ASSERT_EQ(points.size(), 4u);  // weights outer, kv_dtype inner
  EXPECT_EQ(points[0].weights, "bf16");
  EXPECT_EQ(points[0].kv_dtype, "bf16");
  EXPECT_EQ(points[1].kv_dtype, "fp8");
  EXPECT_EQ(points[3].weights, "int8");
  EXPECT_EQ(points[3].kv_dtype, "fp8");
  EXPECT_THROW(parse_compare_config("models:\n  - model: tiny\n    kv_dtype: int8\n", "c.yaml"), UsageError);
  EXPECT_THROW(parse_compare_config("matrix:\n  kv_dtype: fp16\nmodels:\n  - tiny\n", "c.yaml"), UsageError);
}

// Documents are counted on the text (yaml-cpp's LoadAll can loop forever on malformed input): a leading
// `---` starts the first; any other starts a second, which is refused rather than ignored.
TEST(CompareConfig, OneYamlDocument) {
  EXPECT_NO_THROW(require_one_yaml_document("# comment\n---\nmodels: []\n", "c.yaml"));
  EXPECT_NO_THROW(require_one_yaml_document("models:\n  - {model: tiny, label: '---'}\n----\n", "c.yaml"));
  EXPECT_NO_THROW(require_one_yaml_document("", "c.yaml"));
  try {
    require_one_yaml_document("models: []\n--- # next\nmodels: []\n---\n", "c.yaml");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "c.yaml: 3 YAML documents (separated by ---); expected one");
  }
  // The input on which LoadAll never returned: one document, parsed (and refused for what it says) at once.
  const std::string fuzzed = "# The seed s|udy: theCthrel: deepseek-r1-7b\n  , model: llama-gs/seed-compigs/seed-comparison.yen"
                             "2.5-6]\n  max_\x8anew_tokens: [51\nbaseline: llama-3-8b\n";
  EXPECT_THROW(parse_compare_config(fuzzed, "f.yaml"), UsageError);
}

// Keys that exclude each other: an entry's own key replaces the other one set by `defaults:`; both in one mapping
// are still refused.
TEST(CompareConfig, AnEntrysKeyReplacesTheExclusiveKeyOfDefaults) {
  const ComparePlan run = parse_compare_config(
      "defaults: {prompt_file: p.txt}\nmodels:\n  - {model: tiny, prompt: hello}\n  - {model: tiny, label: b}\n", "c.yaml");
  ASSERT_EQ(run.models.size(), 2u);
  EXPECT_EQ(run.models[0].prompt.value_or(""), "hello");
  EXPECT_FALSE(run.models[0].prompt_file.has_value());
  EXPECT_FALSE(run.models[1].prompt.has_value());
  EXPECT_EQ(run.models[1].prompt_file.value_or(""), "p.txt");  // (resolved against the YAML's folder: none here)
  EXPECT_NE(error_of("models:\n  - {model: tiny, prompt: a, prompt_file: p.txt}\n").find("give only one"), std::string::npos);
  // Both in `defaults:`: refused there, not at the first entry that inherits them.
  EXPECT_EQ(error_of("defaults:\n  prompt: a\n  prompt_file: p.txt\nmodels:\n  - {model: tiny, label: x}\n"),
            "c.yaml:3:16: defaults.prompt_file: prompt and prompt_file: give only one");

  const ComparePlan load = parse_compare_config(
      "defaults: {num_requests: 50, concurrency: 4}\nmodels:\n"
      "  - {endpoint: 'http://h:1', duration: 10, request_rate: 2}\n  - {endpoint: 'http://h:2'}\n",
      "c.yaml");
  ASSERT_EQ(load.loads.size(), 2u);
  const LoadOptions& a = load.loads[0].options;
  EXPECT_EQ(a.num_requests, 0);
  EXPECT_EQ(a.duration_s, 10);
  EXPECT_TRUE(a.concurrency.empty());
  EXPECT_EQ(a.request_rate, std::vector<double>{2});
  const LoadOptions& b = load.loads[1].options;
  EXPECT_EQ(b.num_requests, 50);
  EXPECT_EQ(b.concurrency, std::vector<int>{4});
  // Both in one entry: both kept, for `compare`'s check of every target (load's validate()) to refuse.
  const LoadOptions both =
      parse_compare_config("models:\n  - {endpoint: 'http://h:1', duration: 10, num_requests: 5}\n", "c.yaml").loads[0].options;
  EXPECT_EQ(both.num_requests, 5);
  EXPECT_EQ(both.duration_s, 10);
}

// Where each model entry is, for the checks compare makes after parsing (check_runnable, tp, prompt_file).
TEST(CompareConfig, EachModelEntryHasItsLocation) {
  const ComparePlan plan = parse_compare_config(
      "models:\n  - tiny\n  - {endpoint: 'http://h:1'}\n  - model: tiny\n    label: c\n", "c.yaml");
  ASSERT_EQ(plan.model_where.size(), 2u);
  EXPECT_EQ(plan.model_where[0], "c.yaml:2:5: models[0] (tiny)");
  EXPECT_EQ(plan.model_where[1], "c.yaml:4:5: models[2] (c)");
}
