// The Prometheus text parser and the aggregation of scraped pages into a point's server_metrics, against
// hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "llmbench/load/prometheus.h"
#include "llmbench/load/server_metrics.h"

using namespace llmbench;

TEST(Prometheus, ParsesSamplesLabelsTypesAndSpecialValues) {
  const PromPage page = parse_prometheus(
      "# HELP http_requests_total The total number of HTTP requests.\n"
      "# TYPE http_requests_total counter\n"
      "http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
      "http_requests_total{method=\"post\",code=\"400\"}    3 1395066363000\r\n"
      "\n"
      "  # a comment\n"
      "msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\",error=\"Cannot find file:\\n\\\"FILE.TXT\\\"\"} 1.458255915e9\n"
      "metric_without_timestamp_and_labels 12.47\n"
      "something_weird{problem=\"division by zero\"} +Inf -3982045\n"
      "nan_value NaN\n"
      "trailing_comma{a=\"1\",} -2\n"
      "vllm:num_requests_running{model_name=\"Qwen/Qwen2.5-7B\"} 4.0\n"
      "# EOF\n"
      "not a sample\n"
      "missing_value{a=\"1\"}\n"
      "bad_label{a=1} 3\n"
      "unterminated{a=\"1} 3\n"
      "9starts_with_digit 1\n");
  EXPECT_EQ(page.types.at("http_requests_total"), "counter");
  ASSERT_EQ(page.samples.size(), 8u);
  EXPECT_EQ(page.bad_lines, 5);
  EXPECT_EQ(page.samples[0].name, "http_requests_total");
  EXPECT_EQ(page.samples[0].value, 1027);
  EXPECT_EQ(page.samples[0].labels, (std::vector<std::pair<std::string, std::string>>{{"method", "post"}, {"code", "200"}}));
  EXPECT_EQ(page.samples[1].value, 3);
  EXPECT_EQ(page.samples[2].labels[0].second, "C:\\DIR\\FILE.TXT");
  EXPECT_EQ(page.samples[2].labels[1].second, "Cannot find file:\n\"FILE.TXT\"");
  EXPECT_DOUBLE_EQ(page.samples[2].value, 1.458255915e9);
  EXPECT_DOUBLE_EQ(page.samples[3].value, 12.47);
  EXPECT_TRUE(std::isinf(page.samples[4].value));
  EXPECT_TRUE(std::isnan(page.samples[5].value));
  EXPECT_EQ(page.samples[6].value, -2);
  EXPECT_EQ(page.samples[7].name, "vllm:num_requests_running");
  // One key per series: labels sorted, `le` dropped when asked, values escaped back.
  EXPECT_EQ(series_key("m", {{"b", "2"}, {"a", "x\"y"}}), "m{a=\"x\\\"y\",b=\"2\"}");
  EXPECT_EQ(series_key("h", {{"le", "0.5"}, {"model", "q"}}, "le"), "h{model=\"q\"}");
  EXPECT_EQ(series_key("h", {{"le", "0.5"}}, "le"), "h");
}

namespace {

PromPage page(const std::string& text) { return parse_prometheus(text); }

}  // namespace

TEST(ServerMetrics, GaugesCountersAndResetsByHand) {
  ServerMetricsAggregator a;
  const std::string types = "# TYPE running gauge\n# TYPE tokens counter\n# TYPE reqs counter\n";
  a.add(0, page(types + "running 2\ntokens_total 10\nuntyped_thing 7\n"));
  a.add(1, page(types + "running 4\ntokens_total 15\nreqs{code=\"200\"} 4\nuntyped_thing NaN\n"));
  a.add(2, page(types + "running 6\ntokens_total 3\nreqs{code=\"200\"} 9\n"));  // tokens reset: 3 since
  a.add(4, page(types + "running 0\ntokens_total 8\nreqs{code=\"200\"} 9\n"));
  const ServerMetrics m = a.result();
  const auto& g = m.gauges.at("running");
  EXPECT_DOUBLE_EQ(g.mean, 3);  // (2 + 4 + 6 + 0) / 4
  EXPECT_EQ(g.min, 0);
  EXPECT_EQ(g.max, 6);
  EXPECT_EQ(g.last, 0);
  EXPECT_EQ(m.gauges.at("untyped_thing").mean, 7);  // NaN skipped
  EXPECT_DOUBLE_EQ(m.counters.at("tokens_total").increase, 5 + 3 + 5);  // OpenMetrics: family tokens, sample _total
  EXPECT_DOUBLE_EQ(m.counters.at("tokens_total").per_s, 13.0 / 4);
  // Created during the point (absent from the first page): counted from 0.
  EXPECT_DOUBLE_EQ(m.counters.at("reqs{code=\"200\"}").increase, 9);
  EXPECT_DOUBLE_EQ(m.counters.at("reqs{code=\"200\"}").per_s, 9.0 / 4);
  EXPECT_EQ(m.dropped_series, 0);
}

TEST(ServerMetrics, HistogramObservationsDuringThePointAndTheirQuantiles) {
  ServerMetricsAggregator a;
  const std::string type = "# TYPE ttft_seconds histogram\n# TYPE lat summary\n";
  a.add(0, page(type +
                "ttft_seconds_bucket{le=\"0.1\",model=\"m\"} 2\nttft_seconds_bucket{le=\"0.5\",model=\"m\"} 5\n"
                "ttft_seconds_bucket{le=\"+Inf\",model=\"m\"} 6\nttft_seconds_sum{model=\"m\"} 1.0\nttft_seconds_count{model=\"m\"} 6\n"
                "ttft_seconds_created{model=\"m\"} 1700000000\n"
                "lat{quantile=\"0.5\"} 0.2\nlat_sum 10\nlat_count 100\n"));
  a.add(1, page(type +
                "ttft_seconds_bucket{le=\"0.1\",model=\"m\"} 4\nttft_seconds_bucket{le=\"0.5\",model=\"m\"} 11\n"
                "ttft_seconds_bucket{le=\"+Inf\",model=\"m\"} 14\nttft_seconds_sum{model=\"m\"} 3.0\nttft_seconds_count{model=\"m\"} 14\n"
                "lat{quantile=\"0.5\"} 0.4\nlat_sum 16\nlat_count 110\n"));
  const ServerMetrics m = a.result();
  ASSERT_EQ(m.histograms.size(), 1u);
  const auto& h = m.histograms.at("ttft_seconds{model=\"m\"}");
  // During the point: 2 in (0, 0.1], 4 in (0.1, 0.5], 2 above; 8 observations summing to 2.0 s.
  EXPECT_DOUBLE_EQ(h.count, 8);
  EXPECT_DOUBLE_EQ(h.sum, 2.0);
  EXPECT_DOUBLE_EQ(*h.mean, 0.25);
  EXPECT_DOUBLE_EQ(*h.p50, 0.1 + 0.4 * (4 - 2) / (6 - 2));  // rank 4 falls in (0.1, 0.5]
  EXPECT_DOUBLE_EQ(*h.p90, 0.5);  // rank 7.2 in the +Inf bucket: the highest finite bound
  EXPECT_DOUBLE_EQ(*h.p99, 0.5);
  EXPECT_EQ(m.gauges.count("ttft_seconds_created{model=\"m\"}"), 0u);  // creation times are no series
  // A summary: its quantiles are gauges, its _sum and _count counters.
  EXPECT_DOUBLE_EQ(m.gauges.at("lat{quantile=\"0.5\"}").mean, 0.3);
  EXPECT_DOUBLE_EQ(m.counters.at("lat_count").increase, 10);
  EXPECT_DOUBLE_EQ(m.counters.at("lat_sum").increase, 6);
  // Nothing observed: no mean, no quantiles.
  ServerMetricsAggregator idle;
  idle.add(0, page(type + "ttft_seconds_bucket{le=\"+Inf\"} 3\nttft_seconds_sum 1\nttft_seconds_count 3\n"));
  idle.add(1, page(type + "ttft_seconds_bucket{le=\"+Inf\"} 3\nttft_seconds_sum 1\nttft_seconds_count 3\n"));
  const auto quiet = idle.result().histograms.at("ttft_seconds");
  EXPECT_EQ(quiet.count, 0);
  EXPECT_FALSE(quiet.mean || quiet.p50 || quiet.p99);
}

TEST(ServerMetrics, SeriesBeyondTheCapAreDroppedAndCounted) {
  std::string text;
  for (int i = 0; i < kMaxServerSeries + 25; ++i) text += "g{i=\"" + std::to_string(i) + "\"} 1\n";
  text += "garbage line\n";
  ServerMetricsAggregator a;
  a.add(0, page(text));
  a.add(1, page(text));
  const ServerMetrics m = a.result();
  EXPECT_EQ(m.gauges.size(), std::size_t(kMaxServerSeries));
  EXPECT_EQ(m.dropped_series, 25);
  EXPECT_EQ(m.bad_lines, 2);
}

TEST(ServerMetrics, PrometheusClientPagesAsVllmServesThem) {
  // Python's prometheus_client (vLLM's /metrics): counters typed under their _total name, a gauge of creation
  // time beside every counter and histogram, colons in names, labels on everything.
  const std::string head =
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n";
  auto at = [&](int running, int tokens, int ttft_le_01, int ttft_all, double ttft_sum) {
    return page(head + "vllm:num_requests_running{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B\"} " + std::to_string(running) + ".0\n" +
                "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
                "# TYPE vllm:generation_tokens_total counter\n"
                "vllm:generation_tokens_total{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B\"} " + std::to_string(tokens) + ".0\n"
                "# HELP vllm:generation_tokens_created Number of generation tokens processed.\n"
                "# TYPE vllm:generation_tokens_created gauge\n"
                "vllm:generation_tokens_created{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B\"} 1.7650432e+09\n"
                "# TYPE vllm:time_to_first_token_seconds histogram\n"
                "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"Qwen/Qwen2.5-7B\"} " +
                std::to_string(ttft_le_01) + ".0\n"
                "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"Qwen/Qwen2.5-7B\"} " +
                std::to_string(ttft_all) + ".0\n"
                "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B\"} " + std::to_string(ttft_all) + ".0\n"
                "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B\"} " + std::to_string(ttft_sum) + "\n"
                "# TYPE vllm:time_to_first_token_seconds_created gauge\n"
                "vllm:time_to_first_token_seconds_created{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B\"} 1.7650432e+09\n");
  };
  ServerMetricsAggregator a;
  a.add(0, at(0, 100, 3, 4, 0.5));
  a.add(1, at(8, 900, 10, 12, 1.3));
  a.add(2, at(2, 1500, 13, 16, 1.7));
  const ServerMetrics m = a.result();
  const std::string labels = "{engine=\"0\",model_name=\"Qwen/Qwen2.5-7B\"}";
  EXPECT_EQ(m.gauges.size(), 1u);  // the creation times are left out
  EXPECT_DOUBLE_EQ(m.gauges.at("vllm:num_requests_running" + labels).mean, 10.0 / 3);
  EXPECT_EQ(m.gauges.at("vllm:num_requests_running" + labels).max, 8);
  EXPECT_EQ(m.counters.at("vllm:generation_tokens_total" + labels).increase, 1400);
  EXPECT_EQ(m.counters.at("vllm:generation_tokens_total" + labels).per_s, 700);
  const auto& h = m.histograms.at("vllm:time_to_first_token_seconds" + labels);
  EXPECT_EQ(h.count, 12);
  EXPECT_DOUBLE_EQ(*h.mean, 1.2 / 12);
  EXPECT_DOUBLE_EQ(*h.p50, 0.1 * 6 / 10);  // 10 of 12 under 0.1 s: rank 6 of them, from 0
}

TEST(ServerMetrics, SeveralTargetsMergeIntoOne) {
  ServerMetrics a, b;
  a.url = "http://p:1/metrics";
  a.interval_ms = 500;
  a.scrapes = 4;
  a.bad_lines = 1;
  a.gauges["q{instance=\"p:1\"}"] = {2, 0, 5, 1};
  b.url = "http://d:2/metrics";
  b.scrapes = 3;
  b.failed_scrapes = 2;
  b.error = "HTTP 503";
  b.dropped_series = 7;
  b.gauges["q{instance=\"d:2\"}"] = {1, 0, 2, 0};
  b.counters["t_total{instance=\"d:2\"}"] = {10, 5};
  const ServerMetrics m = merge_server_metrics({a, b});
  EXPECT_EQ(m.url, "http://p:1/metrics, http://d:2/metrics");
  EXPECT_EQ(m.interval_ms, 500);
  EXPECT_EQ(m.scrapes, 7);
  EXPECT_EQ(m.failed_scrapes, 2);
  EXPECT_EQ(m.error, "http://d:2/metrics: HTTP 503");
  EXPECT_EQ(m.bad_lines, 1);
  EXPECT_EQ(m.dropped_series, 7);
  EXPECT_EQ(m.gauges.size(), 2u);
  EXPECT_EQ(m.gauges.at("q{instance=\"p:1\"}").max, 5);
  EXPECT_EQ(m.counters.at("t_total{instance=\"d:2\"}").increase, 10);
  EXPECT_EQ(merge_server_metrics({b}).error, "HTTP 503");  // one target as it is
  EXPECT_THROW(merge_server_metrics({}), Error);
}
