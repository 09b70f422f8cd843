#include "llmbench/load/server_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "llmbench/base/error.h"

namespace llmbench {

namespace {

constexpr double kScrapeTimeoutS = 5;

// What a sample is to its family, by the page's `# TYPE` lines.
enum class Role { gauge, counter, bucket, histogram_sum, histogram_count, skip };

bool strip_suffix(const std::string& name, const std::string& suffix, std::string& base) {
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  base = name.substr(0, name.size() - suffix.size());
  return true;
}

Role role_of(const std::string& name, const std::map<std::string, std::string>& types, std::string& family) {
  auto type_of = [&](const std::string& f) {
    const auto it = types.find(f);
    return it == types.end() ? std::string() : it->second;
  };
  family = name;
  std::string base;
  // Creation times of counters, histograms and summaries: Python's prometheus_client writes them as gauges
  // of their own (`# TYPE vllm:prompt_tokens_created gauge` beside `vllm:prompt_tokens_total`), OpenMetrics
  // untyped. A Unix time is no figure of the point.
  if (strip_suffix(name, "_created", base) && (!type_of(base).empty() || type_of(base + "_total") == "counter"))
    return Role::skip;
  const std::string own = type_of(name);
  if (own == "counter") return Role::counter;
  if (!own.empty()) return Role::gauge;  // gauge, untyped, a summary's quantiles
  if (strip_suffix(name, "_total", base) && type_of(base) == "counter") return Role::counter;  // OpenMetrics
  if (strip_suffix(name, "_bucket", base) && type_of(base) == "histogram") return family = base, Role::bucket;
  for (const auto& [suffix, role] : {std::pair<const char*, Role>{"_sum", Role::histogram_sum}, {"_count", Role::histogram_count}}) {
    if (!strip_suffix(name, suffix, base)) continue;
    if (type_of(base) == "histogram") return family = base, role;
    if (type_of(base) == "summary") return Role::counter;
  }
  return Role::gauge;  // no type: untyped
}

double le_of(const PromSample& s) {
  for (const auto& [k, v] : s.labels) {
    if (k != "le") continue;
    if (v == "+Inf" || v == "Inf") return std::numeric_limits<double>::infinity();
    char* end = nullptr;
    const double le = std::strtod(v.c_str(), &end);
    if (end == v.c_str() + v.size() && !v.empty()) return le;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// Prometheus' histogram_quantile: the bucket where the rank falls, linear inside it (0 below the first
// bound); in the +Inf bucket, the highest finite bound.
std::optional<double> quantile(const std::vector<std::pair<double, double>>& cumulative, double total, double q) {
  if (!(total > 0) || cumulative.empty()) return std::nullopt;
  const double rank = q * total;
  for (std::size_t i = 0; i < cumulative.size(); ++i) {
    const auto [le, count] = cumulative[i];
    if (count < rank) continue;
    if (std::isinf(le)) return i > 0 ? std::optional<double>(cumulative[i - 1].first) : std::nullopt;
    const double lower = i > 0 ? cumulative[i - 1].first : std::min(0.0, le);
    const double below = i > 0 ? cumulative[i - 1].second : 0;
    if (count == below) return le;
    return lower + (le - lower) * (rank - below) / (count - below);
  }
  return cumulative.back().first;
}

}  // namespace

void ServerMetricsAggregator::Increase::add(double v, bool new_series) {
  if (!seen) {
    seen = true;
    if (new_series) increase = std::max(v, 0.0);  // created during the point: it counted from 0
  } else if (v >= last) {
    increase += v - last;
  } else {
    reset = true;  // the server restarted the counter: what it counts since
    increase += std::max(v, 0.0);
  }
  last = v;
}

bool ServerMetricsAggregator::admit(const std::string& key) {
  if (gauges_.count(key) || counters_.count(key) || histograms_.count(key)) return true;
  if (gauges_.size() + counters_.size() + histograms_.size() < static_cast<std::size_t>(kMaxServerSeries)) return true;
  dropped_.insert(key);
  return false;
}

void ServerMetricsAggregator::add(double t_s, const PromPage& page) {
  if (pages_++ == 0) first_t_ = t_s;
  last_t_ = t_s;
  bad_lines_ += page.bad_lines;
  for (const auto& s : page.samples) {
    if (!std::isfinite(s.value)) continue;
    std::string family;
    const Role role = role_of(s.name, page.types, family);
    if (role == Role::skip) continue;
    if (role == Role::gauge || role == Role::counter) {
      const std::string key = series_key(s.name, s.labels);
      if (!admit(key)) continue;
      if (role == Role::counter) {
        counters_[key].add(s.value, pages_ > 1);
        continue;
      }
      GaugeSum& g = gauges_[key];
      g.min = g.n ? std::min(g.min, s.value) : s.value;
      g.max = g.n ? std::max(g.max, s.value) : s.value;
      ++g.n;
      g.sum += s.value;
      g.last = s.value;
      continue;
    }
    const std::string key = series_key(family, s.labels, "le");
    if (!admit(key)) continue;
    Buckets& h = histograms_[key];
    if (role == Role::histogram_sum) {
      h.sum.add(s.value, pages_ > 1);
    } else if (role == Role::histogram_count) {
      h.count.add(s.value, pages_ > 1);
    } else if (const double le = le_of(s); !std::isnan(le)) {
      // The counts before the point: the first page's (none for a series created during the point).
      if (pages_ == 1) h.first[le] = s.value;
      h.last[le] = s.value;
    }
  }
}

ServerMetrics ServerMetricsAggregator::result() const {
  ServerMetrics m;
  m.bad_lines = bad_lines_;
  m.dropped_series = static_cast<int>(dropped_.size());
  for (const auto& [key, g] : gauges_) m.gauges[key] = {g.sum / g.n, g.min, g.max, g.last};
  const double span = last_t_ - first_t_;  // first page to last: the point
  for (const auto& [key, c] : counters_) m.counters[key] = {c.increase, span > 0 ? c.increase / span : 0};
  for (const auto& [key, b] : histograms_) {
    ServerMetrics::Histogram h;
    h.count = b.count.increase;
    h.sum = b.sum.increase;
    // Bucket counts observed during the point: last minus first page (after a reset, the last page's).
    std::vector<std::pair<double, double>> cumulative;
    for (const auto& [le, last] : b.last) {
      const auto first = b.first.find(le);
      cumulative.emplace_back(le, b.count.reset || first == b.first.end() ? last : last - first->second);
    }
    if (h.count > 0) {
      h.mean = h.sum / h.count;
      h.p50 = quantile(cumulative, h.count, 0.5);
      h.p90 = quantile(cumulative, h.count, 0.9);
      h.p99 = quantile(cumulative, h.count, 0.99);
    }
    m.histograms[key] = h;
  }
  return m;
}

MetricsScraper::MetricsScraper(Endpoint endpoint, std::string path, std::vector<std::pair<std::string, std::string>> headers,
                               TlsOptions tls, double interval_ms, std::string instance)
    : endpoint_(std::move(endpoint)), path_(std::move(path)), headers_(std::move(headers)), tls_(std::move(tls)),
      interval_ms_(interval_ms), instance_(std::move(instance)) {}

MetricsScraper::~MetricsScraper() { stop_thread(); }

void MetricsScraper::start() {
  t0_ = Clock::now();
  scrape(false);
  thread_ = std::thread([this] {
    auto next = Clock::now();
    const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(interval_ms_));
    while (true) {
      next = std::max(next + interval, Clock::now());
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_until(lock, next, [this] { return stop_; })) return;
      lock.unlock();
      scrape(false);
    }
  });
}

void MetricsScraper::stop_thread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

ServerMetrics MetricsScraper::finish() {
  stop_thread();
  scrape(true);  // the page after the point's last response
  std::lock_guard<std::mutex> lock(mutex_);
  ServerMetrics m = aggregator_.result();
  m.url = endpoint_.url() + path_;
  m.interval_ms = interval_ms_;
  m.scrapes = scrapes_;
  m.failed_scrapes = failed_;
  m.error = error_;
  return m;
}

void MetricsScraper::scrape(bool final_scrape) {
  const double t = std::chrono::duration<double>(Clock::now() - t0_).count();
  std::string failure;
  PromPage page;
  try {
    // A stop cuts a scrape of the thread short; the final one (stop already set) runs to its end.
    const auto [status, body] = http_get(endpoint_, path_, kScrapeTimeoutS, headers_,
                                         [this, final_scrape] {
                                           if (final_scrape) return false;
                                           std::lock_guard<std::mutex> lock(mutex_);
                                           return stop_;
                                         },
                                         tls_);
    if (status != 200) failure = cat("HTTP ", status);
    else page = parse_prometheus(body);
    if (!instance_.empty())
      for (auto& sample : page.samples) {
        for (auto& [name, value] : sample.labels)
          if (name == "instance") name = "exported_instance";
        sample.labels.emplace_back("instance", instance_);
      }
  } catch (const Interrupted&) {
    return;
  } catch (const Error& e) {
    failure = e.what();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure.empty()) {
    ++failed_;
    if (error_.empty()) error_ = first_line(failure);
    return;
  }
  aggregator_.add(t, page);
  ++scrapes_;
}

ServerMetrics merge_server_metrics(std::vector<ServerMetrics> targets) {
  if (targets.empty()) throw Error("merge_server_metrics: no targets");
  if (targets.size() == 1) return std::move(targets.front());
  ServerMetrics all;
  all.interval_ms = targets.front().interval_ms;
  for (auto& t : targets) {
    all.url += (all.url.empty() ? "" : ", ") + t.url;
    all.scrapes += t.scrapes;
    all.failed_scrapes += t.failed_scrapes;
    if (all.error.empty() && !t.error.empty()) all.error = cat(t.url, ": ", t.error);
    all.bad_lines += t.bad_lines;
    all.dropped_series += t.dropped_series;
    all.gauges.merge(t.gauges);  // keys differ by their instance label
    all.counters.merge(t.counters);
    all.histograms.merge(t.histograms);
  }
  return all;
}

}  // namespace llmbench
