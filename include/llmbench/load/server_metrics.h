#pragma once
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "llmbench/load/client.h"
#include "llmbench/load/prometheus.h"
#include "llmbench/report/load_result.h"

namespace llmbench {

// Folds /metrics pages, in time order, into a point's ServerMetrics as they come (a page is not kept:
// a long point at two pages a second would hold gigabytes). Family types come from `# TYPE` lines:
// counters (and OpenMetrics' NAME_total) give their increase, histograms their observations during the
// point (`_bucket`, `_sum`, `_count`), a summary's `_sum`/`_count` are counters, everything else (gauges,
// untyped, summary quantiles) gives mean, min, max and last. Non-finite values are skipped.
class ServerMetricsAggregator {
 public:
  void add(double t_s, const PromPage& page);
  ServerMetrics result() const;  // the series and bad_lines; the caller fills url and the scrape counts

 private:
  struct GaugeSum {
    int n = 0;
    double sum = 0, min = 0, max = 0, last = 0;
  };
  struct Increase {
    bool seen = false, reset = false;
    double last = 0, increase = 0;
    void add(double v, bool new_series);  // new_series: first seen after the first page
  };
  struct Buckets {
    std::map<double, double> first, last;  // le -> cumulative count, on the series' first and latest page
    Increase count, sum;
  };
  bool admit(const std::string& key);  // false beyond kMaxServerSeries
  std::map<std::string, GaugeSum> gauges_;
  std::map<std::string, Increase> counters_;
  std::map<std::string, Buckets> histograms_;
  std::set<std::string> dropped_;
  int bad_lines_ = 0;
  int pages_ = 0;
  double first_t_ = 0, last_t_ = 0;
};

// Scrapes a /metrics URL every `interval_ms` on a thread of its own while a point runs. With an `instance`,
// every series gets the label instance="<instance>" (a label of that name on the page becomes
// exported_instance, as Prometheus does), so the pages of several servers can be told apart.
class MetricsScraper {
 public:
  MetricsScraper(Endpoint endpoint, std::string path, std::vector<std::pair<std::string, std::string>> headers,
                 TlsOptions tls, double interval_ms, std::string instance = "");
  ~MetricsScraper();
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  void start();             // the first page now (on this thread), then one every interval
  ServerMetrics finish();   // stops the thread, reads the last page, summarizes

 private:
  void scrape(bool final_scrape);  // final: after the thread stopped, not cut short by the stop
  void stop_thread();
  Endpoint endpoint_;
  std::string path_;
  std::vector<std::pair<std::string, std::string>> headers_;
  TlsOptions tls_;
  double interval_ms_;
  std::string instance_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  Clock::time_point t0_;
  ServerMetricsAggregator aggregator_;  // guarded by mutex_
  int scrapes_ = 0, failed_ = 0;
  std::string error_;
};

// Several targets' figures as one (their series told apart by the instance label): URLs joined with ", ",
// scrape, failure, bad-line and dropped-series counts added, the first error named by its URL. One target
// is returned as it is.
ServerMetrics merge_server_metrics(std::vector<ServerMetrics> targets);

}  // namespace llmbench
