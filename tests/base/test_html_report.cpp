#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

#include "llmbench/base/fs.h"
#include "llmbench/report/html.h"
#include "llmbench/report/web_assets.h"

namespace llmbench {
namespace {

using nlohmann::json;

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

Summary summary_with(double trimmed_median, double p50, double p99, double cv) {
  Summary s;
  s.n = 5;
  s.trimmed_median = trimmed_median;
  s.p50 = p50;
  s.p99 = p99;
  s.cv = cv;
  return s;
}

// Two points of one model, batch 1 and 4, with hand-set summaries.
Results known_results(const std::string& label = "tiny") {
  Results r;
  r.created_at = "2026-11-30T10:00:00Z";
  r.command = "llmbench run --model tiny";
  r.env.tool_version = "0.1.0";
  for (int batch : {1, 4}) {
    PointResult p;
    p.params.model = "tiny";
    p.params.label = label;
    p.params.batch = batch;
    p.params.prompt_len = 16;
    p.params.max_new_tokens = 8;
    p.params.device = "cpu";
    p.runs.resize(5);
    p.summary["ttft_ms"] = summary_with(12.5 * batch, 12.0, 14.0, 0.02);
    p.summary["tpot_ms"] = summary_with(1.25, 1.2, 1.5, 0.01);
    p.summary["e2e_ms"] = summary_with(250, 249, 260, batch == 4 ? 0.125 : 0.03);
    p.summary["itl_ms"] = summary_with(1.25, 1.5, 2.75, 0.01);
    p.summary["output_tok_s"] = summary_with(1500, 1500, 1600, 0.03);
    p.memory.peak_rss_bytes = 3ULL << 29;  // 1.5 GiB
    r.points.push_back(p);
  }
  return r;
}

// `llmbench load` points of model "tiny": one per concurrency (or request rate, open loop), each of
// 8 requests whose TTFT grows with the request (10, 20, ..., 80 ms: queueing), then 3 more tokens 2 ms
// apart; `failed` more requests time out. Output throughput 100 tok/s per unit of concurrency.
Results load_sweep(const std::vector<int>& concurrencies, const std::vector<double>& rates = {}, int failed = 0) {
  Results r;
  r.created_at = "2026-11-30T10:00:00Z";
  r.command = "llmbench load --model tiny";
  auto add = [&](int concurrency, double rate) {
    PointResult p;
    p.mode = "load";
    p.params.model = "tiny";
    p.params.label = "tiny";
    p.params.batch = concurrency;
    p.params.prompt_len = 16;
    p.params.max_new_tokens = 4;
    p.params.device = "endpoint";
    LoadResult l;
    l.endpoint = "http://127.0.0.1:1";
    l.concurrency = concurrency;
    l.request_rate = rate;
    l.arrival = rate > 0 ? "poisson" : "";
    l.num_requests = 8 + failed;
    for (int i = 0; i < 8 + failed; ++i) {
      RequestRecord q;
      q.ok = i < 8;
      q.error = q.ok ? "" : "timeout";
      q.start_ms = 10.0 * i;
      q.scheduled_ms = q.start_ms;
      q.ttft_ms = 10.0 * (i + 1);
      q.itl_ms.assign(3, 2.0);
      q.e2e_ms = q.ttft_ms + 6;
      q.prompt_tokens = 16;
      q.output_tokens = q.ok ? 4 : 0;
      l.requests.push_back(q);
    }
    p.load = std::move(l);
    summarize_point(p);
    p.load->output_tokens_per_s = 100.0 * std::max(concurrency, 1);
    r.points.push_back(p);
  };
  for (int c : concurrencies) add(c, 0);
  for (double rate : rates) add(0, rate);
  return r;
}

TEST(HtmlEscape, EscapesTheFiveSpecialCharacters) {
  EXPECT_EQ(html_escape("<a href=\"x\" title='y'>&amp;</a>"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
  EXPECT_EQ(html_escape("plain ünïcödé"), "plain ünïcödé");
  EXPECT_EQ(html_escape(""), "");
}

TEST(HtmlReport, SummaryTableHoldsTheTrimmedMediansOfAKnownResult) {
  std::vector<ReportInput> in{{"a.json", known_results()}};
  const std::string md = render_markdown(in, std::nullopt);
  // point, status, runs, TTFT, TPOT, e2e, ITL p50, ITL p99, output, decode, prefill, memory, CV e2e
  EXPECT_NE(md.find("| tiny b=1 p=16 n=8 | ok | 5 | 12.50 | 1.250 | 250.0 | 1.500 | 2.750 | 1500 | – | – | "
                    "1.500 GiB RSS | 3.000 % |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| tiny b=4 p=16 n=8 | ok | 5 | 50.00 | 1.250 | 250.0 | 1.500 | 2.750 | 1500 | – | – | "
                    "1.500 GiB RSS | 12.50 % (high) |"),
            std::string::npos)
      << md;
  const std::string html = render_html(in, {});
  EXPECT_NE(html.find("<td>tiny b=4 p=16 n=8</td><td>ok</td><td class=\"num\">5</td><td class=\"num\">50.00</td>"),
            std::string::npos);
}

TEST(HtmlReport, OneRunShowsNoCv) {
  // --runs 1: one e2e value has no spread, so its CV is n/a rather than 0 %.
  Results r = known_results();
  r.points.resize(1);
  r.points[0].runs.resize(1);
  for (auto& [metric, s] : r.points[0].summary) s.n = 1, s.cv = 0;
  std::vector<ReportInput> in{{"a.json", r}};
  const std::string md = render_markdown(in, std::nullopt);
  EXPECT_NE(md.find("| 1.500 GiB RSS | n/a |"), std::string::npos) << md;
  EXPECT_EQ(md.find("0.000 %"), std::string::npos) << md;
}

TEST(HtmlReport, TemperaturesAreLabelledAsGiven) {
  // A temperature sweep: the labels carry the values as the user typed them (0.2, 1), not 0.2000 / 1.000.
  Results r = known_results();
  r.points[0].params.temperature = 0.2;
  r.points[1].params.batch = 1;
  r.points[1].params.temperature = 1.0;
  const std::string md = render_markdown({{"t.json", r}}, std::nullopt);
  EXPECT_NE(md.find("| tiny b=1 p=16 n=8 T=0.2 | ok |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny b=1 p=16 n=8 T=1 | ok |"), std::string::npos) << md;
  EXPECT_EQ(md.find("0.2000"), std::string::npos) << md;
}

TEST(HtmlReport, WeightsAndKvAreLabelledAsTheConsoleTableDoes) {
  // A float32 point's unquantized weights and cache are fp32, not "bf16" (params.weights "bf16" means unquantized).
  Results r = known_results();
  r.points[1].params.batch = 1;
  for (auto& p : r.points) p.params.dtype = "float32";
  r.points[1].params.weights = "int8";
  const std::string md = render_markdown({{"d.json", r}}, std::nullopt);
  EXPECT_NE(md.find("| tiny b=1 p=16 n=8 fp32 | ok |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny b=1 p=16 n=8 int8 | ok |"), std::string::npos) << md;
  EXPECT_EQ(md.find(" bf16"), std::string::npos) << md;
  // The configuration table has the matmul weights and the KV cache as stored.
  EXPECT_NE(md.find("| matmul weights |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fp32 | cpu | float32 | fp32 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| int8 | cpu | float32 | fp32 |"), std::string::npos) << md;
}

TEST(HtmlReport, FailedPointsStayInTheSummaryAndLeaveTheCharts) {
  Results r = known_results();
  r.points[1].status = "failed";
  r.points[1].error = "out of memory";
  r.points[1].summary.clear();
  r.points[1].runs.clear();
  std::vector<ReportInput> in{{"a.json", r}};
  const std::string html = render_html(in, {});
  EXPECT_NE(html.find("<tr class=\"bad\"><td>tiny b=4 p=16 n=8</td><td>failed: out of memory</td>"
                      "<td class=\"num\">0</td><td>–</td>"),
            std::string::npos);
  // Only the ok point is plotted: its stages and its distributions; one point is no sweep.
  const json charts = chart_specs(in);
  ASSERT_EQ(charts.size(), 2u) << charts.dump(1);
  EXPECT_EQ(charts[0]["section"], "stages");
  EXPECT_EQ(charts[0]["spec"]["data"]["values"].size(), 5u);  // five stages of one point
  EXPECT_EQ(charts[1]["section"], "distributions");
  EXPECT_EQ(charts[1]["title"], "tiny b=1 p=16 n=8");
}

TEST(HtmlReport, EscapesEveryTextItPutsIntoThePage) {
  std::vector<ReportInput> in{{"<i>file</i>.json", known_results("<script>alert(1)</script>")}};
  in[0].results.command = "llmbench run --prompt 'a & \"b\"'";
  ReportOptions opt;
  opt.assets = WebAssets{"/fake", "var v = '</script>';", "var vl = 1;", "var ve = 1;"};
  const std::string html = render_html(in, opt);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<i>file"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("llmbench run --prompt &#39;a &amp; &quot;b&quot;&#39;"), std::string::npos);
  // Five script elements (three bundles, the chart JSON, the driver) and no other closing tag:
  // the bundle's own "</script>" and the label inside the chart JSON are escaped.
  EXPECT_EQ(count(html, "</script>"), 5u);
  EXPECT_NE(html.find("var v = '<\\/script>';"), std::string::npos);
  EXPECT_NE(html.find("\\u003cscript\\u003ealert(1)\\u003c/script\\u003e"), std::string::npos);
}

TEST(HtmlReport, MissingAssetsGiveTheTablesAndANotice) {
  std::vector<ReportInput> in{{"a.json", known_results()}};
  const std::string html = render_html(in, {});
  EXPECT_NE(html.find("id=\"charts-missing\""), std::string::npos);
  EXPECT_NE(html.find("Charts are missing"), std::string::npos);
  EXPECT_NE(html.find("<caption>Summary: a.json (trimmed medians)</caption>"), std::string::npos);
  EXPECT_EQ(html.find("vegaEmbed"), std::string::npos);
  EXPECT_EQ(html.find("class=\"vega-chart\""), std::string::npos);

  ReportOptions with;
  with.assets = WebAssets{"/fake", "var v;", "var vl;", "var ve;"};
  const std::string charted = render_html(in, with);
  EXPECT_EQ(charted.find("charts-missing"), std::string::npos);
  EXPECT_NE(charted.find("vegaEmbed"), std::string::npos);
  EXPECT_EQ(count(charted, "class=\"vega-chart\""), chart_specs(in).size());
}

TEST(HtmlReport, FindsAssetsThroughTheEnvironmentVariable) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("llmbench-assets-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ::setenv("LLMBENCH_WEB_ASSETS", dir.c_str(), 1);
  std::string why;
  EXPECT_FALSE(find_web_assets(&why));
  EXPECT_NE(why.find(dir.string() + "/vega/build/vega.min.js"), std::string::npos) << why;

  for (const char* rel : {"vega/build/vega.min.js", "vega-lite/build/vega-lite.min.js"}) {
    fs::create_directories((dir / rel).parent_path());
    write_file_atomic((dir / rel).string(), std::string("// ") + rel);
  }
  EXPECT_FALSE(find_web_assets(&why));
  EXPECT_NE(why.find("vega-embed.min.js"), std::string::npos) << why;

  fs::create_directories(dir / "vega-embed/build");
  write_file_atomic((dir / "vega-embed/build/vega-embed.min.js").string(), "// embed");
  auto assets = find_web_assets(&why);
  ASSERT_TRUE(assets);
  EXPECT_EQ(assets->vega, "// vega/build/vega.min.js");
  EXPECT_EQ(assets->vega_embed, "// embed");
  ::unsetenv("LLMBENCH_WEB_ASSETS");
  fs::remove_all(dir);
}

TEST(HtmlReport, EmbeddedBundlesAreTheDefault) {
  // Built with web/node_modules present (scripts/fetch-web-assets.sh): the bundles are in the binary and
  // found without any source tree; built without: one clear reason.
  ::unsetenv("LLMBENCH_WEB_ASSETS");
  std::string why;
  const auto found = find_web_assets(&why);
  const auto embedded = embedded_web_assets();
  ASSERT_EQ(found.has_value(), embedded.has_value());
  if (!embedded) {
    EXPECT_NE(why.find("built without the chart bundles"), std::string::npos) << why;
    EXPECT_NE(why.find("scripts/fetch-web-assets.sh"), std::string::npos) << why;
    GTEST_SKIP() << "built without web/node_modules: " << why;
  }
  EXPECT_GT(found->vega.size(), 100000u);
  EXPECT_NE(found->vega.find("vega"), std::string::npos);
  EXPECT_NE(found->vega_lite.find("vega-lite"), std::string::npos);
  EXPECT_NE(found->vega_embed.find("vegaEmbed"), std::string::npos);
  EXPECT_EQ(found->vega, embedded->vega);
}

TEST(HtmlReport, SideBySideShowsTheChangeAgainstTheBaseline) {
  Results base = known_results();
  Results cur = known_results();
  cur.points[0].summary["ttft_ms"].trimmed_median = 13.75;    // +10 % on 12.5
  cur.points[1].summary["output_tok_s"].trimmed_median = 1200;  // -20 % on 1500
  std::vector<ReportInput> in{{"base.json", base}, {"cur.json", cur}};
  const std::string md = render_markdown(in, std::nullopt);
  EXPECT_NE(md.find("| point | metric | base.json | cur.json | Δ cur.json |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny b=1 p=16 n=8 | TTFT ms | 12.50 | 13.75 | +10.00 % |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny b=4 p=16 n=8 | output tok/s | 1500 | 1200 | -20.00 % |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny b=1 p=16 n=8 | TPOT ms | 1.250 | 1.250 | +0.00 % |"), std::string::npos) << md;
  // Slower TTFT and lower throughput are both worse: red rows; unchanged rows stay plain.
  const std::string html = render_html(in, {});
  EXPECT_NE(html.find("<tr class=\"bad\"><td>tiny b=1 p=16 n=8</td><td>TTFT ms</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"bad\"><td>tiny b=4 p=16 n=8</td><td>output tok/s</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>tiny b=1 p=16 n=8</td><td>TPOT ms</td>"), std::string::npos);
}

TEST(HtmlReport, LoadPointsAreLabelledByConcurrencyOrRateInTheSummary) {
  Results r = load_sweep({1, 4}, {2.5}, 1);
  ASSERT_EQ(r.points[1].load->completed, 8);
  ASSERT_GT(r.points[1].summary.at("e2e_ms").cv, kCvWarning);
  std::vector<ReportInput> in{{"load.json", r}};
  const std::string md = render_markdown(in, std::nullopt);
  // Requests instead of runs; medians over the completed requests (TTFT 45, TPOT 2, e2e 51, ITL 2);
  // the achieved throughput as output tok/s; the requests' spread of e2e (CV far above 5 %) not
  // flagged as noise.
  EXPECT_NE(md.find("| tiny c=4 | ok | 8 requests, 1 failed | 45.00 | 2.000 | 51.00 | 2.000 | 2.000 | 400.0 | – | "
                    "– | – | "),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| tiny c=1 | ok | 8 requests, 1 failed |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny rate=2.5/s poisson | ok |"), std::string::npos) << md;
  EXPECT_EQ(md.find("b=4"), std::string::npos) << md;
  EXPECT_EQ(md.find("(high)"), std::string::npos) << md;
  // A load configuration instead of the run-only tables (stages, memory, efficiency, run configuration).
  EXPECT_NE(md.find("**Load configuration: load.json**"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny rate=2.5/s poisson | http://127.0.0.1:1 | completions | – | 2.500 | poisson | 9 |"),
            std::string::npos)
      << md;
  for (const char* run_only : {"**Stages:", "**Memory:", "**Efficiency", "**Configuration:"})
    EXPECT_EQ(md.find(run_only), std::string::npos) << run_only;
  const std::string html = render_html(in, {});
  EXPECT_NE(html.find("<tr class=\"warn\"><td>tiny c=4</td><td>ok</td><td class=\"num\">8 requests, 1 failed</td>"),
            std::string::npos);
  // A point cut short by Ctrl-C says so, as `load` does.
  r.points[0].load->partial = true;
  EXPECT_NE(render_markdown({{"load.json", r}}, std::nullopt).find("| tiny c=1 | ok (interrupted) | 8 requests, 1 failed |"),
            std::string::npos);
}

TEST(HtmlReport, CancelledRequestsAreCountedApart) {
  Results r = load_sweep({1}, {}, 0);
  LoadResult& l = *r.points[0].load;
  l.cancel_rate = 25;
  l.cancel_delay_ms = 40;
  l.requests[0].ok = false;
  l.requests[0].error = kClientCancel;
  summarize_point(r.points[0]);
  const std::string md = render_markdown({{"load.json", r}}, std::nullopt);
  EXPECT_NE(md.find("| tiny c=1 cancel 25% | ok | 7 requests, 1 cancelled |"), std::string::npos) << md;
  EXPECT_NE(md.find("cancelled by the client 1"), std::string::npos) << md;
}

TEST(HtmlReport, TimeSlicesGetATable) {
  Results r = load_sweep({1}, {}, 0);
  EXPECT_EQ(render_markdown({{"load.json", r}}, std::nullopt).find("**Time slices"), std::string::npos);
  r.points[0].load->slice_s = 1000;  // one slice holds the whole point
  summarize_point(r.points[0]);
  const LoadResult& l = *r.points[0].load;
  ASSERT_EQ(l.by_slice.size(), 1u);
  const std::string md = render_markdown({{"load.json", r}}, std::nullopt);
  EXPECT_NE(md.find("**Time slices: load.json (requests by issue time, output tokens by arrival)**"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny c=1 | 0 | "), std::string::npos) << md;
  const std::string counts = " | " + std::to_string(l.requests.size()) + " | " + std::to_string(l.completed) + " | " +
                             std::to_string(l.failed) + " | ";
  EXPECT_NE(md.find(counts), std::string::npos) << counts << "\n" << md;
}

TEST(HtmlReport, LoadConfigurationShowsCapPrefixSpreadAndExtraBody) {
  Results r = load_sweep({}, {2.5}, 1);
  LoadResult& l = *r.points[0].load;
  l.max_concurrency = 4;
  l.prefix_len = 6;
  l.range_ratio = 0.25;
  l.extra_body = R"({"top_k":5})";
  r.points[0].params.prompt_len = 22;
  const std::string md = render_markdown({{"load.json", r}}, std::nullopt);
  EXPECT_NE(md.find("| tiny rate=2.5/s poisson c≤4 ±25% | http://127.0.0.1:1 | completions | ≤ 4 (cap) | 2.500 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 6 shared + 16 ±25 % |"), std::string::npos) << md;
  EXPECT_NE(md.find("| {\"top_k\":5} |"), std::string::npos) << md;
}

TEST(HtmlReport, ConversationsGetATableByTurn) {
  Results r = load_sweep({2}, {}, 0);
  LoadResult& l = *r.points[0].load;
  l.turns = 2;
  l.turn_delay_ms = 250;
  for (std::size_t i = 0; i < l.requests.size(); ++i) {
    l.requests[i].conversation = static_cast<int>(i / 2);
    l.requests[i].turn = static_cast<int>(i % 2) + 1;
  }
  summarize_point(r.points[0]);
  ASSERT_EQ(l.by_turn.size(), 2u);
  const std::string md = render_markdown({{"c.json", r}}, std::nullopt);
  EXPECT_NE(md.find("**Conversations by turn: c.json (each turn sends the history so far)**"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny c=2 2 turns | 2 | 4 | 0 | "), std::string::npos) << md;  // 8 requests: 4 second turns
  EXPECT_NE(md.find("| 2 turns, think 250 ms |"), std::string::npos) << md;  // the load configuration
  // A spread of turns and think times is in the label and the configuration.
  l.turns_stddev = 0.5;
  l.turn_delay_stddev_ms = 40;
  const std::string spread = render_markdown({{"c.json", r}}, std::nullopt);
  EXPECT_NE(spread.find("| tiny c=2 2±0.5 turns | 2 | 4 | 0 | "), std::string::npos) << spread;
  EXPECT_NE(spread.find("| 2±0.5 turns, think 250±40 ms |"), std::string::npos) << spread;
  EXPECT_EQ(spread.find("**Prompt cache"), std::string::npos);  // no request said what the server cached
  // The server's usage told the cached prompt tokens: second turns 12 of their 16, first turns none.
  for (auto& rec : l.requests) rec.cached_tokens = rec.turn == 2 ? 12 : 0;
  summarize_point(r.points[0]);
  const std::string cached = render_markdown({{"c.json", r}}, std::nullopt);
  EXPECT_NE(cached.find("| tiny c=2 2±0.5 turns | 1 | 4 | 0 | 16.00 | 0 % |"), std::string::npos) << cached;
  EXPECT_NE(cached.find("| tiny c=2 2±0.5 turns | 2 | 4 | 0 | 16.00 | 75 % |"), std::string::npos) << cached;
  EXPECT_NE(cached.find("**Prompt cache: c.json (the server's usage: prompt_tokens_details.cached_tokens)**"),
            std::string::npos) << cached;
  EXPECT_NE(cached.find("| tiny c=2 2±0.5 turns | 8 of 8 | 128 | 48 | 37.5 % |"), std::string::npos) << cached;
  EXPECT_EQ(render_markdown({{"l.json", load_sweep({1, 4})}}, std::nullopt).find("**Conversations by turn"), std::string::npos);
}

TEST(HtmlReport, SearchesGetTheirAnswerInATable) {
  Results r = load_sweep({}, {1, 8, 4}, 0);
  const bool passed[] = {true, false, true};
  for (std::size_t i = 0; i < 3; ++i) {
    r.points[i].load->slo.ttft_ms = 500;
    r.points[i].load->search = SearchProbe{"request_rate", 0.95, passed[i], i == 2};
  }
  const std::string md = render_markdown({{"s.json", r}}, std::nullopt);
  EXPECT_NE(md.find("**Search: s.json**"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny | request rate | goodput ≥ 95 % under ttft_ms=500 | 4 /s | 8 /s | 3 |"), std::string::npos) << md;
  EXPECT_EQ(render_markdown({{"l.json", load_sweep({1, 4})}}, std::nullopt).find("**Search:"), std::string::npos);
  EXPECT_NE(render_html({{"s.json", r}}, {}).find("<tr class=\"good\"><td>tiny</td><td>–</td><td class=\"num\">4.000</td>"),
            std::string::npos);
}

TEST(HtmlReport, ChartsOfALoadSweepLeaveOutTheRunOnlyOnes) {
  std::vector<ReportInput> in{{"load.json", load_sweep({1, 4})}};
  const json charts = chart_specs(in);
  std::map<std::string, int> per_section;
  for (const auto& c : charts) per_section[c["section"].get<std::string>()]++;
  // batch holds the concurrency, but a load sweep is no batch sweep: the load chart shows it.
  EXPECT_EQ(per_section, (std::map<std::string, int>{{"load", 1}, {"distributions", 2}})) << charts.dump(1);
  std::set<std::string> titles;
  for (const auto& c : charts)
    if (c["section"] == "distributions") titles.insert(c["title"].get<std::string>());
  EXPECT_EQ(titles, (std::set<std::string>{"tiny c=1", "tiny c=4"}));
}

TEST(HtmlReport, LoadChartHasE2eAndNoStreamPointsOnlyThere) {
  Results r = load_sweep({1, 4});
  r.points[1].load->stream = false;
  summarize_point(r.points[1]);
  r.points[1].load->output_tokens_per_s = 400;
  json load;
  for (const auto& c : chart_specs({{"load.json", r}}))
    if (c["section"] == "load") load = c;
  ASSERT_FALSE(load.is_null());
  std::map<std::string, std::set<std::string>> series_of;  // metric -> series
  for (const auto& row : load["spec"]["data"]["values"]) {
    series_of[row["metric"].get<std::string>()].insert(row["series"].get<std::string>());
    if (row["metric"] == "e2e p50" && row["series"] == "tiny (no-stream)") {
      EXPECT_DOUBLE_EQ(row["ms"].get<double>(), r.points[1].summary.at("e2e_ms").p50);
    }
  }
  EXPECT_EQ(series_of["e2e p50"], (std::set<std::string>{"tiny", "tiny (no-stream)"}));
  EXPECT_EQ(series_of["e2e p99"], (std::set<std::string>{"tiny", "tiny (no-stream)"}));
  EXPECT_EQ(series_of["TTFT p50"], (std::set<std::string>{"tiny"}));  // a whole response has no TTFT
  EXPECT_EQ(series_of["ITL p99"], (std::set<std::string>{"tiny"}));
}

TEST(HtmlReport, LoadFilesSideBySide) {
  Results base = load_sweep({1, 4});
  Results cur = load_sweep({4});
  cur.points[0].load->output_tokens_per_s = 600;
  std::vector<ReportInput> in{{"base.json", base}, {"cur.json", cur}};
  const std::string md = render_markdown(in, std::nullopt);
  EXPECT_NE(md.find("| tiny c=4 | output tok/s | 400.0 | 600.0 | +50.00 % |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny c=4 | TTFT ms | 45.00 | 45.00 | +0.00 % |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny c=1 | TTFT ms | 45.00 | – | – |"), std::string::npos) << md;
  // The files chart: each file's headline metrics at each of its points.
  const json charts = chart_specs(in);
  const auto files = std::find_if(charts.begin(), charts.end(), [](const json& c) { return c["section"] == "files"; });
  ASSERT_NE(files, charts.end());
  std::size_t cur_rows = 0;
  for (const auto& row : (*files)["spec"]["data"]["values"]) {
    if (row["file"] != "cur.json") continue;
    ++cur_rows;
    EXPECT_EQ(row["point"], "tiny c=4");
    if (row["metric"] == "output tok/s") {
      EXPECT_DOUBLE_EQ(row["value"].get<double>(), 600);
    }
  }
  EXPECT_EQ(cur_rows, 4u);  // TTFT, TPOT, e2e, output tok/s
}

TEST(HtmlReport, RunAndLoadPointsOfOneBatchStayApart) {
  // A run at batch 4 and a load point at concurrency 4 of the same model and lengths are different points.
  Results mixed = known_results();
  mixed.points.push_back(load_sweep({4}).points[0]);
  mixed.points.back().params.prompt_len = 16;
  mixed.points.back().params.max_new_tokens = 8;
  std::vector<ReportInput> in{{"a.json", mixed}, {"b.json", mixed}};
  const std::string md = render_markdown(in, std::nullopt);
  EXPECT_NE(md.find("| tiny b=4 p=16 n=8 | TTFT ms | 50.00 | 50.00 | +0.00 % |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny c=4 | TTFT ms |"), std::string::npos) << md;
  // The load point's device ("endpoint") and empty dtype do not make the run labels longer.
  EXPECT_EQ(md.find("n=8 cpu"), std::string::npos) << md;
  EXPECT_NE(md.find("**Configuration: a.json**"), std::string::npos);
  EXPECT_NE(md.find("**Load configuration: a.json**"), std::string::npos);
}

TEST(HtmlReport, RunFileAndLoadFileHaveNothingSideBySide) {
  // No point of a run file matches one of a load sweep: no half-empty side-by-side rows, a note instead.
  std::vector<ReportInput> in{{"run.json", known_results()}, {"load.json", load_sweep({4})}};
  const std::string md = render_markdown(in, std::nullopt);
  EXPECT_EQ(md.find("| tiny b=1 p=16 n=8 | TTFT ms |"), std::string::npos) << md;
  EXPECT_EQ(md.find("| tiny c=4 | TTFT ms |"), std::string::npos) << md;
  EXPECT_NE(md.find("nothing to compare"), std::string::npos) << md;
  const std::string html = render_html(in, {});
  EXPECT_NE(html.find("nothing to compare"), std::string::npos);
}

TEST(HtmlReport, GateVerdictRowsAreShownGenerically) {
  std::vector<ReportInput> in{{"a.json", known_results()}};
  json gate = {{"verdict", "fail"},
               {"checks", json::array({{{"metric", "ttft_ms"}, {"verdict", "regression"}, {"delta", 0.125}},
                                       {{"metric", "tpot | ms"}, {"verdict", "pass"}}})}};
  const std::string md = render_markdown(in, gate);
  EXPECT_NE(md.find("| delta | metric | verdict |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0.1250 | ttft_ms | regression |"), std::string::npos) << md;
  EXPECT_NE(md.find("| – | tpot \\| ms | pass |"), std::string::npos) << md;
  EXPECT_NE(md.find("| verdict | fail |"), std::string::npos) << md;
  const std::string html = render_html(in, {std::nullopt, gate});
  EXPECT_NE(html.find("<tr class=\"bad\"><td class=\"num\">0.1250</td><td>ttft_ms</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"good\"><td>–</td><td>tpot | ms</td><td>pass</td>"), std::string::npos);
}

TEST(HtmlReport, NestedGateRowsAreFlattened) {
  std::vector<ReportInput> in{{"a.json", known_results()}};
  json gate = {{"passed", false},
               {"notes", json::array()},
               {"points", json::array({{{"params", {{"batch", 4}, {"model", "tiny"}}},
                                        {"verdict", "regressed"},
                                        {"metrics", json::array({{{"metric", "ttft_ms"},
                                                                  {"ci95", {1.125, 1.25}},
                                                                  {"verdict", "regressed"}},
                                                                 {{"metric", "tpot_ms"},
                                                                  {"ci95", nullptr},
                                                                  {"verdict", "inconclusive"}}})}}})}};
  const std::string md = render_markdown(in, gate);
  EXPECT_NE(md.find("| notes | none |"), std::string::npos) << md;
  EXPECT_NE(md.find("| params | ci95 | metric | metrics.verdict | verdict |"), std::string::npos) << md;
  EXPECT_NE(md.find("| batch=4 model=tiny | 1.125; 1.250 | ttft_ms | regressed | regressed |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| batch=4 model=tiny | – | tpot_ms | inconclusive | regressed |"), std::string::npos) << md;
  // Each flattened row takes its colour from its own metric's verdict, not from its point's: the tpot row of a
  // regressed point is yellow (inconclusive), an unchanged metric of it plain.
  gate["points"][0]["metrics"].push_back({{"metric", "peak_memory"}, {"ci95", nullptr}, {"verdict", "unchanged"}});
  const std::string html = render_html(in, {std::nullopt, gate});
  EXPECT_NE(html.find("<tr class=\"bad\"><td>batch=4 model=tiny</td><td class=\"num\">1.125; 1.250</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"warn\"><td>batch=4 model=tiny</td><td>–</td><td>tpot_ms</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>batch=4 model=tiny</td><td>–</td><td>peak_memory</td>"), std::string::npos);
}

TEST(HtmlReport, ChartsOfTheSampleSweep) {
  const std::string path = std::string(LLMBENCH_TEST_DATA) + "/results/sample-sweep.json";
  const json raw = json::parse(read_file(path));
  std::vector<ReportInput> in{{"sample", load_results(path)}};
  const json charts = chart_specs(in);
  std::map<std::string, int> per_section;
  for (const auto& c : charts) per_section[c["section"].get<std::string>()]++;
  // Two models × batch 1, 2, 4: one batch sweep, one model comparison, a distribution chart per point.
  EXPECT_EQ(per_section["sweeps"], 1);
  EXPECT_EQ(per_section["models"], 1);
  EXPECT_EQ(per_section["stages"], 1);
  EXPECT_EQ(per_section["efficiency"], 1);
  EXPECT_EQ(per_section["cold"], 1);
  EXPECT_EQ(per_section["distributions"], 6);
  EXPECT_EQ(per_section.count("files"), 0u);

  for (const auto& c : charts) {
    if (c["section"] == "sweeps") {
      std::set<std::string> series;
      std::set<double> xs;
      for (const auto& row : c["spec"]["data"]["values"]) {
        series.insert(row["series"].get<std::string>());
        xs.insert(row["x"].get<double>());
      }
      EXPECT_EQ(series, (std::set<std::string>{"qwen2.5-0.5b", "llama3.2-1b"}));
      EXPECT_EQ(xs, (std::set<double>{1, 2, 4}));
    }
  }
  // The first point's ECDFs: one value per run for e2e, all ITLs pooled, and the file's percentiles as rules.
  const json& first = charts[charts.size() - 6]["spec"];
  ASSERT_EQ(first["hconcat"].size(), 3u);
  const json& p0 = raw["points"][0];
  EXPECT_EQ(first["hconcat"][0]["layer"][0]["data"]["values"].size(), p0["runs"].size());
  std::size_t itl = 0;
  for (const auto& r : p0["runs"]) itl += r["itl_ms"].size();
  EXPECT_EQ(first["hconcat"][2]["layer"][0]["data"]["values"].size(), itl);
  const json& rules = first["hconcat"][0]["layer"][1]["data"]["values"];
  EXPECT_DOUBLE_EQ(rules[0]["v"].get<double>(), p0["summary"]["e2e_ms"]["p50"].get<double>());
  EXPECT_DOUBLE_EQ(rules[1]["v"].get<double>(), p0["summary"]["e2e_ms"]["p90"].get<double>());
  EXPECT_DOUBLE_EQ(rules[2]["v"].get<double>(), p0["summary"]["e2e_ms"]["p99"].get<double>());
}

}  // namespace
}  // namespace llmbench
