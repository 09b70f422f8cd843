// The report of many requests: ECDFs drawn from exact quantiles above kEcdfExactMax values (hand-computed
// order statistics), unchanged at and below it, and a page that stays small for 200,000 requests.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "llmbench/base/error.h"
#include "llmbench/report/html.h"
#include "llmbench/stats/stats.h"

namespace llmbench {
namespace {

using nlohmann::json;

std::vector<std::pair<double, double>> pairs(const std::vector<EcdfPoint>& points) {
  std::vector<std::pair<double, double>> out;
  for (const auto& p : points) out.emplace_back(p.value, p.fraction);
  return out;
}

std::vector<double> shuffled_1_to(std::size_t n) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 1.0);
  std::shuffle(v.begin(), v.end(), std::mt19937_64(7));
  return v;
}

TEST(EcdfQuantiles, HandComputed) {
  // n 5, steps 2: rank 1 (the minimum), ceil(1 * 5 / 2) = 3, ceil(2 * 5 / 2) = 5 (the maximum).
  using P = std::vector<std::pair<double, double>>;
  EXPECT_EQ(pairs(ecdf_quantiles({3, 1, 2, 5, 4}, 2)), (P{{1, 0.2}, {3, 0.6}, {5, 1.0}}));
  // Ties: ranks 1, 1, 2, 3, 4 are the values 1, 1, 1, 1, 2; the fraction <= 1 is 3/4, each value once.
  EXPECT_EQ(pairs(ecdf_quantiles({2, 1, 1, 1}, 4)), (P{{1, 0.75}, {2, 1.0}}));
  // More steps than values: ranks 1, 1, 2, 3, 3.
  const auto three = ecdf_quantiles({30, 10, 20}, 4);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[0].value, 10);
  EXPECT_DOUBLE_EQ(three[0].fraction, 1.0 / 3);
  EXPECT_EQ(three[1].value, 20);
  EXPECT_DOUBLE_EQ(three[1].fraction, 2.0 / 3);
  EXPECT_EQ(three[2].value, 30);
  EXPECT_EQ(three[2].fraction, 1.0);
  EXPECT_EQ(pairs(ecdf_quantiles({7}, 1000)), (P{{7, 1.0}}));
  EXPECT_TRUE(ecdf_quantiles({}, 1000).empty());
  EXPECT_THROW(ecdf_quantiles({1, 2}, 0), Error);
}

TEST(EcdfQuantiles, OrderStatisticsOf1To10000) {
  // Point k >= 1 is the value of rank ceil(k * 10000 / 1000) = 10 k, and 10 k of the values are <= it.
  const auto points = ecdf_quantiles(shuffled_1_to(10000), 1000);
  ASSERT_EQ(points.size(), 1001u);
  EXPECT_EQ(points[0].value, 1);
  EXPECT_DOUBLE_EQ(points[0].fraction, 1e-4);
  for (std::size_t k = 1; k <= 1000; ++k) {
    EXPECT_EQ(points[k].value, 10.0 * k) << k;
    EXPECT_DOUBLE_EQ(points[k].fraction, k / 1000.0) << k;
  }
}

TEST(EcdfQuantiles, RanksRoundUpWhenStepsDoNotDivide) {
  // 1234 values: point k is rank ceil(1.234 k), exact in integers (k = 500: 617; k = 999: 1233).
  const auto points = ecdf_quantiles(shuffled_1_to(1234), 1000);
  ASSERT_EQ(points.size(), 1001u);
  for (std::size_t k = 1; k <= 1000; ++k) {
    const double rank = static_cast<double>((k * 1234 + 999) / 1000);
    EXPECT_EQ(points[k].value, rank) << k;
    EXPECT_DOUBLE_EQ(points[k].fraction, rank / 1234) << k;
  }
  EXPECT_EQ(points[500].value, 617);
  EXPECT_EQ(points[999].value, 1233);
  EXPECT_EQ(points[1000].value, 1234);
}

// One load point of n completed requests, in shuffled order: e2e 1..n ms, TTFT a tenth of it, `itls` ITLs each.
Results load_file(std::size_t n, int itls = 0) {
  Results r;
  r.created_at = "2026-12-07T00:00:00Z";
  PointResult p;
  p.mode = "load";
  p.params.model = p.params.label = "big";
  p.params.device = "endpoint";
  LoadResult l;
  l.request_rate = 50;
  l.arrival = "poisson";
  l.stream = true;
  const std::vector<double> e2e = shuffled_1_to(n);
  l.requests.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    RequestRecord q;
    q.ok = true;
    q.start_ms = q.scheduled_ms = 20.0 * i;
    q.e2e_ms = e2e[i];
    q.ttft_ms = e2e[i] / 10;
    for (int k = 0; k < itls; ++k) q.itl_ms.push_back(0.5 + 0.001 * ((i * 7 + k) % 1000));
    q.output_tokens = itls + 1;
    l.requests.push_back(std::move(q));
  }
  p.load = std::move(l);
  summarize_point(p);
  r.points.push_back(std::move(p));
  return r;
}

json distributions(const Results& r) {
  for (const auto& c : chart_specs({{"big.json", r}}))
    if (c["section"] == "distributions") return c;
  ADD_FAILURE() << "no distributions chart";
  return json();
}

// The ECDF panel of one metric ("e2e ms", "TTFT ms", "ITL ms").
json panel(const json& chart, const std::string& metric) {
  for (const auto& part : chart["spec"]["hconcat"]) {
    const json& t = part["title"];
    if ((t.is_string() ? t : t["text"]) == metric) return part;
  }
  ADD_FAILURE() << "no " << metric << " panel in " << chart.dump();
  return json();
}

TEST(ReportLarge, EcdfAboveTheThresholdIsItsExactQuantiles) {
  const Results r = load_file(10000);
  const json chart = distributions(r);
  const json e2e = panel(chart, "e2e ms");
  const json& line = e2e["layer"][0];
  const json& rows = line["data"]["values"];
  ASSERT_EQ(rows.size(), 1001u);
  EXPECT_EQ(rows[0], (json{{"v", 1.0}, {"F", 1e-4}}));
  for (std::size_t k = 1; k <= 1000; ++k) {
    EXPECT_EQ(rows[k]["v"].get<double>(), 10.0 * k) << k;
    EXPECT_DOUBLE_EQ(rows[k]["F"].get<double>(), k / 1000.0) << k;
  }
  // The fractions come with the points: no per-point markers, no browser-side cume_dist.
  EXPECT_FALSE(line.contains("transform"));
  EXPECT_EQ(line["mark"], (json{{"type", "line"}, {"interpolate", "step-after"}, {"point", "transparent"}}));
  EXPECT_EQ(e2e["title"]["subtitle"], "ECDF from 1,001 quantiles of 10,000 values");
  EXPECT_NE(chart["title"].get<std::string>().find("drawn from 1,001 quantiles"), std::string::npos) << chart["title"];
  // P50, P90, P99 from all values (the point's summary), not from the quantiles: P50 5000.5 is no plotted value.
  const json& rules = e2e["layer"][1]["data"]["values"];
  EXPECT_EQ(rules[0]["v"].get<double>(), 5000.5);
  EXPECT_EQ(rules[1]["v"].get<double>(), r.points[0].summary.at("e2e_ms").p90);
  EXPECT_EQ(rules[2]["v"].get<double>(), r.points[0].summary.at("e2e_ms").p99);
}

TEST(ReportLarge, AtTheThresholdEveryValueIsDrawn) {
  const json at = panel(distributions(load_file(kEcdfExactMax)), "TTFT ms");
  EXPECT_EQ(at["title"], "TTFT ms");
  EXPECT_EQ(at["layer"][0]["data"]["values"].size(), kEcdfExactMax);
  EXPECT_EQ(at["layer"][0]["mark"]["point"], true);
  EXPECT_TRUE(at["layer"][0].contains("transform"));
  const json above = panel(distributions(load_file(kEcdfExactMax + 1)), "TTFT ms");
  EXPECT_EQ(above["layer"][0]["data"]["values"].size(), kEcdfQuantileSteps + 1);
  EXPECT_EQ(above["title"]["subtitle"], "ECDF from 1,001 quantiles of 2,001 values");
}

TEST(ReportLarge, BelowTheThresholdTheSpecIsAsBefore) {
  // The ECDF spec of three values as the report has always written it: every value, cume_dist in the browser.
  const Results r = load_file(3);
  const Summary& s = r.points[0].summary.at("e2e_ms");
  json values = json::array();
  for (const auto& q : r.points[0].load->requests) values.push_back({{"v", q.e2e_ms}});
  const json expected = {
      {"title", "e2e ms"},
      {"width", 250},
      {"height", 170},
      {"layer",
       {{{"data", {{"values", values}}},
         {"transform", {{{"window", {{{"op", "cume_dist"}, {"as", "F"}}}}, {"sort", {{{"field", "v"}}}}}}},
         {"mark", {{"type", "line"}, {"interpolate", "step-after"}, {"point", true}}},
         {"encoding",
          {{"x", {{"field", "v"}, {"type", "quantitative"}, {"title", "e2e ms"}, {"scale", {{"zero", false}}}}},
           {"y", {{"field", "F"}, {"type", "quantitative"}, {"title", "fraction ≤ x"}, {"scale", {{"domain", {0, 1}}}}}},
           {"tooltip", {{{"field", "v"}, {"type", "quantitative"}, {"format", ".3f"}, {"title", "ms"}},
                        {{"field", "F"}, {"type", "quantitative"}, {"format", ".2f"}}}}}}},
        {{"data", {{"values", {{{"q", "P50"}, {"v", s.p50}}, {{"q", "P90"}, {"v", s.p90}}, {{"q", "P99"}, {"v", s.p99}}}}}},
         {"mark", {{"type", "rule"}, {"strokeDash", {4, 3}}, {"strokeWidth", 2}}},
         {"encoding",
          {{"x", {{"field", "v"}, {"type", "quantitative"}}},
           {"color", {{"field", "q"}, {"type", "nominal"}, {"title", "percentile"},
                      {"scale", {{"domain", {"P50", "P90", "P99"}}, {"range", {"#2ca02c", "#ff7f0e", "#d62728"}}}}}},
           {"tooltip", {{{"field", "q"}, {"type", "nominal"}},
                        {{"field", "v"}, {"type", "quantitative"}, {"format", ".3f"}, {"title", "ms"}}}}}}}}}};
  const json chart = distributions(r);
  EXPECT_EQ(panel(chart, "e2e ms"), expected) << panel(chart, "e2e ms").dump(1);
  EXPECT_EQ(chart["title"], "big rate=50/s poisson");
}

TEST(ReportLarge, PageOf200000RequestsStaysSmall) {
  const Results r = load_file(200000, 7);  // 1.4 million ITLs
  ReportOptions options;
  options.assets = WebAssets{"", "/*vega*/", "/*vega-lite*/", "/*vega-embed*/"};
  const std::string html = render_html({{"big.json", r}}, options);
  // Three ECDFs of at most 1,001 points each, the tables and the load chart: well under 400 KB (each value
  // inlined, as before, made 30 MB).
  EXPECT_LT(html.size(), 400u * 1024) << html.size();
  EXPECT_NE(html.find("\"subtitle\":\"ECDF from 1,001 quantiles of 200,000 values\""), std::string::npos);
  EXPECT_NE(html.find("\"subtitle\":\"ECDF from 1,001 quantiles of 1,400,000 values\""), std::string::npos);
  EXPECT_NE(html.find("<figcaption>big rate=50/s poisson (an ECDF of more than 2,000 values is drawn from 1,001 "
                      "quantiles; P50, P90, P99 from all values)</figcaption>"),
            std::string::npos);
  const std::size_t charts = chart_specs({{"big.json", r}}).size();
  std::size_t divs = 0;
  for (auto pos = html.find("class=\"vega-chart\""); pos != std::string::npos; pos = html.find("class=\"vega-chart\"", pos + 1))
    ++divs;
  EXPECT_EQ(divs, charts);
  EXPECT_EQ(charts, 2u);  // latency against throughput, the distributions
}

}  // namespace
}  // namespace llmbench
