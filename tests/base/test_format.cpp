#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "llmbench/base/error.h"
#include "llmbench/report/format.h"

using namespace llmbench;
using nlohmann::json;

namespace {

// A point whose every run has the given e2e / ttft / tpot, so trimmed medians are those values.
PointResult point(const std::string& label, int batch, double ttft, double tpot, double e2e,
                  std::uint64_t peak_bytes) {
  PointResult p;
  p.params.model = "org/" + label;
  p.params.label = label;
  p.params.batch = batch;
  p.params.prompt_len = 16;
  p.params.max_new_tokens = 8;
  p.params.dtype = "float32";
  p.trim = 1;
  for (int i = 0; i < 5; ++i) {
    RunRecord r;
    r.ttft_ms = ttft;
    r.prefill_ms = ttft / 2;
    r.tpot_ms = tpot;
    r.e2e_ms = e2e;
    r.itl_ms.assign(7, tpot);
    p.runs.push_back(r);
  }
  p.memory.peak_rss_bytes = peak_bytes;
  summarize_point(p);
  return p;
}

Results two_models() {
  Results r;
  r.points = {point("base", 1, 10, 5, 50, 1ULL << 30), point("base", 2, 20, 6, 80, 3ULL << 29),
              point("fast", 1, 5, 4, 40, 1ULL << 29), point("fast", 2, 10, 3, 40, 3ULL << 29)};
  PointResult failed;
  failed.params.label = "fast";
  failed.params.batch = 64;
  failed.status = "failed";
  failed.error = "out of memory, needs 80 GiB";
  r.points.push_back(failed);
  return r;
}

// A load point of `n` requests that each take `ttft` to the first of 4 tokens, then `itl` per token.
PointResult load_point(const std::string& label, int concurrency, double ttft, double itl, int n = 6) {
  PointResult p;
  p.mode = "load";
  p.params.model = "served";
  p.params.label = label;
  p.params.batch = concurrency;
  p.params.prompt_len = 32;
  p.params.max_new_tokens = 4;
  LoadResult l;
  l.endpoint = "http://127.0.0.1:1";
  l.concurrency = concurrency;
  l.num_requests = n;
  for (int i = 0; i < n; ++i) {
    RequestRecord r;
    r.ok = true;
    r.start_ms = i * (ttft + 3 * itl);
    r.scheduled_ms = r.start_ms;
    r.ttft_ms = ttft;
    r.itl_ms.assign(3, itl);
    r.e2e_ms = ttft + 3 * itl;
    r.prompt_tokens = 32;
    r.output_tokens = 4;
    l.requests.push_back(r);
  }
  p.load = std::move(l);
  summarize_point(p);
  return p;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST(Format, ParseFormat) {
  EXPECT_EQ(parse_format("md"), Format::md);
  EXPECT_THROW(parse_format("xml"), UsageError);
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(3ULL << 29), "1.50 GiB");
  EXPECT_EQ(format_bytes(12ULL << 20), "12.0 MiB");
}

TEST(Format, TableHasOneAlignedRowPerPoint) {
  auto out = lines(format_results(two_models(), Format::table));
  ASSERT_EQ(out.size(), 2u + 5u);
  EXPECT_EQ(out[0].find("model"), 0u);
  for (const char* h : {"TTFT ms", "out tok/s", "peak mem", "TPOT ms", "e2e ms", "CV", "status"})
    EXPECT_NE(out[0].find(h), std::string::npos) << h;
  // Right-aligned numbers end in the same column as their header.
  const auto ttft_end = out[0].find("TTFT ms") + 7;
  EXPECT_EQ(out[2].substr(ttft_end - 5, 5), "10.00");
  // output tok/s = B * N / e2e = 1 * 8 / 0.05 s = 160.
  EXPECT_NE(out[2].find("160.0"), std::string::npos);
  EXPECT_NE(out[2].find("1.00 GiB"), std::string::npos);
  EXPECT_NE(out[2].find("0.0%"), std::string::npos);
  EXPECT_NE(out[6].find("failed: out of memory, needs 80 GiB"), std::string::npos);
}

TEST(Format, OneRunHasNoCv) {
  // One value has no spread: the CV is undefined, shown n/a (empty in csv), not 0.0 %.
  Results r;
  r.points = {point("one", 1, 10, 5, 50, 1ULL << 30)};
  r.points[0].runs.resize(1);
  r.points[0].trim = 0;
  summarize_point(r.points[0]);
  auto out = lines(format_results(r, Format::table));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_NE(out[2].find("n/a"), std::string::npos) << out[2];
  EXPECT_EQ(out[2].find("%"), std::string::npos) << out[2];
  auto csv = lines(format_results(r, Format::csv));
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_NE(csv[1].find(",5.0,50.0,,"), std::string::npos) << csv[1];
}

TEST(Format, CsvAndJsonCarryRawNumbers) {
  auto csv = lines(format_results(two_models(), Format::csv));
  ASSERT_EQ(csv.size(), 6u);
  EXPECT_EQ(csv[0], "model,batch,prompt_len,max_new_tokens,temperature,attn,dtype,weights,kv_dtype,ttft_ms,output_tok_s,"
                    "peak_memory_bytes,tpot_ms,e2e_ms,max_cv,verified,top1_agreement,logits_rel_err,"
                    "kl_divergence_mean,status,error");
  // Not verified: an empty cell (null in json).
  EXPECT_EQ(csv[1], "base,1,16,8,0.0,eager,float32,fp32,fp32,10.0,160.0,1073741824,5.0,50.0,0.0,,,,,ok,");
  EXPECT_EQ(csv[5], "fast,64,1,1,0.0,eager,bfloat16,bf16,bf16,,,,,,,,,,,failed,\"out of memory, needs 80 GiB\"");
  json j = json::parse(format_results(two_models(), Format::json));
  ASSERT_EQ(j.size(), 5u);
  EXPECT_EQ(j[3]["output_tok_s"], 2 * 8 / 0.04);
  EXPECT_TRUE(j[4]["ttft_ms"].is_null());
  EXPECT_EQ(j[4]["error"], "out of memory, needs 80 GiB");
}

TEST(Format, CsvOfRunAndLoadPointsIsOneTable) {
  // compare with model and endpoint entries: one header (a mode column, then both column sets), each row
  // filling its own mode's columns; before, two tables with a blank line between.
  Results r;
  r.points = {point("tiny", 1, 10, 5, 50, 1), load_point("served", 4, 20, 5)};
  auto csv = lines(format_results(r, Format::csv));
  ASSERT_EQ(csv.size(), 3u) << format_results(r, Format::csv);
  auto fields = [](const std::string& line) { return std::count(line.begin(), line.end(), ',') + 1; };
  EXPECT_EQ(csv[0].rfind("mode,model,batch,", 0), 0u) << csv[0];
  EXPECT_EQ(csv[0].find(",model,", 5), std::string::npos) << "a shared column twice: " << csv[0];
  EXPECT_EQ(csv[1].rfind("run,tiny,1,", 0), 0u) << csv[1];
  EXPECT_EQ(csv[2].rfind("load,served,", 0), 0u) << csv[2];
  EXPECT_EQ(fields(csv[1]), fields(csv[0]));
  EXPECT_EQ(fields(csv[2]), fields(csv[0]));
  // Each row's TTFT sits under the one ttft_ms header.
  std::vector<std::string> header, run_row, load_row;
  auto split = [](const std::string& line) {
    std::vector<std::string> out(1);
    for (char ch : line) {
      if (ch == ',') out.emplace_back();
      else out.back().push_back(ch);
    }
    return out;
  };
  header = split(csv[0]), run_row = split(csv[1]), load_row = split(csv[2]);
  const auto ttft = std::find(header.begin(), header.end(), "ttft_ms") - header.begin();
  const auto load_ttft = std::find(header.begin(), header.end(), "ttft_p50_ms") - header.begin();
  ASSERT_LT(std::size_t(load_ttft), header.size());
  EXPECT_EQ(run_row[ttft], "10.0");
  EXPECT_EQ(load_row[ttft], "");
  EXPECT_EQ(run_row[load_ttft], "");
  EXPECT_EQ(load_row[load_ttft], "20.0");
  const auto model = std::find(header.begin(), header.end(), "model") - header.begin();  // shared: one column
  EXPECT_EQ(run_row[model], "tiny");
  EXPECT_EQ(load_row[model], "served");
}

TEST(Format, LoadPointsInCsvAndJsonKeepCapPartialAndSearch) {
  // The table says "≤2", "ok (interrupted)" and the search summary; csv and json lost all three.
  Results r;
  r.points = {load_point("capped", 0, 20, 5), load_point("probe", 0, 20, 5)};
  r.points[0].load->request_rate = 20;
  r.points[0].load->max_concurrency = 2;
  r.points[0].load->partial = true;
  r.points[1].load->request_rate = 40;
  r.points[1].load->search = SearchProbe{"request_rate", 0.95, false, false};
  const json j = json::parse(format_results(r, Format::json));
  EXPECT_EQ(j[0]["max_concurrency"], 2);
  EXPECT_EQ(j[0]["partial"], true);
  EXPECT_TRUE(j[0]["search_passed"].is_null());
  EXPECT_TRUE(j[1]["max_concurrency"].is_null());
  EXPECT_EQ(j[1]["partial"], false);
  EXPECT_EQ(j[1]["search_passed"], false);
  auto csv = lines(format_results(r, Format::csv));
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_NE(csv[0].find(",max_concurrency,partial,search_passed"), std::string::npos) << csv[0];
  EXPECT_NE(csv[1].find(",2,true,"), std::string::npos) << csv[1];
  const std::string table = format_results(r, Format::table);
  EXPECT_EQ(table.find("search_passed"), std::string::npos);  // the table shows them its own way
}

TEST(Format, FailedLoadPointsSayWhyInCsvAndJson) {
  // The table's status cell had the message; csv and json rows of load points had no error column.
  Results r;
  r.points = {load_point("down", 0, 20, 5), load_point("up", 0, 20, 5)};
  r.points[0].status = "failed";
  r.points[0].error = "every request failed (connect: 20)";
  const json j = json::parse(format_results(r, Format::json));
  EXPECT_EQ(j[0]["error"], "every request failed (connect: 20)");
  EXPECT_EQ(j[1]["error"], "");
  auto csv = lines(format_results(r, Format::csv));
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_NE(csv[0].find(",status,error,max_concurrency,"), std::string::npos) << csv[0];
  EXPECT_NE(csv[1].find(",failed,every request failed (connect: 20),"), std::string::npos) << csv[1];
  const std::string table = format_results(r, Format::table);
  EXPECT_EQ(table.find("error"), std::string::npos);  // the status cell shows it
  EXPECT_NE(table.find("failed: every request failed (connect: 20)"), std::string::npos);
}

TEST(Format, MarkdownEscapesPipes) {
  Results r = two_models();
  r.points[4].error = "a|b";
  auto md = lines(format_results(r, Format::md));
  ASSERT_EQ(md.size(), 7u);
  EXPECT_EQ(md[1].substr(0, 19), "| --- | ---: | ---:");
  EXPECT_NE(md[6].find("failed: a\\|b"), std::string::npos);
  // Emphasis, code spans and HTML tags in a label stay text.
  r.points[0].params.label = "*a* `b` <i>c</i>";
  md = lines(format_results(r, Format::md));
  EXPECT_NE(md[2].find("\\*a\\* \\`b\\` \\<i>c\\</i>"), std::string::npos) << md[2];
}

TEST(Format, ControlCharactersInLabelsAreEscapedInTables) {
  // run --label $'a\nb\x1b[31m': a line break would split the row, ESC would recolour the terminal.
  Results r = two_models();
  r.points.resize(1);
  r.points[0].params.label = "a\nb\x1b[31m";
  for (Format f : {Format::table, Format::md}) {
    const std::string out = format_results(r, f);
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
    EXPECT_NE(out.find("a\\nb\\x1b[31m"), std::string::npos) << out;
    EXPECT_EQ(lines(out).size(), 3u) << out;  // header, rule, one row
  }
  // csv and json keep the value itself (quoted or escaped by their own rules).
  EXPECT_NE(format_results(r, Format::json).find("a\\nb\\u001b[31m"), std::string::npos);
}

TEST(Format, HugeValuesAreScientificNotTruncatedDigits) {
  Results r = two_models();
  r.points[0] = point("base", 1, 1e150, 5, 50, 1ULL << 30);
  for (Format f : {Format::table, Format::md}) {
    auto out = lines(format_results(r, f));
    EXPECT_NE(out.at(2).find("1e+150"), std::string::npos) << out.at(2);  // header, rule, first point
  }
}

TEST(Format, SearchSummaryAndFailedProbes) {
  Results r;
  auto probe = [](double rate, bool passed, bool best, const std::string& status = "ok") {
    PointResult p = load_point("eng", 0, 20, 5);
    p.load->concurrency = 0;
    p.load->request_rate = rate;
    p.load->slo.ttft_ms = 500;
    p.load->search = SearchProbe{"request_rate", 0.95, passed, best};
    p.status = status;
    return p;
  };
  r.points = {probe(1, true, false), probe(64, false, false, "failed"), probe(8, true, true), probe(22.6, false, false)};
  EXPECT_EQ(search_summaries(r), std::vector<std::string>{
      "eng: highest request rate with goodput >= 95.0% under ttft_ms=500: 8/s (22.6/s missed); 4 probes"});
  EXPECT_FALSE(any_point_failed(r));  // 64/s failing outright is the overload the search found
  r.points = {probe(1, false, false, "failed")};
  EXPECT_TRUE(any_point_failed(r));   // nothing ever passed: the endpoint may be wrong
  EXPECT_EQ(search_summaries(r), std::vector<std::string>{
      "eng: highest request rate with goodput >= 95.0% under ttft_ms=500: none (the lowest probe, 1/s, missed); 1 probe"});
  r.points = {probe(1, true, false), probe(64, true, true)};
  EXPECT_EQ(search_summaries(r), std::vector<std::string>{
      "eng: highest request rate with goodput >= 95.0% under ttft_ms=500: 64/s (the upper bound met it: search "
      "higher); 2 probes"});
  EXPECT_TRUE(any_point_failed(two_models()));  // an ordinary failed point still fails the command
  // Interrupted during its first probe: neither an answer nor a miss.
  r.points = {probe(1, false, false)};
  r.points[0].load->partial = true;
  r.interrupted = true;
  EXPECT_EQ(search_summaries(r), std::vector<std::string>{
      "eng: highest request rate with goodput >= 95.0% under ttft_ms=500: none (interrupted before a probe finished); "
      "1 probe"});
}

TEST(Format, ConversationsAndThePromptCacheAfterTheTable) {
  // Three conversations of two turns (32 prompt tokens each as counted here); the server said it cached 24 of
  // each second turn's 32 and none of a first turn's, except one first turn that said nothing.
  PointResult p = load_point("eng", 3, 20, 5);
  LoadResult& l = *p.load;
  l.turns = 2;
  l.turns_stddev = 0.5;
  l.turn_delay_ms = 100;
  l.turn_delay_stddev_ms = 25;
  for (std::size_t i = 0; i < l.requests.size(); ++i) {
    l.requests[i].conversation = static_cast<int>(i / 2);
    l.requests[i].turn = static_cast<int>(i % 2) + 1;
    if (i != 2) l.requests[i].cached_tokens = l.requests[i].turn == 2 ? 24 : 0;
  }
  summarize_point(p);
  Results r;
  r.points = {p};
  EXPECT_EQ(turn_summaries(r), std::vector<std::string>{
      "eng, concurrency 3 conversations of 2±0.5 turns, think 100±25 ms, by turn:\n"
      "  turn 1: 3 done, 0 failed, prompt 32.0 tokens (0.0 % cached), TTFT p50 20.00 ms, e2e p50 35.00 ms\n"
      "  turn 2: 3 done, 0 failed, prompt 32.0 tokens (75.0 % cached), TTFT p50 20.00 ms, e2e p50 35.00 ms"});
  // 5 requests told: 72 of 160 prompt tokens.
  EXPECT_EQ(prompt_cache_summaries(r), std::vector<std::string>{
      "eng, concurrency 3: the server's prompt cache held 45.0 % of the prompt tokens (72 of 160, by the usage of 5 "
      "of 6 requests)"});
  for (auto& rec : r.points[0].load->requests) rec.cached_tokens.reset();
  summarize_point(r.points[0]);
  EXPECT_TRUE(prompt_cache_summaries(r).empty());
  EXPECT_EQ(turn_summaries(r)[0].find("cached"), std::string::npos);
}

TEST(Format, TimeSlicesAfterTheTable) {
  // Six requests one after another, each issued every 35 ms (20 ms TTFT, three 5 ms gaps): slices of 0.1 s.
  PointResult p = load_point("eng", 1, 20, 5);
  Results r;
  r.points = {p};
  EXPECT_TRUE(slice_summaries(r).empty());
  r.points[0].load->slice_s = 0.1;
  summarize_point(r.points[0]);
  const std::vector<std::string> blocks = slice_summaries(r);
  ASSERT_EQ(blocks.size(), 1u);
  // Issued at 0, 35, 70 ms in the first slice; 105, 140, 175 in the second; the last byte at 210 ms. Tokens
  // at issue + 20, 25, 30, 35 ms: 10 before 100 ms (100 / s), 11 in [100, 200) (110 / s), 3 in [200, 210]
  // (300 / s).
  EXPECT_EQ(blocks[0], "eng, concurrency 1, in slices of 0.1 s (requests by issue time, tokens by arrival):\n"
                       "  0.00-0.10 s: 3 issued, 3 done, 0 failed, TTFT p50 20.00 ms, TPOT p50 5.00 ms, e2e p50 35.00 ms, "
                       "100.0 out tok/s\n"
                       "  0.10-0.20 s: 3 issued, 3 done, 0 failed, TTFT p50 20.00 ms, TPOT p50 5.00 ms, e2e p50 35.00 ms, "
                       "110.0 out tok/s\n"
                       "  0.20-0.21 s: 0 issued, 0 done, 0 failed, TTFT p50 - ms, TPOT p50 - ms, e2e p50 - ms, 300.0 out tok/s");
}

TEST(Format, CancellationsAfterTheTable) {
  PointResult p = load_point("eng", 2, 20, 5);
  Results r;
  r.points = {p};
  EXPECT_TRUE(cancel_summaries(r).empty());
  LoadResult& l = *r.points[0].load;
  l.cancel_rate = 50;
  l.cancel_delay_ms = 30;
  l.requests[1].ok = l.requests[4].ok = false;
  l.requests[1].error = l.requests[4].error = kClientCancel;
  summarize_point(r.points[0]);
  EXPECT_EQ(cancel_summaries(r), std::vector<std::string>{
      "eng, concurrency 2: 2 of 6 requests abandoned by the client (--cancel-rate 50 %, 30 ms after each was sent; the "
      "others done before it); left out of the latencies and the goodput"});
  EXPECT_EQ(r.points[0].summary.at("ttft_ms").n, 4);
}

TEST(Format, CvWarningsAboveFivePercent) {
  Results r = two_models();
  EXPECT_TRUE(cv_warnings(r).empty());
  // e2e values 90, 100, 110, 100, 100: mean 100, std = sqrt(200 / 4) = 7.07 %.
  const double e2e[] = {90, 100, 110, 100, 100};
  for (int i = 0; i < 5; ++i) r.points[1].runs[i].e2e_ms = e2e[i];
  summarize_point(r.points[1]);
  auto w = cv_warnings(r);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("base batch 2"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("e2e_ms CV 7.1%"), std::string::npos) << w[0];
}

TEST(Format, NoCvWarningsForLoadPoints) {
  // Requests of one load point spread widely (TTFT 10 to 60 ms: queueing); that is the distribution
  // being measured, not run-to-run noise.
  Results r;
  r.points = {load_point("served", 16, 10, 5)};
  for (std::size_t i = 0; i < r.points[0].load->requests.size(); ++i)
    r.points[0].load->requests[i].ttft_ms = 10.0 * (i + 1);
  summarize_point(r.points[0]);
  ASSERT_GT(r.points[0].summary.at("ttft_ms").cv, kCvWarning);
  EXPECT_TRUE(cv_warnings(r).empty());
  // A noisy run point beside it still warns, and only it.
  r.points.push_back(two_models().points[1]);
  const double e2e[] = {90, 100, 110, 100, 100};
  for (int i = 0; i < 5; ++i) r.points[1].runs[i].e2e_ms = e2e[i];
  summarize_point(r.points[1]);
  auto w = cv_warnings(r);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("base batch 2"), std::string::npos) << w[0];
}

TEST(Format, ComparisonRatiosAgainstTheBaseline) {
  json j = json::parse(format_comparison(two_models(), Format::json, "base"));
  ASSERT_EQ(j.size(), 5u);
  EXPECT_DOUBLE_EQ(j[0]["ttft_ms_vs_baseline"], 1.0);
  EXPECT_DOUBLE_EQ(j[2]["ttft_ms_vs_baseline"], 0.5);            // 5 / 10, batch 1 with batch 1
  EXPECT_DOUBLE_EQ(j[3]["ttft_ms_vs_baseline"], 0.5);            // 10 / 20, batch 2 with batch 2
  EXPECT_DOUBLE_EQ(j[3]["e2e_ms_vs_baseline"], 0.5);             // 40 / 80
  EXPECT_DOUBLE_EQ(j[3]["output_tok_s_vs_baseline"], 2.0);
  EXPECT_DOUBLE_EQ(j[2]["peak_memory_bytes_vs_baseline"], 0.5);
  EXPECT_TRUE(j[4]["ttft_ms_vs_baseline"].is_null());            // failed point, no baseline at batch 64
  auto table = format_comparison(two_models(), Format::table, "base");
  EXPECT_NE(table.find("0.50x"), std::string::npos);
  EXPECT_THROW(format_comparison(two_models(), Format::table, "nope"), UsageError);
  EXPECT_EQ(format_comparison(two_models(), Format::csv, ""), format_results(two_models(), Format::csv));
}

TEST(Format, ComparisonMatchesAcrossAnOverriddenAxis) {
  // eager-vs-sdpa: the models differ in attn only; the workload still pairs them.
  Results r;
  r.points = {point("eager", 1, 10, 5, 50, 1), point("sdpa", 1, 8, 5, 45, 1)};
  r.points[1].params.attn = "sdpa";
  json j = json::parse(format_comparison(r, Format::json, "eager"));
  EXPECT_DOUBLE_EQ(j[1]["ttft_ms_vs_baseline"], 0.8);
}

TEST(Format, ComparisonOfLoadPointsMatchesConcurrency) {
  // compare with endpoint entries: each engine's point against the baseline engine's at the same
  // concurrency; run points keep their own table and ratios.
  Results r;
  r.points = {point("tiny", 1, 10, 5, 50, 1), load_point("a", 1, 20, 5),  load_point("a", 4, 40, 10),
              load_point("b", 1, 40, 10),        load_point("b", 4, 60, 20),
              load_point("c", 2, 10, 1)};  // no baseline point at concurrency 2
  json j = json::parse(format_comparison(r, Format::json, "a"));
  ASSERT_EQ(j.size(), 6u);
  EXPECT_TRUE(j[0].contains("ttft_ms_vs_baseline"));  // the run row: no baseline of its workload
  EXPECT_TRUE(j[0]["ttft_ms_vs_baseline"].is_null());
  EXPECT_DOUBLE_EQ(j[1]["ttft_p50_ms_vs_baseline"], 1.0);
  EXPECT_DOUBLE_EQ(j[3]["ttft_p50_ms_vs_baseline"], 2.0);   // 40 / 20 at concurrency 1
  EXPECT_DOUBLE_EQ(j[3]["tpot_p50_ms_vs_baseline"], 2.0);   // 10 / 5
  EXPECT_DOUBLE_EQ(j[3]["itl_p50_ms_vs_baseline"], 2.0);
  EXPECT_DOUBLE_EQ(j[3]["e2e_p50_ms_vs_baseline"], 2.0);    // 70 / 35
  EXPECT_DOUBLE_EQ(j[3]["output_tokens_per_s_vs_baseline"], 0.5);
  EXPECT_DOUBLE_EQ(j[4]["ttft_p50_ms_vs_baseline"], 1.5);   // 60 / 40 at concurrency 4
  EXPECT_TRUE(j[5]["ttft_p50_ms_vs_baseline"].is_null());
  // The table: a run table, then a load table with an "x base" column after each compared metric.
  const std::string table = format_comparison(r, Format::table, "a");
  const auto rows = lines(table);
  const auto load_header = std::find_if(rows.begin(), rows.end(),
                                        [](const std::string& l) { return l.find("conc") != std::string::npos; });
  ASSERT_NE(load_header, rows.end()) << table;
  EXPECT_NE(load_header->find("TTFT p50  x base"), std::string::npos) << *load_header;
  EXPECT_NE(table.find("2.00x"), std::string::npos) << table;
  // Load points alone; the other API does not pair.
  Results loads;
  loads.points = {load_point("a", 1, 20, 5), load_point("b", 1, 30, 5)};
  loads.points[1].load->api = "chat";
  json k = json::parse(format_comparison(loads, Format::json, "a"));
  EXPECT_TRUE(k[1]["ttft_p50_ms_vs_baseline"].is_null());
  // Nor do spread lengths (--range-ratio) against exact ones.
  loads.points[1].load->api = "completions";
  EXPECT_DOUBLE_EQ(json::parse(format_comparison(loads, Format::json, "a"))[1]["ttft_p50_ms_vs_baseline"], 1.5);
  loads.points[1].load->range_ratio = 0.5;
  EXPECT_TRUE(json::parse(format_comparison(loads, Format::json, "a"))[1]["ttft_p50_ms_vs_baseline"].is_null());
  // Nor an open loop capped by --max-concurrency against one without a cap; the table shows the cap.
  loads.points[1].load->range_ratio = 0;
  for (auto& p : loads.points) p.load->concurrency = 0, p.load->request_rate = 2;
  loads.points[1].load->max_concurrency = 8;
  EXPECT_TRUE(json::parse(format_comparison(loads, Format::json, "a"))[1]["ttft_p50_ms_vs_baseline"].is_null());
  EXPECT_NE(format_results(loads, Format::table).find("≤8"), std::string::npos);
}

TEST(Format, VerificationIsShownPerPoint) {
  Results r = two_models();
  Verification v;
  v.tokens = 256;
  v.argmax_equal = 250;
  v.worst_gap = 0.0312;
  v.tolerance = 0.10;
  v.ok = true;
  r.points[0].verification = v;
  v.ok = false;
  v.over_tolerance = 3;
  v.worst_gap = 0.412;
  r.points[1].verification = v;
  r.points[1].outputs.inconsistent_runs = {2, 6};
  EXPECT_EQ(verification_summary(r.points[0]), "ok (250/256 argmax, worst gap 3.12 %)");
  EXPECT_EQ(verification_summary(r.points[1]), "FAILED: 3 of 256 over 10.00 % (worst 41.20 %); runs 3, 7 differ");
  auto csv = lines(format_results(r, Format::csv));
  EXPECT_NE(csv[1].find(",true,,,,ok,"), std::string::npos) << csv[1];
  EXPECT_NE(csv[2].find(",false,"), std::string::npos) << csv[2];
  r.points[2].params.temperature = 0.7;
  EXPECT_EQ(verification_summary(r.points[2]), "not checked (temperature > 0)");
}

TEST(Format, InterruptedBeforeAnyRunIsOneLineNotAnEmptyTable) {
  Results r;
  r.interrupted = true;  // stopped during the model load: no point at all
  for (Format f : {Format::table, Format::md}) {
    const std::string out = format_results(r, f);
    EXPECT_EQ(lines(out).size(), 1u) << out;
    EXPECT_NE(out.find("interrupted before the first timed run"), std::string::npos) << out;
    EXPECT_EQ(format_comparison(r, f, "base"), out);  // no "unknown baseline" either
  }
  // Machine formats stay machine-readable: a header-only CSV, an empty JSON list.
  EXPECT_EQ(lines(format_results(r, Format::csv)).size(), 1u);
  EXPECT_TRUE(json::parse(format_comparison(r, Format::json, "base")).empty());
  PointResult warming;  // stopped during the warm-ups of the first point
  warming.params.label = "base";
  warming.status = "interrupted";
  r.points.push_back(warming);
  EXPECT_EQ(lines(format_results(r, Format::table)).size(), 1u);
  EXPECT_EQ(lines(format_results(r, Format::csv)).size(), 2u);  // the point's row, status "interrupted"
  // One finished run is a table again.
  r.points.push_back(point("base", 2, 10, 5, 50, 1));
  r.points.back().status = "interrupted";
  EXPECT_EQ(lines(format_results(r, Format::table)).size(), 4u);
}

// The quality line names what was quantized: weights, the KV cache, or both.
TEST(Format, QualitySummaryNamesWeightsAndKvCache) {
  PointResult p;
  EXPECT_EQ(quality_summary(p), "");
  Quality q;
  q.reference = "bfloat16";
  q.top1_agreement = 0.984;
  q.logits_rel_err = 0.0123;
  q.kl_divergence_mean = 4.56e-4;
  q.positions = 256;
  p.quality = q;
  p.params.weights = "int8";
  EXPECT_EQ(quality_summary(p), "int8 vs bfloat16 weights: top-1 98.4 %, logits rel err 1.23e-02, KL 4.56e-04 (256 positions)");
  p.params.weights = "bf16";
  p.params.kv_dtype = "fp8";
  EXPECT_EQ(quality_summary(p), "fp8 KV vs bfloat16: top-1 98.4 %, logits rel err 1.23e-02, KL 4.56e-04 (256 positions)");
  p.params.weights = "fp8";
  EXPECT_EQ(quality_summary(p),
            "fp8 weights + fp8 KV vs bfloat16: top-1 98.4 %, logits rel err 1.23e-02, KL 4.56e-04 (256 positions)");
}
