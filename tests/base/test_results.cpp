#include <gtest/gtest.h>

#include <filesystem>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/report/results.h"

using namespace llmbench;
using nlohmann::json;

namespace {

RunRecord run(double ttft, double prefill, double tpot, double e2e, std::vector<double> itl) {
  RunRecord r;
  r.ttft_ms = ttft;
  r.prefill_ms = prefill;
  r.tpot_ms = tpot;
  r.e2e_ms = e2e;
  r.itl_ms = std::move(itl);
  r.tokenize_ms = 0.5;
  r.kv_init_ms = 0.25;
  r.decode_ms = tpot * (r.itl_ms.size());
  r.detokenize_ms = 0.1;
  return r;
}

// B = 2 prompts of P = 8 tokens, N = 4 new tokens.
PointResult sample_point() {
  PointResult p;
  p.params.model = "tiny";
  p.params.label = "tiny";
  p.params.batch = 2;
  p.params.prompt_len = 8;
  p.params.max_new_tokens = 4;
  p.params.temperature = 0.7;
  p.params.device = "cpu";
  p.params.seed = 18446744073709551615ULL;
  p.trim = 1;
  p.warmup = 1;
  p.runs = {run(30, 20, 10, 100, {9, 10, 11}), run(32, 25, 12, 125, {12, 12, 12}),
            run(28, 16, 8, 80, {8, 8, 8}), run(40, 40, 20, 200, {20, 20, 20}),
            run(31, 20, 10, 100, {10, 10, 10})};
  p.memory.peak_allocated_bytes = 123456789012ULL;
  p.memory.peak_rss_bytes = 4096;
  p.cold.load_ms = 812.5;
  p.roofline.mbu = 0.61;
  p.paths["cuda_graph"] = false;
  summarize_point(p);
  return p;
}

Results sample_results() {
  Results r;
  r.created_at = "2026-01-02T03:04:05Z";
  r.command = "llmbench run --model tiny";
  r.env = collect_host_env();
  r.env.gpus.push_back({0, "NVIDIA H200", 9, 0, 150ULL << 30, 132});
  r.points.push_back(sample_point());
  PointResult failed;
  failed.params.model = "tiny";
  failed.params.batch = 64;
  failed.status = "failed";
  failed.error = "out of memory: needs 80 GiB, 16 GiB available";
  r.points.push_back(failed);
  return r;
}

std::string error_of(const json& j) {
  try {
    results_from_json(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Results, SummarizePointFromRawRuns) {
  PointResult p = sample_point();
  // e2e sorted: 80 100 100 125 200; trim 1 keeps 100 100 125: median 100.
  EXPECT_DOUBLE_EQ(p.summary.at("e2e_ms").trimmed_median, 100.0);
  EXPECT_DOUBLE_EQ(p.summary.at("e2e_ms").mean, 121.0);
  EXPECT_EQ(p.summary.at("e2e_ms").n, 5);
  // output tok/s = B * N / e2e = 8 / 0.1 s = 80 for the median run; per run 100, 80, 64, 40, 80.
  EXPECT_DOUBLE_EQ(p.summary.at("output_tok_s").trimmed_median, 80.0);
  EXPECT_DOUBLE_EQ(p.summary.at("output_tok_s").max, 100.0);
  // decode tok/s = B / TPOT: 2 / 0.010 s = 200.
  EXPECT_DOUBLE_EQ(p.summary.at("decode_tok_s").trimmed_median, 200.0);
  // prefill tok/s = B * P / prefill = 16 / 0.020 s = 800.
  EXPECT_DOUBLE_EQ(p.summary.at("prefill_tok_s").trimmed_median, 800.0);
  // ITL pools every run's values: 15 of them.
  EXPECT_EQ(p.summary.at("itl_ms").n, 15);
  EXPECT_DOUBLE_EQ(p.summary.at("itl_ms").min, 8.0);
  EXPECT_DOUBLE_EQ(p.summary.at("ttft_ms").trimmed_median, 31.0);
  EXPECT_DOUBLE_EQ(p.stages.prefill_ms, 20.0);
  EXPECT_DOUBLE_EQ(p.stages.decode_ms, 30.0);
  EXPECT_DOUBLE_EQ(p.stages.tokenize_ms, 0.5);
}

TEST(Results, SingleTokenHasNoTpotAndFailedPointsNoSummary) {
  PointResult p;
  p.params.max_new_tokens = 1;
  p.runs = {run(5, 4, 0, 6, {}), run(5, 4, 0, 6, {})};
  summarize_point(p);
  EXPECT_EQ(p.summary.count("tpot_ms"), 0u);
  EXPECT_EQ(p.summary.count("decode_tok_s"), 0u);
  EXPECT_EQ(p.summary.count("itl_ms"), 0u);
  EXPECT_EQ(p.summary.count("ttft_ms"), 1u);
  PointResult failed;
  failed.status = "failed";
  summarize_point(failed);
  EXPECT_TRUE(failed.summary.empty());
}

TEST(Results, JsonHasTheDocumentedShape) {
  json j = to_json(sample_results());
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["interrupted"], false);
  EXPECT_TRUE(j["env"].is_object());
  const json& p = j["points"][0];
  EXPECT_EQ(p["params"]["batch"], 2);
  EXPECT_EQ(p["status"], "ok");
  EXPECT_EQ(p["weights"], "random");
  EXPECT_EQ(p["runs"].size(), 5u);
  EXPECT_EQ(p["runs"][1]["itl_ms"].size(), 3u);
  EXPECT_EQ(p["runs"][0]["ttft_ms"], 30.0);
  for (const char* m : {"ttft_ms", "prefill_ms", "tpot_ms", "e2e_ms", "itl_ms", "output_tok_s", "decode_tok_s",
                        "prefill_tok_s"}) {
    ASSERT_TRUE(p["summary"].contains(m)) << m;
    for (const char* k : {"mean", "std", "min", "max", "p50", "p90", "p95", "p99", "trimmed_median", "cv"})
      EXPECT_TRUE(p["summary"][m][k].is_number()) << m << "." << k;
    EXPECT_EQ(p["summary"][m]["ci95"].size(), 2u);
  }
  EXPECT_EQ(p["memory"]["peak_allocated_bytes"], 123456789012ULL);
  EXPECT_EQ(p["roofline"]["mbu"], 0.61);
  EXPECT_TRUE(p["roofline"]["mfu"].is_null());
  EXPECT_EQ(p["cold"]["load_ms"], 812.5);
  EXPECT_EQ(j["points"][1]["status"], "failed");
}

TEST(Results, RoundTripThroughAFile) {
  Results r = sample_results();
  auto path = (std::filesystem::temp_directory_path() / "llmbench_results_rt.json").string();
  save_results(path, r);
  Results back = load_results(path);
  std::filesystem::remove(path);
  EXPECT_EQ(to_json(back), to_json(r));
  ASSERT_EQ(back.points.size(), 2u);
  EXPECT_EQ(back.points[0].params.seed, 18446744073709551615ULL);
  EXPECT_EQ(back.points[1].error, r.points[1].error);
  EXPECT_EQ(back.env.gpus.at(0).name, "NVIDIA H200");
  // The stored summary equals one recomputed from the stored raw runs.
  PointResult recomputed = back.points[0];
  summarize_point(recomputed);
  EXPECT_EQ(to_json(back).at("points")[0]["summary"], to_json(Results{{}, {}, {}, {}, {recomputed}})["points"][0]["summary"]);
}

// A point with runs and no summary (written by hand, like tests/data/gate/baseline.json): its summary is computed
// from the runs on reading, equal to the one llmbench would have written.
TEST(Results, MissingSummaryIsComputedFromTheRuns) {
  Results r = sample_results();
  json j = to_json(r);
  const json written = j["points"][0]["summary"];
  j["points"][0].erase("summary");
  auto path = (std::filesystem::temp_directory_path() / "llmbench_results_nosummary.json").string();
  write_file_atomic(path, j.dump());
  Results back = load_results(path);
  std::filesystem::remove(path);
  EXPECT_EQ(to_json(back)["points"][0]["summary"], written);
  EXPECT_EQ(to_json(back)["points"][0]["stages"], j["points"][0]["stages"]);  // the stored stages are kept
}

TEST(Results, OutputsAndVerificationRoundTrip) {
  Results r = sample_results();
  r.points[0].outputs.first_run_ids = {{5, 6, 7}, {8, 9, 10}};
  r.points[0].outputs.consistent = false;
  r.points[0].outputs.inconsistent_runs = {3};
  Verification v;
  v.reference = "plain";
  v.tokens = 8;
  v.argmax_equal = 7;
  v.worst_gap = 0.04;
  v.tolerance = 0.1;
  v.ok = true;
  r.points[0].verification = v;
  json j = to_json(r);
  EXPECT_EQ(j["points"][0]["outputs"]["first_run_ids"], json::parse("[[5,6,7],[8,9,10]]"));
  EXPECT_EQ(j["points"][0]["verification"]["argmax_equal"], 7);
  EXPECT_TRUE(j["points"][1]["verification"].is_null());
  EXPECT_TRUE(j["points"][1]["outputs"]["consistent"].is_null());
  Results back = results_from_json(j);
  EXPECT_EQ(to_json(back), j);
  // Files written before these blocks existed still load.
  j["points"][0].erase("outputs");
  j["points"][0].erase("verification");
  EXPECT_FALSE(results_from_json(j).points[0].verification.has_value());
  j = to_json(r);
  j["points"][0]["outputs"]["first_run_ids"][1][0] = "x";
  EXPECT_EQ(error_of(j), "points[0].outputs.first_run_ids[1][0]: expected an integer, got string");
}

TEST(Results, MalformedInputNamesTheJsonPath) {
  json good = to_json(sample_results());
  json j = good;
  j["points"][0]["runs"][2]["ttft_ms"] = "fast";
  EXPECT_EQ(error_of(j), "points[0].runs[2].ttft_ms: expected a number, got string");
  j = good;
  j["points"][0]["runs"][1]["itl_ms"][2] = nullptr;
  EXPECT_EQ(error_of(j), "points[0].runs[1].itl_ms[2]: expected a number, got null");
  j = good;
  j["points"][1]["params"].erase("batch");
  EXPECT_EQ(error_of(j), "points[1].params.batch: missing");
  j = good;
  j["points"][0]["summary"]["e2e_ms"]["ci95"] = {1.0};
  EXPECT_EQ(error_of(j), "points[0].summary.e2e_ms.ci95: expected [lo, hi], got 1 values");
  j = good;
  j["points"] = json::object();
  EXPECT_EQ(error_of(j), "points: expected an array, got object");
  j = good;
  j["points"][0]["status"] = "great";
  EXPECT_EQ(error_of(j), "points[0].status: expected ok, failed, skipped or interrupted, got 'great'");
  EXPECT_EQ(error_of(json::array()), "expected a JSON object at the top level, got array");
  // Negative durations and sizes are corrupt, not measurements (the gate called -100 % an improvement).
  j = good;
  j["points"][0]["runs"][3]["e2e_ms"] = -5.0;
  EXPECT_EQ(error_of(j), "points[0].runs[3].e2e_ms: expected a number >= 0, got -5");
  j = good;
  j["points"][0]["runs"][0]["itl_ms"][1] = -0.5;
  EXPECT_EQ(error_of(j), "points[0].runs[0].itl_ms[1]: expected a number >= 0, got -0.5");
  j = good;
  j["points"][0]["runs"][0]["decode_ms"] = -1;
  EXPECT_EQ(error_of(j), "points[0].runs[0].decode_ms: expected a number >= 0, got -1");
  j = good;
  j["points"][1]["params"]["batch"] = -1;
  EXPECT_EQ(error_of(j), "points[1].params.batch: expected a non-negative integer, got -1");
  j = good;
  j["points"][0]["runs"][0]["tpot_ms"] = 0;  // zero is a value (one new token has no TPOT)
  EXPECT_EQ(error_of(j), "(no error)");
}

TEST(Results, SchemaVersionIsChecked) {
  json j = to_json(sample_results());
  j["schema_version"] = 2;
  EXPECT_EQ(error_of(j), "schema_version 2 is not supported (this llmbench reads version 1)");
  j.erase("schema_version");
  EXPECT_EQ(error_of(j), "schema_version: missing (is this an llmbench results file?)");
}

TEST(Results, LoadNamesTheFile) {
  auto path = (std::filesystem::temp_directory_path() / "llmbench_results_bad.json").string();
  write_file_atomic(path, "{\"schema_version\": 1, \"points\": [");
  try {
    load_results(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": not valid JSON", 0), 0u) << e.what();
  }
  write_file_atomic(path, std::string("\x1f\x8b\x08\x00rest of a gzip stream", 24));
  try {
    load_results(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": is gzip-compressed: decompress it first (gunzip -k " + path + ")");
  }
  write_file_atomic(path, "{\"schema_version\": 1, \"env\": {}, \"points\": [{\"params\": 3}]}");
  try {
    load_results(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": points[0].params: expected an object, got number");
  }
  std::filesystem::remove(path);
}
