#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmbench/base/env.h"
#include "llmbench/config/run_options.h"
#include "llmbench/report/load_result.h"
#include "llmbench/stats/stats.h"

namespace llmbench {

constexpr int kResultsSchemaVersion = 1;

// One timed generate loop (milliseconds). Definitions in README "Metrics".
struct RunRecord {
  double ttft_ms = 0;         // t_1 - t0: tokenize + KV reset + prefill + first sample
  double prefill_ms = 0;      // the forward pass over the prompt alone
  double tpot_ms = 0;         // (t_N - t_1) / (N - 1); 0 when N == 1
  double e2e_ms = 0;          // t_end - t0
  std::vector<double> itl_ms; // t_i - t_(i-1), N - 1 values
  double tokenize_ms = 0;     // stage durations
  double kv_init_ms = 0;
  double decode_ms = 0;       // t_N - t_1
  double detokenize_ms = 0;
};

struct Memory {
  std::uint64_t peak_allocated_bytes = 0;  // caching allocator, over the timed runs (0 on CPU)
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t device_in_use_bytes = 0;   // cudaMemGetInfo total - free
  std::uint64_t weights_bytes = 0;
  std::uint64_t kv_cache_bytes = 0;
  std::uint64_t peak_rss_bytes = 0;        // host
};

// Cold start, measured once per model load (shared by the points of a sweep).
struct Cold {
  double load_ms = 0;          // read + convert + transfer
  double first_generate_ms = 0;  // e2e of the first-ever generate of the process
};

struct Roofline {
  std::optional<double> mbu;            // decode: bytes per step / TPOT / copy bandwidth
  std::optional<double> mfu;            // prefill: FLOPs / prefill time / matmul rate
  double decode_bytes_per_step = 0;
  double prefill_flops = 0;
};

// Trimmed medians of the per-stage durations, ms.
struct Stages {
  double tokenize_ms = 0;
  double kv_init_ms = 0;
  double prefill_ms = 0;
  double decode_ms = 0;
  double detokenize_ms = 0;
};

// What the timed runs generated (README "Verification").
struct Outputs {
  // Ids the first timed run generated, per sequence (at most kFirstRunIdsMax each).
  std::vector<std::vector<std::int64_t>> first_run_ids;
  // Greedy points: every timed run generated the ids of the first. Unset for sampled points.
  std::optional<bool> consistent;
  std::vector<int> inconsistent_runs;  // 0-based indices of the timed runs that differ from run 0
};
constexpr int kFirstRunIdsMax = 64;

// The fast path's tokens checked against the reference path (no CUDA graph, no fused kernels, float32
// lm_head), teacher-forced on those tokens. gap = (ref max logit − ref logit of the fast token) / (ref max
// − ref min) at each generated position.
struct Verification {
  std::string reference;              // what the reference path was, in words
  std::int64_t tokens = 0;            // positions checked (B × N)
  std::int64_t argmax_equal = 0;      // positions where the fast token is the reference argmax
  double worst_gap = 0;               // largest gap, a fraction of the logit range
  std::int64_t over_tolerance = 0;    // positions whose gap exceeds tolerance
  double tolerance = 0;               // fraction of the logit range allowed (docs/results-schema.md)
  bool ok = false;                    // over_tolerance == 0
};

// What quantized weights cost (docs/quantization.md): the point's model against the same model with
// unquantized weights, both teacher-forced on the reference's greedy tokens for the point's prompts, over
// the N generated positions of every row (float32 logits through the lm_head).
struct Quality {
  std::string reference;            // the unquantized weights' dtype, e.g. "bfloat16"
  std::int64_t positions = 0;       // B × N positions compared
  double logits_rel_err = 0;        // ‖L − L_ref‖ / ‖L_ref‖ (Frobenius over every position and vocab entry)
  double top1_agreement = 0;        // fraction of positions whose argmax equals the reference's
  double kl_divergence_mean = 0;    // mean over positions of KL(softmax L_ref ‖ softmax L), nats
};

// Tensor parallelism (docs/distributed.md): per-rank lists are indexed by rank; timings elsewhere in the
// point are rank 0's, taken after a barrier.
struct TensorParallel {
  int size = 1;                                     // ranks
  std::string backend;                              // nccl | gloo
  std::vector<std::string> devices;                 // each rank's device
  std::vector<std::uint64_t> weights_bytes;         // each rank's share of the weights
  std::vector<std::uint64_t> peak_allocated_bytes;  // each rank's caching-allocator peak (0 on CPU)
  std::vector<std::uint64_t> peak_rss_bytes;        // each rank's host peak RSS
  std::optional<double> allreduce_ms_per_step;      // the all-reduces of one decode step, timed alone
  std::string allreduce_method;                     // how allreduce_ms_per_step was measured, in words
};

struct PointResult {
  PointParams params;
  std::string status = "ok";         // ok | failed | skipped
  std::string error;                 // when failed
  std::string weights = "random";    // random | checkpoint
  std::string checkpoint;            // path when weights == checkpoint
  std::string prompt_source = "synthetic";  // synthetic | text-cut | text-repeated | text-exact
  std::string tokenizer;             // tokenizer used, or "synthetic ids"
  std::map<std::string, bool> paths; // which code paths ran: cuda_graph, fused, ...
  int warmup = 0;
  int trim = 0;
  std::vector<RunRecord> runs;
  // Per metric: ttft_ms, prefill_ms, tpot_ms, e2e_ms, itl_ms, output_tok_s, decode_tok_s, prefill_tok_s.
  std::map<std::string, Summary> summary;
  Stages stages;
  Memory memory;
  Cold cold;
  Roofline roofline;
  // `llmbench load` points: mode "load", `runs` empty, per-request records and the serving figures in `load`.
  std::string mode = "run";          // run | load
  std::optional<LoadResult> load;
  Outputs outputs;
  std::optional<Verification> verification;  // unset: not verified (--no-verify, temperature > 0, failed before)
  std::optional<Quality> quality;            // quantized points (params.weights int8/fp8) that ran; unset otherwise
  std::optional<TensorParallel> tensor_parallel;  // unset: one rank
};

struct Results {
  int schema_version = kResultsSchemaVersion;
  std::string created_at;            // ISO 8601 UTC
  std::string command;               // the command line
  EnvInfo env;
  std::vector<PointResult> points;
  bool interrupted = false;
};

// Fills summary and stages of `point` from its raw runs (and params for the throughputs); a load point
// from its request records (summary over load_summary_metrics(), plus summarize_load).
void summarize_point(PointResult& point);

// A load point measures an endpoint whose engine the client cannot see: its engine parameters (attn, dtype,
// weights, kv_dtype, fp8_gemm) are "", cuda_graph, fused and gemv false, tp 0. The load runner writes them so,
// and a load point read from a file is set so (files before this wrote llmbench's engine defaults there).
void clear_engine_params(PointParams& params);

// The per-run values of one summary metric, as summarize_point computes them (itl_ms: every ITL of
// every run). Runs without a value are left out (tpot_ms and decode_tok_s when N == 1). Throws Error
// on a name that is not a summary metric. A load point gives its completed requests' values (none for
// metrics that load does not measure).
std::vector<double> metric_values(const PointResult& point, const std::string& metric);
// ttft_ms, prefill_ms, tpot_ms, e2e_ms, itl_ms, output_tok_s, decode_tok_s, prefill_tok_s.
const std::vector<std::string>& summary_metrics();

nlohmann::json to_json(const Results& results);
// Throws Error with the JSON path on malformed input, and on a schema_version other than 1.
Results results_from_json(const nlohmann::json& j);
Results load_results(const std::string& path);
// Atomic write of to_json(results).
void save_results(const std::string& path, const Results& results);

}  // namespace llmbench
