#include "llmbench/report/load_result.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "llmbench/base/error.h"
#include "llmbench/stats/stats.h"

namespace llmbench {

nlohmann::json optional_number(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

using nlohmann::json;

std::optional<double> RequestRecord::tpot_ms() const {
  if (output_tokens < 2) return std::nullopt;
  return (e2e_ms - ttft_ms) / (output_tokens - 1);
}

bool Slo::met_by(const RequestRecord& r) const {
  if (!r.ok) return false;
  if (ttft_ms && r.ttft_ms > *ttft_ms) return false;
  if (e2e_ms && r.e2e_ms > *e2e_ms) return false;
  if (tpot_ms) {
    const auto t = r.tpot_ms();
    if (t && *t > *tpot_ms) return false;  // one token has no TPOT: met, as vLLM counts it (0)
  }
  return true;
}

Slo parse_slo(const std::string& text) {
  Slo slo;
  std::istringstream in(text);
  std::string item;
  auto bad = [&](const std::string& why) {
    return UsageError(cat("--slo '", text, "': ", why, " (expected e.g. ttft_ms=200,tpot_ms=50,e2e_ms=5000)"));
  };
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw bad(cat("'", item, "' has no '='"));
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    double v = 0;
    std::size_t used = 0;
    try {
      v = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !std::isfinite(v) || v <= 0)
      throw bad(cat("'", value, "' is not a positive number of milliseconds"));
    if (key == "ttft_ms") slo.ttft_ms = v;
    else if (key == "tpot_ms") slo.tpot_ms = v;
    else if (key == "e2e_ms") slo.e2e_ms = v;
    else throw bad(cat("unknown objective '", key, "'"));
  }
  if (slo.empty()) throw bad("no objective given");
  return slo;
}

std::string slo_text(const Slo& slo) {
  std::string out;
  for (const auto& [name, v] : {std::pair{"ttft_ms", slo.ttft_ms}, {"tpot_ms", slo.tpot_ms}, {"e2e_ms", slo.e2e_ms}}) {
    if (!v) continue;
    std::ostringstream value;
    value << *v;
    out += (out.empty() ? "" : ",") + cat(name, "=", value.str());
  }
  return out;
}

const std::vector<std::string>& load_summary_metrics() {
  static const std::vector<std::string> names = {"ttft_ms", "tpot_ms", "e2e_ms", "itl_ms"};
  return names;
}

std::vector<double> load_metric_values(const LoadResult& load, const std::string& metric) {
  const auto& known = load_summary_metrics();
  if (std::find(known.begin(), known.end(), metric) == known.end()) return {};
  std::vector<double> out;
  // A whole response has only its end-to-end latency: its first token came with its last.
  if (!load.stream && metric != "e2e_ms") return {};
  for (const auto& r : load.requests) {
    if (!r.ok) continue;
    if (metric == "ttft_ms") out.push_back(r.ttft_ms);
    else if (metric == "e2e_ms") out.push_back(r.e2e_ms);
    else if (metric == "itl_ms") out.insert(out.end(), r.itl_ms.begin(), r.itl_ms.end());
    else if (const auto t = r.tpot_ms()) out.push_back(*t);
  }
  return out;
}

namespace {

// The point's time in windows of load.slice_s from its start (start_ms 0): each window's requests by their
// issue time, and its output tokens by their events' arrival (start + TTFT, then each ITL gap; a request
// whose events carried several tokens spreads its count evenly over them).
std::vector<TimeSlice> time_slices(const LoadResult& load) {
  const double width_ms = load.slice_s * 1e3;
  if (!(width_ms > 0) || load.requests.empty()) return {};
  double end_ms = 0;
  for (const auto& r : load.requests) end_ms = std::max(end_ms, r.start_ms + r.e2e_ms);
  const double windows = std::max(1.0, std::ceil(end_ms / width_ms));
  const std::size_t n = static_cast<std::size_t>(std::min(windows, static_cast<double>(kMaxTimeSlices)));
  std::vector<TimeSlice> out(n);
  std::vector<std::vector<double>> ttft(n), tpot(n), e2e(n);
  std::vector<double> tokens(n, 0.0);
  // The last window ends at the last byte, that instant included.
  auto window_of = [&](double t_ms) { return static_cast<std::size_t>(std::clamp(std::floor(t_ms / width_ms), 0.0, windows - 1)); };
  for (const auto& r : load.requests) {
    if (!r.ok && r.error == kClientCancel) continue;
    const std::size_t w = window_of(r.start_ms);
    if (w >= n) continue;
    ++out[w].started;
    if (!r.ok) {
      ++out[w].failed;
      continue;
    }
    ++out[w].completed;
    if (load.stream) {
      ttft[w].push_back(r.ttft_ms);
      if (const auto t = r.tpot_ms()) tpot[w].push_back(*t);
    }
    e2e[w].push_back(r.e2e_ms);
    // The token events: at start + TTFT, then one per ITL gap (a whole response: all at its end).
    const double events = load.stream ? static_cast<double>(r.itl_ms.size() + 1) : 1.0;
    const double per_event = r.output_tokens / events;
    double t = r.start_ms + (load.stream ? r.ttft_ms : r.e2e_ms);
    for (std::size_t i = 0;; ++i) {
      if (const std::size_t at = window_of(t); at < n) tokens[at] += per_event;
      if (!load.stream || i == r.itl_ms.size()) break;
      t += r.itl_ms[i];
    }
  }
  for (std::size_t w = 0; w < n; ++w) {
    TimeSlice& s = out[w];
    s.start_s = w * load.slice_s;
    s.duration_s = w + 1 == static_cast<std::size_t>(windows) ? (end_ms - w * width_ms) / 1e3 : load.slice_s;
    if (!ttft[w].empty()) s.ttft_ms_p50 = percentile(ttft[w], 50);
    if (!tpot[w].empty()) s.tpot_ms_p50 = percentile(tpot[w], 50);
    if (!e2e[w].empty()) s.e2e_ms_p50 = percentile(e2e[w], 50);
    s.output_tokens_per_s = s.duration_s > 0 ? tokens[w] / s.duration_s : 0;
  }
  return out;
}

}  // namespace

void summarize_load(LoadResult& load) {
  load.completed = load.failed = load.cancelled = 0;
  load.errors.clear();
  load.server_stages_ms.clear();
  double first_start = 0, last_start = 0, last_end = 0, good = 0, prompt_tokens = 0, output_tokens = 0;
  std::map<std::string, int> stage_counts;
  for (std::size_t i = 0; i < load.requests.size(); ++i) {
    const RequestRecord& r = load.requests[i];
    first_start = i == 0 ? r.start_ms : std::min(first_start, r.start_ms);
    last_start = i == 0 ? r.start_ms : std::max(last_start, r.start_ms);
    last_end = i == 0 ? r.start_ms + r.e2e_ms : std::max(last_end, r.start_ms + r.e2e_ms);
    if (!r.ok && r.error == kClientCancel) {
      ++load.cancelled;
      continue;
    }
    if (!r.ok) {
      ++load.failed;
      ++load.errors[r.error];
      continue;
    }
    ++load.completed;
    prompt_tokens += r.prompt_tokens;
    output_tokens += r.output_tokens;
    if (load.slo.met_by(r)) ++good;
    for (const auto& [stage, ms] : r.server_ms) {
      load.server_stages_ms[stage] += ms;
      ++stage_counts[stage];
    }
  }
  for (auto& [stage, sum] : load.server_stages_ms) sum /= stage_counts[stage];
  load.elapsed_s = (last_end - first_start) / 1e3;
  const std::size_t n = load.requests.size();
  load.achieved_rate = n > 1 && last_start > first_start ? (n - 1) / ((last_start - first_start) / 1e3) : 0;
  const double s = load.elapsed_s;
  load.requests_per_s = s > 0 ? load.completed / s : 0;
  load.output_tokens_per_s = s > 0 ? output_tokens / s : 0;
  load.total_tokens_per_s = s > 0 ? (prompt_tokens + output_tokens) / s : 0;
  load.goodput_requests_per_s = s > 0 && !load.slo.empty() ? good / s : 0;
  // Of the requests the server was left to answer: an abandoned one neither meets nor misses an SLO.
  const std::size_t answerable = n - static_cast<std::size_t>(load.cancelled);
  load.goodput_fraction = answerable > 0 && !load.slo.empty() ? good / answerable : 0;

  // The prefix cache, over the completed requests whose usage told.
  load.prompt_cache.reset();
  for (const auto& r : load.requests) {
    if (!r.ok || !r.cached_tokens) continue;
    if (!load.prompt_cache) load.prompt_cache.emplace();
    ++load.prompt_cache->requests;
    load.prompt_cache->prompt_tokens += r.prompt_tokens;
    load.prompt_cache->cached_tokens += *r.cached_tokens;
  }

  // One pass, by the turns present (a file's turn numbers are not trusted to be small).
  struct Bucket {
    LoadResult::Turn turn;
    std::vector<double> ttft, e2e;
    double prompt = 0;
    long long told_prompt = 0, cached = 0;  // of the requests whose usage said how many were cached
    bool told = false;
  };

  std::map<int, Bucket> turns;
  for (const auto& r : load.requests) {
    if (r.turn < 1 || (!r.ok && r.error == kClientCancel)) continue;
    Bucket& b = turns[r.turn];
    b.turn.turn = r.turn;
    if (!r.ok) {
      ++b.turn.failed;
      continue;
    }
    ++b.turn.completed;
    b.prompt += r.prompt_tokens;
    if (r.cached_tokens) {
      b.told = true;
      b.told_prompt += r.prompt_tokens;
      b.cached += *r.cached_tokens;
    }
    b.ttft.push_back(r.ttft_ms);
    b.e2e.push_back(r.e2e_ms);
  }
  load.by_turn.clear();
  for (auto& [t, b] : turns) {
    if (b.turn.completed > 0) {
      b.turn.prompt_tokens_mean = b.prompt / b.turn.completed;
      if (load.stream) {
        double sum = 0;
        for (double v : b.ttft) sum += v;
        b.turn.ttft_ms_mean = sum / b.ttft.size();
        b.turn.ttft_ms_p50 = percentile(b.ttft, 50);
      }
      b.turn.e2e_ms_p50 = percentile(b.e2e, 50);
      if (b.told && b.told_prompt > 0) b.turn.cached_fraction = static_cast<double>(b.cached) / b.told_prompt;
    }
    load.by_turn.push_back(b.turn);
  }
  if (load.prompt_cache && load.prompt_cache->prompt_tokens > 0)
    load.prompt_cache->hit_rate = static_cast<double>(load.prompt_cache->cached_tokens) / load.prompt_cache->prompt_tokens;
  load.by_slice = time_slices(load);
}

// ---------------------------------------------------------------- JSON

namespace {

json slo_json(const Slo& slo) {
  json j = json::object();
  if (slo.ttft_ms) j["ttft_ms"] = *slo.ttft_ms;
  if (slo.tpot_ms) j["tpot_ms"] = *slo.tpot_ms;
  if (slo.e2e_ms) j["e2e_ms"] = *slo.e2e_ms;
  return j;
}

json record_json(const RequestRecord& r) {
  json j = {{"start_ms", r.start_ms},   {"scheduled_ms", r.scheduled_ms}, {"ok", r.ok},
            {"error", r.error},         {"ttft_ms", r.ttft_ms},           {"e2e_ms", r.e2e_ms},
            {"itl_ms", r.itl_ms},       {"prompt_tokens", r.prompt_tokens},
            {"output_tokens", r.output_tokens}};
  if (!r.server_ms.empty()) j["server_ms"] = r.server_ms;
  if (!r.error_detail.empty()) j["error_detail"] = r.error_detail;
  if (r.cached_tokens) j["cached_tokens"] = *r.cached_tokens;
  if (r.turn > 0) {
    j["conversation"] = r.conversation;
    j["turn"] = r.turn;
  }
  return j;
}

// Typed access with the JSON path in every error.
struct Reader {
  const json& j;
  std::string path;

  const json& at(const std::string& key) const {
    if (!j.contains(key)) throw Error(cat(path, ".", key, ": missing"));
    return j.at(key);
  }
  Reader object(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_object()) throw Error(cat(path, ".", key, ": expected an object, got ", v.type_name()));
    return {v, path + "." + key};
  }
  double number(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number()) throw Error(cat(path, ".", key, ": expected a number, got ", v.type_name()));
    return v.get<double>();
  }
  int integer(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number_integer()) throw Error(cat(path, ".", key, ": expected an integer, got ", v.type_name()));
    return v.get<int>();
  }
  std::string string(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) throw Error(cat(path, ".", key, ": expected a string, got ", v.type_name()));
    return v.get<std::string>();
  }
  bool boolean(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_boolean()) throw Error(cat(path, ".", key, ": expected true or false, got ", v.type_name()));
    return v.get<bool>();
  }
  bool has(const std::string& key) const { return j.contains(key) && !j.at(key).is_null(); }
  std::map<std::string, double> numbers(const std::string& key) const {
    std::map<std::string, double> out;
    Reader o = object(key);
    for (const auto& [k, v] : o.j.items()) out[k] = o.number(k);
    return out;
  }
};

json server_metrics_json(const ServerMetrics& m) {
  json gauges = json::object(), counters = json::object(), histograms = json::object();
  for (const auto& [k, g] : m.gauges) gauges[k] = {{"mean", g.mean}, {"min", g.min}, {"max", g.max}, {"last", g.last}};
  for (const auto& [k, c] : m.counters) counters[k] = {{"increase", c.increase}, {"per_s", c.per_s}};
  for (const auto& [k, h] : m.histograms)
    histograms[k] = {{"count", h.count}, {"sum", h.sum}, {"mean", optional_number(h.mean)}, {"p50", optional_number(h.p50)},
                     {"p90", optional_number(h.p90)}, {"p99", optional_number(h.p99)}};
  return {{"url", m.url}, {"interval_ms", m.interval_ms}, {"scrapes", m.scrapes}, {"failed_scrapes", m.failed_scrapes},
          {"error", m.error}, {"bad_lines", m.bad_lines}, {"dropped_series", m.dropped_series},
          {"gauges", gauges}, {"counters", counters}, {"histograms", histograms}};
}

ServerMetrics server_metrics_from(const Reader& r) {
  ServerMetrics m;
  m.url = r.string("url");
  m.interval_ms = r.number("interval_ms");
  m.scrapes = r.integer("scrapes");
  m.failed_scrapes = r.integer("failed_scrapes");
  m.error = r.string("error");
  m.bad_lines = r.integer("bad_lines");
  m.dropped_series = r.integer("dropped_series");
  const Reader gauges = r.object("gauges"), counters = r.object("counters"), histograms = r.object("histograms");
  for (const auto& [k, v] : gauges.j.items()) {
    const Reader g = gauges.object(k);
    m.gauges[k] = {g.number("mean"), g.number("min"), g.number("max"), g.number("last")};
  }
  for (const auto& [k, v] : counters.j.items()) {
    const Reader c = counters.object(k);
    m.counters[k] = {c.number("increase"), c.number("per_s")};
  }
  for (const auto& [k, v] : histograms.j.items()) {
    const Reader h = histograms.object(k);
    ServerMetrics::Histogram out;
    out.count = h.number("count");
    out.sum = h.number("sum");
    for (const auto& [name, field] : {std::pair<const char*, std::optional<double> ServerMetrics::Histogram::*>{"mean", &ServerMetrics::Histogram::mean},
                                      {"p50", &ServerMetrics::Histogram::p50}, {"p90", &ServerMetrics::Histogram::p90},
                                      {"p99", &ServerMetrics::Histogram::p99}})
      if (h.has(name)) out.*field = h.number(name);
    m.histograms[k] = out;
  }
  return m;
}

RequestRecord record_from(const Reader& r) {
  RequestRecord rec;
  rec.start_ms = r.number("start_ms");
  if (r.has("scheduled_ms")) rec.scheduled_ms = r.number("scheduled_ms");
  rec.ok = r.boolean("ok");
  if (r.has("error")) rec.error = r.string("error");
  if (r.has("error_detail")) rec.error_detail = r.string("error_detail");
  // Latencies are never negative: such a file is corrupt (the gate would take it for a gain).
  auto negative = [&](const std::string& where, double v) {
    return Error(cat(r.path, ".", where, ": expected a number >= 0, got ", v));
  };
  rec.ttft_ms = r.number("ttft_ms");
  if (!(rec.ttft_ms >= 0)) throw negative("ttft_ms", rec.ttft_ms);
  rec.e2e_ms = r.number("e2e_ms");
  if (!(rec.e2e_ms >= 0)) throw negative("e2e_ms", rec.e2e_ms);
  const json& itl = r.at("itl_ms");
  if (!itl.is_array()) throw Error(cat(r.path, ".itl_ms: expected an array, got ", itl.type_name()));
  rec.itl_ms.reserve(itl.size());
  for (std::size_t i = 0; i < itl.size(); ++i) {
    if (!itl[i].is_number()) throw Error(cat(r.path, ".itl_ms[", i, "]: expected a number, got ", itl[i].type_name()));
    const double v = itl[i].get<double>();
    if (!(v >= 0)) throw negative(cat("itl_ms[", i, "]"), v);
    rec.itl_ms.push_back(v);
  }
  rec.prompt_tokens = r.integer("prompt_tokens");
  rec.output_tokens = r.integer("output_tokens");
  if (r.has("server_ms")) rec.server_ms = r.numbers("server_ms");
  if (r.has("cached_tokens")) {  // the server's usage said how many prompt tokens its cache held
    rec.cached_tokens = r.integer("cached_tokens");
    if (*rec.cached_tokens < 0 || *rec.cached_tokens > rec.prompt_tokens)
      throw Error(cat(r.path, ".cached_tokens: expected 0 to prompt_tokens (", rec.prompt_tokens, "), got ", *rec.cached_tokens));
  }
  if (r.has("turn")) {  // a multi-turn point's request
    rec.turn = r.integer("turn");
    rec.conversation = r.integer("conversation");
    if (rec.turn < 1) throw Error(cat(r.path, ".turn: expected 1 or more, got ", rec.turn));
    if (rec.conversation < 0) throw Error(cat(r.path, ".conversation: expected 0 or more, got ", rec.conversation));
  }
  return rec;
}

}  // namespace

json load_to_json(const LoadResult& l) {
  json requests = json::array();
  for (const auto& r : l.requests) requests.push_back(record_json(r));
  json slices = json::array();
  for (const auto& s : l.by_slice)
    slices.push_back({{"start_s", s.start_s}, {"duration_s", s.duration_s}, {"started", s.started},
                      {"completed", s.completed}, {"failed", s.failed}, {"ttft_ms_p50", optional_number(s.ttft_ms_p50)},
                      {"tpot_ms_p50", optional_number(s.tpot_ms_p50)}, {"e2e_ms_p50", optional_number(s.e2e_ms_p50)},
                      {"output_tokens_per_s", s.output_tokens_per_s}});
  json by_turn = json::array();
  for (const auto& t : l.by_turn)
    by_turn.push_back({{"turn", t.turn}, {"completed", t.completed}, {"failed", t.failed},
                       {"prompt_tokens_mean", t.prompt_tokens_mean}, {"ttft_ms_p50", optional_number(t.ttft_ms_p50)},
                       {"ttft_ms_mean", optional_number(t.ttft_ms_mean)}, {"e2e_ms_p50", optional_number(t.e2e_ms_p50)},
                       {"cached_fraction", optional_number(t.cached_fraction)}});
  return {
      {"load",
       {{"endpoint", l.endpoint}, {"api", l.api}, {"concurrency", l.concurrency},
        {"request_rate", l.request_rate}, {"max_concurrency", l.max_concurrency}, {"arrival", l.arrival}, {"num_requests", l.num_requests},
        {"duration_s", l.duration_s}, {"warmup_requests", l.warmup_requests}, {"dataset", l.dataset},
        {"range_ratio", l.range_ratio}, {"prefix_len", l.prefix_len},
        {"trace_block_size", l.trace_block_size ? json(*l.trace_block_size) : json(nullptr)},
        {"turns", l.turns}, {"turns_stddev", l.turns_stddev}, {"turn_delay_ms", l.turn_delay_ms},
        {"turn_delay_stddev_ms", l.turn_delay_stddev_ms}, {"timeout_s", l.timeout_s},
        {"cancel_rate", l.cancel_rate}, {"cancel_delay_ms", l.cancel_delay_ms}, {"slice_s", l.slice_s},
        {"extra_body", l.extra_body.empty() ? json(nullptr) : json::parse(l.extra_body)}, {"stream", l.stream},
        {"tls_verify", l.tls_verify ? json(*l.tls_verify) : json(nullptr)},
        {"search", l.search ? json{{"axis", l.search->axis}, {"target_goodput", l.search->target},
                                   {"passed", l.search->passed}, {"best", l.search->best}}
                            : json(nullptr)}, {"token_count_source", l.token_count_source}, {"partial", l.partial}}},
      {"requests",
       {{"completed", l.completed}, {"failed", l.failed}, {"cancelled", l.cancelled}, {"errors", l.errors},
        {"note", "failed requests are counted here and left out of every latency statistic"}}},
      {"throughput",
       {{"requests_per_s", l.requests_per_s},
        {"output_tokens_per_s", l.output_tokens_per_s},
        {"total_tokens_per_s", l.total_tokens_per_s},
        {"elapsed_s", l.elapsed_s}}},
      {"goodput",
       {{"slo", slo_json(l.slo)},  // no objectives: no goodput (null), rather than a misleading 0
        {"requests_per_s", l.slo.empty() ? json(nullptr) : json(l.goodput_requests_per_s)},
        {"fraction", l.slo.empty() ? json(nullptr) : json(l.goodput_fraction)}}},
      {"rate",
       {{"offered_per_s", l.request_rate > 0 ? json(l.request_rate) : json(nullptr)},
        {"achieved_per_s", l.achieved_rate},
        {"mean_send_lag_ms", l.mean_send_lag_ms}}},
      {"server_stages_ms", l.server_stages_ms.empty() ? json(nullptr) : json(l.server_stages_ms)},
      {"server_metrics", l.server_metrics ? server_metrics_json(*l.server_metrics) : json(nullptr)},
      {"client", {{"events_per_s", l.client_events_per_s}}},
      {"by_turn", by_turn.empty() ? json(nullptr) : by_turn},
      {"by_slice", slices.empty() ? json(nullptr) : slices},
      {"prompt_cache", l.prompt_cache ? json{{"requests", l.prompt_cache->requests},
                                             {"prompt_tokens", l.prompt_cache->prompt_tokens},
                                             {"cached_tokens", l.prompt_cache->cached_tokens},
                                             {"hit_rate", optional_number(l.prompt_cache->hit_rate)}}
                                      : json(nullptr)},
      {"request_log", requests},
  };
}

LoadResult load_from_json(const json& point, const std::string& path) {
  Reader p{point, path};
  LoadResult l;
  Reader a = p.object("load");
  l.endpoint = a.string("endpoint");
  l.api = a.string("api");
  l.concurrency = a.integer("concurrency");
  l.request_rate = a.number("request_rate");
  if (a.has("max_concurrency")) {  // older files: no cap
    l.max_concurrency = a.integer("max_concurrency");
    if (l.max_concurrency < 0) throw Error(cat(path, ".load.max_concurrency: expected 0 or more, got ", l.max_concurrency));
  }
  l.arrival = a.string("arrival");
  l.num_requests = a.integer("num_requests");
  l.duration_s = a.number("duration_s");
  l.warmup_requests = a.integer("warmup_requests");
  l.dataset = a.string("dataset");
  if (a.has("extra_body") && !a.at("extra_body").is_null()) {  // older files: none
    if (!a.at("extra_body").is_object())
      throw Error(cat(path, ".load.extra_body: expected an object or null, got ", a.at("extra_body").type_name()));
    l.extra_body = a.at("extra_body").dump();
  }
  if (a.has("stream")) l.stream = a.boolean("stream");  // older files: streamed
  if (a.has("tls_verify") && !a.at("tls_verify").is_null()) l.tls_verify = a.boolean("tls_verify");  // older: unknown
  if (a.has("search") && !a.at("search").is_null()) {  // older files: no search
    Reader sr = a.object("search");
    SearchProbe probe;
    probe.axis = sr.string("axis");
    if (probe.axis != "request_rate" && probe.axis != "concurrency")
      throw Error(cat(path, ".load.search.axis: expected request_rate or concurrency, got '", probe.axis, "'"));
    probe.target = sr.number("target_goodput");
    probe.passed = sr.boolean("passed");
    probe.best = sr.boolean("best");
    l.search = probe;
  }
  if (a.has("prefix_len")) {  // older files: no shared prefix
    l.prefix_len = a.integer("prefix_len");
    if (l.prefix_len < 0) throw Error(cat(path, ".load.prefix_len: expected 0 or more, got ", l.prefix_len));
  }
  if (a.has("trace_block_size") && !a.at("trace_block_size").is_null()) {  // older files: no traces
    l.trace_block_size = a.integer("trace_block_size");
    if (*l.trace_block_size < 1)
      throw Error(cat(path, ".load.trace_block_size: expected 1 or more, got ", *l.trace_block_size));
  }
  if (a.has("range_ratio")) {  // older files: exact lengths
    l.range_ratio = a.number("range_ratio");
    if (!(l.range_ratio >= 0 && l.range_ratio < 1))
      throw Error(cat(path, ".load.range_ratio: expected a number in [0, 1), got ", l.range_ratio));
  }
  if (a.has("turns")) {  // older files: single requests
    l.turns = a.integer("turns");
    if (l.turns < 1) throw Error(cat(path, ".load.turns: expected 1 or more, got ", l.turns));
    l.turn_delay_ms = a.number("turn_delay_ms");
    if (!(l.turn_delay_ms >= 0)) throw Error(cat(path, ".load.turn_delay_ms: expected 0 or more, got ", l.turn_delay_ms));
  }
  if (a.has("turns_stddev")) {  // older files: no spread
    l.turns_stddev = a.number("turns_stddev");
    if (!(l.turns_stddev >= 0)) throw Error(cat(path, ".load.turns_stddev: expected 0 or more, got ", l.turns_stddev));
    l.turn_delay_stddev_ms = a.number("turn_delay_stddev_ms");
    if (!(l.turn_delay_stddev_ms >= 0))
      throw Error(cat(path, ".load.turn_delay_stddev_ms: expected 0 or more, got ", l.turn_delay_stddev_ms));
  }
  l.timeout_s = a.number("timeout_s");
  if (a.has("slice_s")) {  // older files: no slices
    l.slice_s = a.number("slice_s");
    if (!(l.slice_s == 0 || (l.slice_s >= 1e-3 && l.slice_s <= 1e6)))
      throw Error(cat(path, ".load.slice_s: expected 0 or seconds in [0.001, 1e6], got ", l.slice_s));
  }
  if (a.has("cancel_rate")) {  // older files: no cancellations
    l.cancel_rate = a.number("cancel_rate");
    if (!(l.cancel_rate >= 0 && l.cancel_rate <= 100))
      throw Error(cat(path, ".load.cancel_rate: expected a percent in [0, 100], got ", l.cancel_rate));
    l.cancel_delay_ms = a.number("cancel_delay_ms");
    if (!(l.cancel_delay_ms >= 0)) throw Error(cat(path, ".load.cancel_delay_ms: expected 0 or more, got ", l.cancel_delay_ms));
  }
  l.token_count_source = a.string("token_count_source");
  if (a.has("partial")) l.partial = a.boolean("partial");
  Reader g = p.object("goodput");
  const auto slo = g.numbers("slo");
  for (const auto& [k, v] : slo) {
    if (k == "ttft_ms") l.slo.ttft_ms = v;
    else if (k == "tpot_ms") l.slo.tpot_ms = v;
    else if (k == "e2e_ms") l.slo.e2e_ms = v;
    else throw Error(cat(path, ".goodput.slo.", k, ": unknown objective"));
  }
  Reader rate = p.object("rate");
  l.mean_send_lag_ms = rate.number("mean_send_lag_ms");
  l.client_events_per_s = p.object("client").number("events_per_s");
  const json& log = p.at("request_log");
  if (!log.is_array()) throw Error(cat(path, ".request_log: expected an array, got ", log.type_name()));
  l.requests.reserve(log.size());
  for (std::size_t i = 0; i < log.size(); ++i) {
    // The path is formatted only for an error: for each of 200,000 requests and their 1.4 million ITLs it took 0.3 s.
    const auto rp = [&] { return cat(path, ".request_log[", i, "]"); };
    if (!log[i].is_object()) throw Error(cat(rp(), ": expected an object, got ", log[i].type_name()));
    try {
      l.requests.push_back(record_from({log[i], ""}));
    } catch (const Error& e) {  // "": ".ttft_ms: missing" and the like
      throw Error(rp() + e.what());
    }
  }
  if (p.has("server_metrics")) l.server_metrics = server_metrics_from(p.object("server_metrics"));  // older files: none
  // Everything else is derived: recompute rather than trust.
  summarize_load(l);
  return l;
}


std::string conversations_text(const LoadResult& l) {
  if (l.turns <= 1) return "";
  auto num = [](double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  };
  auto spread = [&](double sd) { return sd > 0 ? "±" + num(sd) : std::string(); };
  std::string out = cat(l.turns, spread(l.turns_stddev), " turns");
  if (l.turn_delay_ms > 0 || l.turn_delay_stddev_ms > 0)
    out += cat(", think ", num(l.turn_delay_ms), spread(l.turn_delay_stddev_ms), " ms");
  return out;
}
}  // namespace llmbench
