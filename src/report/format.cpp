#include "llmbench/report/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "llmbench/base/error.h"

namespace llmbench {

using nlohmann::json;

std::string md_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    // | ends a cell; * ` < would start emphasis, code or an HTML tag; a line break ends the row.
    if (ch == '|' || ch == '*' || ch == '`' || ch == '<') out += '\\';
    out += ch == '\n' || ch == '\r' ? ' ' : ch;
  }
  return out;
}

Format parse_format(const std::string& name) {
  if (name == "table") return Format::table;
  if (name == "md") return Format::md;
  if (name == "csv") return Format::csv;
  if (name == "json") return Format::json;
  throw UsageError(cat("--format: unknown format '", name, "' (expected table, md, csv or json)"));
}

std::string format_bytes(std::uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ULL << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ULL << 30));
  else if (bytes >= (1ULL << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ULL << 20));
  else if (bytes >= (1ULL << 10))
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / double(1ULL << 10));
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

std::string storage_of(const std::string& format, const std::string& dtype) {
  if (format != "bf16") return format;
  return dtype == "float32" ? "fp32" : dtype == "float16" ? "fp16" : "bf16";
}

std::string quality_summary(const PointResult& p) {
  if (!p.quality) return "";
  const Quality& q = *p.quality;
  // "int8 vs bfloat16 weights", "fp8 KV vs bfloat16", "int8 weights + fp8 KV vs bfloat16"
  const std::string what = p.params.kv_dtype == "bf16"
                               ? p.params.weights + " vs " + q.reference + " weights"
                               : (p.params.weights != "bf16" ? p.params.weights + " weights + " : std::string()) +
                                     p.params.kv_dtype + " KV vs " + q.reference;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s: top-1 %.1f %%, logits rel err %.2e, KL %.2e (%lld positions)", what.c_str(),
                100 * q.top1_agreement, q.logits_rel_err, q.kl_divergence_mean, static_cast<long long>(q.positions));
  return buf;
}

std::string verification_summary(const PointResult& p) {
  auto pct = [](double f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f %%", 100 * f);
    return std::string(buf);
  };
  std::string s;
  if (const auto& v = p.verification) {
    s = v->ok ? cat("ok (", v->argmax_equal, "/", v->tokens, " argmax, worst gap ", pct(v->worst_gap), ")")
              : cat("FAILED: ", v->over_tolerance, " of ", v->tokens, " over ", pct(v->tolerance), " (worst ",
                    pct(v->worst_gap), ")");
  } else if (p.params.temperature > 0) {
    s = "not checked (temperature > 0)";
  } else {
    s = p.runs.empty() ? "-" : "off";
  }
  if (!p.outputs.inconsistent_runs.empty()) {
    s += "; runs";
    for (std::size_t i = 0; i < p.outputs.inconsistent_runs.size(); ++i)
      s += cat(i ? ", " : " ", p.outputs.inconsistent_runs[i] + 1);
    s += " differ";
  }
  return s;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  // Beyond 1e15 fixed notation is unreadable and would not fit the buffer (1e150 has 151 digits).
  if (std::fabs(v) >= 1e15) std::snprintf(buf, sizeof buf, "%.4g", v);
  else std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

namespace {

// Human text for table/md, raw value for csv/json (null when there is none).
struct Cell {
  std::string text;
  json raw;
};

struct Column {
  std::string key;     // csv header and json key
  std::string header;  // table and md header
  bool numeric = true; // right-aligned
  std::function<Cell(const PointResult&)> cell;
  bool machine_only = false;  // csv/json only: the table shows it elsewhere
};

std::string shortest(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

const Cell kMissing{"-", nullptr};

// Trimmed median of a summary metric.
// An interrupted point's finished runs are summarised too: its figures are shown, its status says it.
bool has_figures(const PointResult& p) { return p.status == "ok" || p.status == "interrupted"; }

std::function<Cell(const PointResult&)> median_of(const std::string& metric, int decimals) {
  return [metric, decimals](const PointResult& p) {
    auto it = p.summary.find(metric);
    if (!has_figures(p) || it == p.summary.end()) return kMissing;
    return Cell{fixed(it->second.trimmed_median, decimals), it->second.trimmed_median};
  };
}

// Peak allocated on CUDA; on CPU the allocator counters are 0 and host peak RSS stands in.
std::uint64_t peak_memory(const PointResult& p) {
  return p.memory.peak_allocated_bytes > 0 ? p.memory.peak_allocated_bytes : p.memory.peak_rss_bytes;
}

const char* const kCvMetrics[] = {"ttft_ms", "tpot_ms", "e2e_ms"};

// One value has no spread: its CV is undefined (shown n/a), not 0 %.
bool has_cv(const PointResult& p) {
  for (const char* m : kCvMetrics) {
    auto it = p.summary.find(m);
    if (it != p.summary.end() && it->second.n >= 2) return true;
  }
  return false;
}

double max_cv(const PointResult& p) {
  double cv = 0;
  for (const char* m : kCvMetrics) {
    auto it = p.summary.find(m);
    if (it != p.summary.end()) cv = std::max(cv, it->second.cv);
  }
  return cv;
}

std::vector<Column> result_columns() {
  std::vector<Column> c;
  c.push_back({"model", "model", false, [](const PointResult& p) {
                 const std::string& s = p.params.label.empty() ? p.params.model : p.params.label;
                 return Cell{one_line(s), s};  // a control character (a line break, ESC) is shown escaped, not obeyed
               }});
  c.push_back({"batch", "batch", true, [](const PointResult& p) {
                 return Cell{std::to_string(p.params.batch), p.params.batch};
               }});
  c.push_back({"prompt_len", "prompt", true, [](const PointResult& p) {
                 return Cell{std::to_string(p.params.prompt_len), p.params.prompt_len};
               }});
  c.push_back({"max_new_tokens", "new", true, [](const PointResult& p) {
                 return Cell{std::to_string(p.params.max_new_tokens), p.params.max_new_tokens};
               }});
  c.push_back({"temperature", "temp", true, [](const PointResult& p) {
                 return Cell{shortest(p.params.temperature), p.params.temperature};
               }});
  c.push_back({"attn", "attn", false, [](const PointResult& p) { return Cell{p.params.attn, p.params.attn}; }});
  c.push_back({"dtype", "dtype", false, [](const PointResult& p) { return Cell{p.params.dtype, p.params.dtype}; }});
  c.push_back({"weights", "weights", false, [](const PointResult& p) {
                 const std::string s = storage_of(p.params.weights, p.params.dtype);
                 return Cell{s, s};
               }});
  c.push_back({"kv_dtype", "KV", false, [](const PointResult& p) {
                 const std::string s = storage_of(p.params.kv_dtype, p.params.dtype);
                 return Cell{s, s};
               }});
  c.push_back({"ttft_ms", "TTFT ms", true, median_of("ttft_ms", 2)});
  c.push_back({"output_tok_s", "out tok/s", true, median_of("output_tok_s", 1)});
  c.push_back({"peak_memory_bytes", "peak mem", true, [](const PointResult& p) {
                 if (!has_figures(p) || p.runs.empty()) return kMissing;
                 return Cell{format_bytes(peak_memory(p)), peak_memory(p)};
               }});
  c.push_back({"tpot_ms", "TPOT ms", true, median_of("tpot_ms", 2)});
  c.push_back({"e2e_ms", "e2e ms", true, median_of("e2e_ms", 2)});
  c.push_back({"max_cv", "CV", true, [](const PointResult& p) {
                 if (!has_figures(p) || p.summary.empty()) return kMissing;
                 if (!has_cv(p)) return Cell{"n/a", nullptr};
                 return Cell{fixed(100 * max_cv(p), 1) + "%", max_cv(p)};
               }});
  c.push_back({"verified", "verified", false, [](const PointResult& p) {
                 if (!p.verification) return Cell{p.params.temperature > 0 || p.runs.empty() ? "-" : "off", nullptr};
                 const bool ok = p.verification->ok && p.outputs.inconsistent_runs.empty();
                 return Cell{ok ? "ok" : "FAIL", ok};
               }});
  c.push_back({"top1_agreement", "top1 vs ref", true, [](const PointResult& p) {
                 if (!p.quality) return kMissing;
                 return Cell{fixed(100 * p.quality->top1_agreement, 1) + "%", p.quality->top1_agreement};
               }});
  auto quality_number = [](double Quality::*field) {
    return [field](const PointResult& p) { return p.quality ? Cell{"", (*p.quality).*field} : kMissing; };
  };
  Column rel_err{"logits_rel_err", "", true, quality_number(&Quality::logits_rel_err)};
  Column kl{"kl_divergence_mean", "", true, quality_number(&Quality::kl_divergence_mean)};
  rel_err.machine_only = kl.machine_only = true;
  c.push_back(rel_err);
  c.push_back(kl);
  c.push_back({"status", "status", false, [](const PointResult& p) {
                 return Cell{p.status == "ok" || p.error.empty() ? p.status : p.status + ": " + p.error, p.status};
               }});
  Column error{"error", "error", false, [](const PointResult& p) { return Cell{p.error, p.error}; }};
  error.machine_only = true;
  c.push_back(error);
  return c;
}

// A percentile of a summary metric (load points report p50/p99 rather than trimmed medians).
std::function<Cell(const PointResult&)> percentile_of(const std::string& metric, double Summary::*field) {
  return [metric, field](const PointResult& p) {
    auto it = p.summary.find(metric);
    if (it == p.summary.end()) return kMissing;
    return Cell{fixed(it->second.*field, 2), it->second.*field};
  };
}

// `llmbench load` points: one row per concurrency or rate.
std::vector<Column> load_columns() {
  auto load_number = [](double LoadResult::*field, int decimals) {
    return [field, decimals](const PointResult& p) {
      if (!p.load) return kMissing;
      return Cell{fixed((*p.load).*field, decimals), (*p.load).*field};
    };
  };
  auto load_int = [](int LoadResult::*field) {
    return [field](const PointResult& p) {
      if (!p.load) return kMissing;
      return Cell{std::to_string((*p.load).*field), (*p.load).*field};
    };
  };
  std::vector<Column> c;
  c.push_back({"model", "model", false, [](const PointResult& p) {
                 const std::string& s = p.params.label.empty() ? p.params.model : p.params.label;
                 return Cell{one_line(s), s};  // a control character (a line break, ESC) is shown escaped, not obeyed
               }});
  c.push_back({"concurrency", "conc", true, [](const PointResult& p) {
                 // An open loop's cap (--max-concurrency) shows as "≤N"; csv/json keep concurrency null.
                 if (p.load && p.load->concurrency == 0 && p.load->max_concurrency > 0)
                   return Cell{"≤" + std::to_string(p.load->max_concurrency), nullptr};
                 if (!p.load || p.load->concurrency == 0) return kMissing;
                 return Cell{std::to_string(p.load->concurrency), p.load->concurrency};
               }});
  c.push_back({"request_rate", "rate/s", true, [](const PointResult& p) {
                 if (!p.load || p.load->request_rate == 0) return kMissing;
                 return Cell{shortest(p.load->request_rate), p.load->request_rate};
               }});
  c.push_back({"completed", "done", true, load_int(&LoadResult::completed)});
  c.push_back({"failed", "failed", true, load_int(&LoadResult::failed)});
  c.push_back({"requests_per_s", "req/s", true, load_number(&LoadResult::requests_per_s, 2)});
  c.push_back({"output_tokens_per_s", "out tok/s", true, load_number(&LoadResult::output_tokens_per_s, 1)});
  c.push_back({"ttft_p50_ms", "TTFT p50", true, percentile_of("ttft_ms", &Summary::p50)});
  c.push_back({"ttft_p99_ms", "TTFT p99", true, percentile_of("ttft_ms", &Summary::p99)});
  c.push_back({"tpot_p50_ms", "TPOT p50", true, percentile_of("tpot_ms", &Summary::p50)});
  c.push_back({"itl_p50_ms", "ITL p50", true, percentile_of("itl_ms", &Summary::p50)});
  c.push_back({"itl_p99_ms", "ITL p99", true, percentile_of("itl_ms", &Summary::p99)});
  c.push_back({"e2e_p50_ms", "e2e p50", true, percentile_of("e2e_ms", &Summary::p50)});
  c.push_back({"goodput_fraction", "goodput", true, [](const PointResult& p) {
                 if (!p.load || p.load->slo.empty()) return kMissing;
                 return Cell{fixed(100 * p.load->goodput_fraction, 1) + "%", p.load->goodput_fraction};
               }});
  c.push_back({"status", "status", false, [](const PointResult& p) {
                 std::string s = p.status == "ok" || p.error.empty() ? p.status : p.status + ": " + p.error;
                 if (p.load && p.load->partial) s += " (interrupted)";
                 return Cell{s, p.status};
               }});
  c.push_back({"error", "", false, [](const PointResult& p) { return Cell{p.error, p.error}; }, true});
  // csv/json only (the table shows them in the concurrency and status cells, or in the search summary):
  // what tells a capped, cut-short or probing point apart.
  c.push_back({"max_concurrency", "", true, [](const PointResult& p) {
                 if (!p.load || p.load->max_concurrency == 0) return kMissing;
                 return Cell{"", p.load->max_concurrency};
               }, true});
  c.push_back({"partial", "", false, [](const PointResult& p) { return Cell{"", p.load && p.load->partial}; }, true});
  c.push_back({"search_passed", "", false, [](const PointResult& p) {
                 if (!p.load || !p.load->search) return kMissing;
                 return Cell{"", p.load->search->passed};
               }, true});
  return c;
}

std::string csv_field(const json& v) {
  if (v.is_null()) return "";
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string render(const std::vector<Column>& all, const std::vector<PointResult>& points, Format format) {
  std::vector<Column> cols;
  for (const auto& c : all)
    if (!c.machine_only || format == Format::csv || format == Format::json) cols.push_back(c);
  std::vector<std::vector<Cell>> rows;
  for (const auto& p : points) {
    std::vector<Cell> row;
    for (const auto& c : cols) row.push_back(c.cell(p));
    rows.push_back(std::move(row));
  }
  std::ostringstream os;
  if (format == Format::json) {
    json out = json::array();
    for (const auto& row : rows) {
      json o = json::object();
      for (std::size_t i = 0; i < cols.size(); ++i) o[cols[i].key] = row[i].raw;
      out.push_back(o);
    }
    os << out.dump(2) << "\n";
  } else if (format == Format::csv) {
    for (std::size_t i = 0; i < cols.size(); ++i) os << (i ? "," : "") << cols[i].key;
    os << "\n";
    for (const auto& row : rows) {
      for (std::size_t i = 0; i < cols.size(); ++i) os << (i ? "," : "") << csv_field(row[i].raw);
      os << "\n";
    }
  } else if (format == Format::md) {
    os << "|";
    for (const auto& c : cols) os << " " << c.header << " |";
    os << "\n|";
    for (const auto& c : cols) os << (c.numeric ? " ---: |" : " --- |");
    os << "\n";
    for (const auto& row : rows) {
      os << "|";
      for (const auto& cell : row) os << " " << md_escape(cell.text) << " |";
      os << "\n";
    }
  } else {
    std::vector<std::size_t> width(cols.size());
    for (std::size_t i = 0; i < cols.size(); ++i) {
      width[i] = cols[i].header.size();
      for (const auto& row : rows) width[i] = std::max(width[i], row[i].text.size());
    }
    auto line = [&](const std::function<std::string(std::size_t)>& text) {
      std::string out;
      for (std::size_t i = 0; i < cols.size(); ++i) {
        std::string t = text(i);
        std::string pad(width[i] - std::min(width[i], t.size()), ' ');
        // The last column is left-aligned without trailing blanks.
        if (i + 1 == cols.size()) out += cols[i].numeric ? pad + t : t;
        else out += (cols[i].numeric ? pad + t : t + pad) + "  ";
      }
      os << out << "\n";
    };
    line([&](std::size_t i) { return cols[i].header; });
    line([&](std::size_t i) { return std::string(width[i], '-'); });
    for (const auto& row : rows) line([&](std::size_t i) { return row[i].text; });
  }
  return os.str();
}

std::string label_of(const PointParams& p) { return p.label.empty() ? p.model : p.label; }

// The baseline point to compare `p` with: same workload (batch, prompt, new tokens, temperature),
// preferring the one that also agrees on the most other parameters (attn, dtype, ...).
const PointResult* baseline_for(const PointResult& p, const std::vector<const PointResult*>& baseline) {
  const PointResult* best = nullptr;
  int best_score = -1;
  for (const PointResult* b : baseline) {
    if (b->load) continue;
    const PointParams &x = p.params, &y = b->params;
    if (x.batch != y.batch || x.prompt_len != y.prompt_len || x.max_new_tokens != y.max_new_tokens ||
        x.temperature != y.temperature)
      continue;
    const int score = (x.attn == y.attn) + (x.dtype == y.dtype) + (x.top_k == y.top_k) + (x.top_p == y.top_p) +
                      (x.seed == y.seed) + (x.device == y.device) + (x.cuda_graph == y.cuda_graph) +
                      (x.fused == y.fused) + (x.weights == y.weights) + (x.kv_dtype == y.kv_dtype) +
                      (x.gemv == y.gemv) + (x.fp8_gemm == y.fp8_gemm) + (x.tp == y.tp);
    if (score > best_score) best = b, best_score = score;
  }
  return best;
}

// The baseline load point to compare `p` with: same concurrency or rate, arrival, API, dataset and
// lengths (the request count may differ).
const PointResult* load_baseline_for(const PointResult& p, const std::vector<const PointResult*>& baseline) {
  for (const PointResult* b : baseline) {
    if (!b->load) continue;
    const LoadResult &x = *p.load, &y = *b->load;
    if (x.concurrency == y.concurrency && x.request_rate == y.request_rate && x.arrival == y.arrival &&
        x.api == y.api && x.dataset == y.dataset && x.range_ratio == y.range_ratio &&
        x.max_concurrency == y.max_concurrency && x.extra_body == y.extra_body && x.prefix_len == y.prefix_len &&
        x.trace_block_size == y.trace_block_size && x.turns == y.turns && x.turn_delay_ms == y.turn_delay_ms &&
        x.turns_stddev == y.turns_stddev && x.turn_delay_stddev_ms == y.turn_delay_stddev_ms &&
        x.cancel_rate == y.cancel_rate && x.cancel_delay_ms == y.cancel_delay_ms &&
        x.stream == y.stream &&
        p.params.prompt_len == b->params.prompt_len &&
        p.params.max_new_tokens == b->params.max_new_tokens)
      return b;
  }
  return nullptr;
}

// Run points in one table, load points in another (json: one array of both kinds of rows).
std::string render_by_mode(const std::vector<Column>& run_cols, const std::vector<Column>& load_cols,
                           const std::vector<PointResult>& points, Format format) {
  std::vector<PointResult> run_points, load_points;
  for (const auto& p : points) (p.load ? load_points : run_points).push_back(p);
  if (load_points.empty()) return render(run_cols, run_points, format);
  if (run_points.empty()) return render(load_cols, load_points, format);
  if (format == Format::csv) {
    // One table a CSV reader can take: a mode column, then the union of both column sets by key; a row leaves
    // the other mode's columns empty.
    std::vector<Column> cols{{"mode", "mode", false, [](const PointResult& p) {
                                return Cell{p.load ? "load" : "run", p.load ? "load" : "run"};
                              }}};
    auto add = [&](const Column& c, bool for_load) {
      for (auto& have : cols)
        if (have.key == c.key) {
          auto other = have.cell;
          have.cell = [other, c, for_load](const PointResult& p) { return bool(p.load) == for_load ? c.cell(p) : other(p); };
          return;
        }
      Column mine = c;
      mine.cell = [c, for_load](const PointResult& p) { return bool(p.load) == for_load ? c.cell(p) : Cell{"", nullptr}; };
      cols.push_back(mine);
    };
    for (const auto& c : run_cols) add(c, false);
    for (const auto& c : load_cols) add(c, true);
    std::vector<PointResult> all = run_points;
    all.insert(all.end(), load_points.begin(), load_points.end());
    return render(cols, all, format);
  }
  if (format != Format::json)
    return render(run_cols, run_points, format) + "\n" + render(load_cols, load_points, format);
  json rows = json::parse(render(run_cols, run_points, format));
  for (auto& row : json::parse(render(load_cols, load_points, format))) rows.push_back(std::move(row));
  return rows.dump(2) + "\n";
}

// Interrupted before any point had a timed run: a table would be a bare header.
bool nothing_finished(const Results& results, Format format) {
  if (format != Format::table && format != Format::md) return false;
  for (const auto& p : results.points)
    if (p.status != "interrupted" || !p.runs.empty()) return false;
  return true;
}

std::string nothing_finished_text(const Results& results) {
  return results.interrupted ? "No point finished: interrupted before the first timed run, nothing to show.\n"
                             : "No point finished: nothing to show.\n";
}

}  // namespace

std::string format_results(const Results& results, Format format) {
  if (nothing_finished(results, format)) return nothing_finished_text(results);
  return render_by_mode(result_columns(), load_columns(), results.points, format);
}

std::string point_text(const PointParams& p) {
  std::string s = cat(label_of(p), " batch ", p.batch, " prompt ", p.prompt_len, " new ", p.max_new_tokens, " temp ",
                      shortest(p.temperature), " ", p.attn, " ", p.dtype);
  if (!p.weights.empty() && p.weights != "bf16") s += cat(" weights ", p.weights);
  if (!p.kv_dtype.empty() && p.kv_dtype != "bf16") s += cat(" kv ", p.kv_dtype);
  return s;
}

std::vector<std::string> cv_warnings(const Results& results) {
  std::vector<std::string> out;
  for (const auto& p : results.points) {
    // A load point's CV is the spread of its requests' latencies (queueing, lengths), not run-to-run
    // noise: nothing to warn about.
    if (p.status != "ok" || p.load) continue;
    for (const char* m : kCvMetrics) {
      auto it = p.summary.find(m);
      if (it == p.summary.end() || it->second.cv <= kCvWarning) continue;
      out.push_back(cat(point_text(p.params), ": ", m, " CV ", fixed(100 * it->second.cv, 1), "% > ",
                        fixed(100 * kCvWarning, 0), "% (noisy: more --runs, a quieter machine)"));
    }
  }
  return out;
}

bool failure_excused(const Results& results, const PointResult& point) {
  return point.load && point.load->search &&
         std::any_of(results.points.begin(), results.points.end(), [&](const PointResult& q) {
           return q.params.label == point.params.label && q.load && q.load->search && q.load->search->passed;
         });
}

bool any_point_failed(const Results& results) {
  return std::any_of(results.points.begin(), results.points.end(),
                     [&](const PointResult& p) { return p.status != "ok" && !failure_excused(results, p); });
}

std::vector<SearchSummary> search_outcomes(const Results& results) {
  std::vector<SearchSummary> out;
  for (const auto& p : results.points) {
    if (!p.load || !p.load->search) continue;
    const LoadResult& l = *p.load;
    const std::string label = label_of(p.params);
    auto it = std::find_if(out.begin(), out.end(), [&](const SearchSummary& s) { return s.label == label; });
    if (it == out.end()) {
      SearchSummary s;
      s.label = label;
      s.axis = l.search->axis;
      s.target = l.search->target;
      s.slo = slo_text(l.slo);
      out.push_back(s);
      it = out.end() - 1;
    }
    const double v = it->axis == "request_rate" ? l.request_rate : l.concurrency;
    if (l.search->best) it->best = v;
    // An interrupted probe neither met nor missed the objective.
    if (!l.search->passed && !l.partial && (!it->lowest_miss || v < *it->lowest_miss)) it->lowest_miss = v;
    it->interrupted = it->interrupted || l.partial;
    if (it->probes == 0 || v < it->lowest) it->lowest = v;
    ++it->probes;
  }
  // An interrupted file: the last search may have been cut before its probe finished a request.
  if (results.interrupted && !out.empty() && results.points.back().load && results.points.back().load->search &&
      label_of(results.points.back().params) == out.back().label)
    out.back().interrupted = true;
  return out;
}

std::vector<std::string> search_summaries(const Results& results) {
  std::vector<std::string> out;
  for (const auto& s : search_outcomes(results)) {
    const bool rate = s.axis == "request_rate";
    auto show = [&](double v) { return rate ? shortest(v) + "/s" : shortest(v); };
    std::string line = cat(s.label, ": highest ", rate ? "request rate" : "concurrency", " with goodput >= ",
                           fixed(100 * s.target, 1), "% under ", s.slo, ": ");
    if (s.best && !s.lowest_miss && s.interrupted) line += cat(show(*s.best), " (interrupted before a probe missed)");
    else if (!s.best && !s.lowest_miss && s.interrupted) line += "none (interrupted before a probe finished)";
    else if (s.best && !s.lowest_miss) line += cat(show(*s.best), " (the upper bound met it: search higher)");
    else if (s.best) line += cat(show(*s.best), " (", show(*s.lowest_miss), " missed)");
    else line += cat("none (the lowest probe, ", show(s.lowest), ", missed)");
    out.push_back(cat(line, "; ", s.probes, " probe", s.probes == 1 ? "" : "s"));
  }
  return out;
}

namespace {

// A load point's load as the blocks after the table name it: "concurrency 4", "rate 2.5/s", "trace:2 replay".
std::string load_text(const LoadResult& l) {
  if (is_trace_replay(l)) return l.arrival + " replay";
  return l.request_rate > 0 ? cat("rate ", shortest(l.request_rate), "/s") : cat("concurrency ", l.concurrency);
}

std::string ms_or_dash(const std::optional<double>& v) { return v ? fixed(*v, 2) : std::string("-"); }

}  // namespace

std::vector<std::string> turn_summaries(const Results& results) {
  std::vector<std::string> out;
  for (const auto& p : results.points) {
    if (!p.load || p.load->by_turn.empty()) continue;
    const LoadResult& l = *p.load;
    std::string block = cat(label_of(p.params), ", ",
                            is_trace_replay(l)  ? cat(l.arrival, " replay of sessions, by turn:")
                            : l.request_rate > 0 ? cat("rate ", shortest(l.request_rate), " conversations/s")
                                                 : cat("concurrency ", l.concurrency, " conversations"),
                            is_trace_replay(l) ? "" : cat(" of ", conversations_text(l), ", by turn:"));
    for (const auto& t : l.by_turn)
      block += cat("\n  turn ", t.turn, ": ", t.completed, " done, ", t.failed, " failed, prompt ",
                   fixed(t.prompt_tokens_mean, 1), " tokens",
                   t.cached_fraction ? cat(" (", fixed(100 * *t.cached_fraction, 1), " % cached)") : "", ", TTFT p50 ",
                   ms_or_dash(t.ttft_ms_p50), " ms, e2e p50 ", ms_or_dash(t.e2e_ms_p50), " ms");
    out.push_back(block);
  }
  return out;
}

std::vector<std::string> slice_summaries(const Results& results) {
  std::vector<std::string> out;
  for (const auto& p : results.points) {
    if (!p.load || p.load->by_slice.empty()) continue;
    const LoadResult& l = *p.load;
    std::string block = cat(label_of(p.params), ", ",
                            load_text(l),
                            ", in slices of ", shortest(l.slice_s), " s (requests by issue time, tokens by arrival):");
    for (const auto& s : l.by_slice)
      block += cat("\n  ", fixed(s.start_s, 2), "-", fixed(s.start_s + s.duration_s, 2), " s: ", s.started, " issued, ",
                   s.completed, " done, ", s.failed, " failed, TTFT p50 ", ms_or_dash(s.ttft_ms_p50), " ms, TPOT p50 ",
                   ms_or_dash(s.tpot_ms_p50), " ms, e2e p50 ", ms_or_dash(s.e2e_ms_p50), " ms, ", fixed(s.output_tokens_per_s, 1),
                   " out tok/s");
    out.push_back(block);
  }
  return out;
}

std::vector<std::string> cancel_summaries(const Results& results) {
  std::vector<std::string> out;
  for (const auto& p : results.points) {
    if (!p.load || p.load->cancel_rate <= 0) continue;
    const LoadResult& l = *p.load;
    out.push_back(cat(label_of(p.params), ", ",
                      load_text(l),
                      ": ", l.cancelled, " of ", l.requests.size(), " requests abandoned by the client (--cancel-rate ",
                      shortest(l.cancel_rate), " %, ", shortest(l.cancel_delay_ms),
                      " ms after each was sent; the others done before it); left out of the latencies and the goodput"));
  }
  return out;
}

std::vector<std::string> prompt_cache_summaries(const Results& results) {
  std::vector<std::string> out;
  for (const auto& p : results.points) {
    if (!p.load || !p.load->prompt_cache) continue;
    const LoadResult& l = *p.load;
    const auto& c = *l.prompt_cache;
    out.push_back(cat(label_of(p.params), ", ",
                      load_text(l),
                      ": the server's prompt cache held ",
                      c.hit_rate ? cat(fixed(100 * *c.hit_rate, 1), " %") : std::string("none"), " of the prompt tokens (",
                      c.cached_tokens, " of ", c.prompt_tokens, ", by the usage of ", c.requests, " of ", l.completed,
                      " requests)"));
  }
  return out;
}

std::string format_comparison(const Results& results, Format format, const std::string& baseline_label) {
  if (baseline_label.empty()) return format_results(results, format);
  if (nothing_finished(results, format)) return nothing_finished_text(results);
  std::vector<const PointResult*> baseline;
  for (const auto& p : results.points)
    if (label_of(p.params) == baseline_label && p.status == "ok") baseline.push_back(&p);
  bool known = false;
  for (const auto& p : results.points) known = known || label_of(p.params) == baseline_label;
  if (!known && !results.points.empty()) throw UsageError(cat("baseline '", baseline_label, "' is not the label of any model"));

  // A ratio column after each compared metric: value / baseline value at the same point.
  using Value = std::function<std::optional<double>(const PointResult&)>;
  auto ratio = [&](const std::string& key, const Value& value) {
    return Column{key + "_vs_baseline", "x base", true, [=](const PointResult& p) {
                    const PointResult* b = p.load ? load_baseline_for(p, baseline) : baseline_for(p, baseline);
                    if (!b || p.status != "ok") return kMissing;
                    auto v = value(p), bv = value(*b);
                    if (!v || !bv || *bv == 0) return kMissing;
                    return Cell{fixed(*v / *bv, 2) + "x", *v / *bv};
                  }};
  };
  auto summary_value = [](const std::string& m, double Summary::*field) -> Value {
    return [m, field](const PointResult& p) -> std::optional<double> {
      auto it = p.summary.find(m);
      if (it == p.summary.end()) return std::nullopt;
      return it->second.*field;
    };
  };
  std::vector<Column> run_cols;
  for (auto& c : result_columns()) {
    run_cols.push_back(c);
    if (c.key == "ttft_ms" || c.key == "output_tok_s" || c.key == "tpot_ms" || c.key == "e2e_ms")
      run_cols.push_back(ratio(c.key, summary_value(c.key, &Summary::trimmed_median)));
    if (c.key == "peak_memory_bytes")
      run_cols.push_back(ratio(c.key, [](const PointResult& p) -> std::optional<double> {
        return peak_memory(p) ? std::optional<double>(double(peak_memory(p))) : std::nullopt;
      }));
  }
  // Load points: p50 latencies and output throughput against the baseline endpoint's.
  const std::map<std::string, Value> load_ratios = {
      {"output_tokens_per_s",
       [](const PointResult& p) -> std::optional<double> { return p.load->output_tokens_per_s; }},
      {"ttft_p50_ms", summary_value("ttft_ms", &Summary::p50)},
      {"tpot_p50_ms", summary_value("tpot_ms", &Summary::p50)},
      {"itl_p50_ms", summary_value("itl_ms", &Summary::p50)},
      {"e2e_p50_ms", summary_value("e2e_ms", &Summary::p50)},
  };
  std::vector<Column> load_cols;
  for (auto& c : load_columns()) {
    load_cols.push_back(c);
    if (auto it = load_ratios.find(c.key); it != load_ratios.end()) load_cols.push_back(ratio(c.key, it->second));
  }
  return render_by_mode(run_cols, load_cols, results.points, format);
}

}  // namespace llmbench
