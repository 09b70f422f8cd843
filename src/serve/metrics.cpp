#include "llmbench/serve/metrics.h"

#include <cstdio>

#include "llmbench/base/error.h"

namespace llmbench::serve {

namespace {

// Seconds, from 1 ms to a minute: TTFT and e2e of slow CPU runs and ITL of fast GPU steps both fit.
const std::vector<double> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                             0.5,   1,      2.5,   5,    10,    30,   60};
const std::vector<double> kItlBuckets = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += cat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

}  // namespace

Histogram::Histogram(std::string name, std::string help, std::vector<double> bounds)
    : name_(std::move(name)), help_(std::move(help)), bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double seconds) {
  std::size_t i = 0;
  while (i < bounds_.size() && seconds > bounds_[i]) ++i;
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[i];
  sum_ += seconds;
}

void Histogram::render(std::string& out) const {
  std::vector<std::uint64_t> counts;
  double sum = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    counts = counts_;
    sum = sum_;
  }
  header(out, name_.c_str(), "histogram", help_.c_str());
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += cat(name_, "_bucket{le=\"", le, "\"} ", cumulative, "\n");
  }
  out += cat(name_, "_sum ", number(sum), "\n", name_, "_count ", cumulative, "\n");
}

Metrics::Metrics()
    : ttft("llmbench_time_to_first_token_seconds", "Request received to first token handed to the connection",
           kLatencyBuckets),
      itl("llmbench_inter_token_latency_seconds", "Between consecutive token events of a request", kItlBuckets),
      e2e("llmbench_e2e_request_latency_seconds", "Request received to last byte of the response queued",
          kLatencyBuckets),
      queue("llmbench_request_queue_time_seconds", "Submitted to the engine until it took a slot", kLatencyBuckets) {}

void Metrics::count_response(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++responses_[status];
}

void Metrics::count_finish(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++finishes_[reason];
}

std::string Metrics::render(const EngineStats& engine) const {
  std::string out;
  auto gauge = [&](const char* name, const char* help, double v) {
    header(out, name, "gauge", help);
    out += cat(name, " ", number(v), "\n");
  };
  gauge("llmbench_requests_running", "Requests holding a KV-cache slot", engine.running);
  gauge("llmbench_requests_waiting", "Requests queued for a slot", engine.waiting);
  gauge("llmbench_batch_size", "Rows of the last decode step", engine.last_batch_size);
  gauge("llmbench_kv_cache_slots_used", "KV-cache slots in use", engine.running);
  // Not _total: Prometheus keeps that suffix for counters (promtool check metrics flags a gauge with it).
  gauge("llmbench_kv_cache_slots_capacity", "KV-cache slots in all", engine.slots_total);
  gauge("llmbench_http_connections", "Open HTTP connections", connections.load());
  gauge("llmbench_prefill_batch_size", "Requests of the last batched prefill pass", engine.last_prefill_batch);
  header(out, "llmbench_tensor_parallel_size", "gauge", "Tensor-parallel ranks the model is split over");
  out += cat("llmbench_tensor_parallel_size{backend=\"", engine.tp > 1 ? engine.tp_backend : "none", "\"} ", engine.tp, "\n");
  auto counter = [&](const char* name, const char* help, std::uint64_t v) {
    header(out, name, "counter", help);
    out += cat(name, " ", v, "\n");
  };
  counter("llmbench_engine_steps_total", "Decode steps run", engine.steps);
  counter("llmbench_prefill_passes_total", "Prefill passes: batched passes, or mixed steps carrying prompt chunks", engine.prefill_passes);
  counter("llmbench_prefill_requests_total", "Requests prefilled", engine.prefill_requests);
  counter("llmbench_prefill_tokens_total", "Prompt tokens prefilled", engine.prefill_tokens);
  counter("llmbench_prefill_chunks_total", "Chunked prefill: prompt chunks fed to mixed steps", engine.prefill_chunks);
  counter("llmbench_prefill_padded_tokens_total", "Tokens computed by prefill passes (requests x longest prompt)",
          engine.prefill_padded_tokens);
  auto seconds = [&](const char* name, const char* help, double v) {
    header(out, name, "counter", help);
    out += cat(name, " ", number(v), "\n");
  };
  seconds("llmbench_engine_busy_seconds_total", "Engine thread: time not waiting for work", engine.busy_seconds);
  seconds("llmbench_engine_step_seconds_total", "Engine thread: time in decode steps (model call and sampling)",
          engine.step_seconds);
  seconds("llmbench_engine_prefill_seconds_total", "Engine thread: time in batched prefill passes (model call and sampling)",
          engine.prefill_seconds);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    header(out, "llmbench_requests_total", "counter", "Answered API requests by HTTP status (499: client went away)");
    for (const auto& [code, n] : responses_) out += cat("llmbench_requests_total{code=\"", code, "\"} ", n, "\n");
    header(out, "llmbench_request_finish_total", "counter", "Generations by finish reason");
    for (const auto& [reason, n] : finishes_)
      out += cat("llmbench_request_finish_total{reason=\"", reason, "\"} ", n, "\n");
  }
  header(out, "llmbench_prompt_tokens_total", "counter", "Prompt tokens of submitted requests");
  out += cat("llmbench_prompt_tokens_total ", prompt_tokens.load(), "\n");
  header(out, "llmbench_generation_tokens_total", "counter", "Tokens generated");
  out += cat("llmbench_generation_tokens_total ", generation_tokens.load(), "\n");
  for (const Histogram* h : {&ttft, &itl, &e2e, &queue}) h->render(out);
  return out;
}

}  // namespace llmbench::serve
