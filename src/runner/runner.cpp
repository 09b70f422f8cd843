#include "llmbench/runner/runner.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>

#include <torch/torch.h>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/bench/device_env.h"
#include "llmbench/bench/event_clock.h"
#include "llmbench/bench/interrupt.h"
#include "llmbench/bench/memory.h"
#include "llmbench/dist/session.h"
#include "llmbench/dist/shard.h"
#include "llmbench/model/decode_graph.h"
#include "llmbench/model/prefill_graph.h"
#include "llmbench/model/model.h"
#include "llmbench/model/presets.h"
#include "llmbench/model/quantize.h"
#include "llmbench/model/sampler.h"
#include "llmbench/report/format.h"
#include "llmbench/runner/duration.h"
#include "llmbench/runner/model_tokenizer.h"
#include "llmbench/runner/prompts.h"
#include "llmbench/runner/quality.h"
#include "llmbench/runner/roofline.h"
#include "llmbench/runner/verify.h"
#include "llmbench/tokenizer/tokenizer.h"
#include "llmbench/base/utf8.h"

namespace llmbench {
namespace {

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// A real allocation failure: CUDA's (c10::OutOfMemoryError), the CPU allocator's, or operator new's.
bool is_oom(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) || dynamic_cast<const std::bad_alloc*>(&e)) return true;
  std::string m = e.what();
  return m.find("out of memory") != std::string::npos || m.find("can't allocate memory") != std::string::npos;
}

// What one point needs besides the loaded model.
struct PointContext {
  Model& model;
  DecodeGraph* graph;          // null: eager decode steps
  PrefillGraph* prefill_graph; // null: the prefill's kernels launched one by one
  const Tokenizer* tokenizer;  // null: synthetic ids only, nothing to detokenize
  const PromptSpec& prompt_spec;
  const PromptIds& synthetic;  // used when prompt_spec.text is empty
  torch::Device device;
  SamplingParams sampling;
};

// What one generate loop produced besides its timings (untimed bookkeeping).
struct Generated {
  torch::Tensor prompts;  // [B, P] int64, CPU
  torch::Tensor ids;      // [B, N] int64, CPU
};

// One generate loop with the timeline of README "Metrics". Every stamp after t_1 comes from the
// event clock (CUDA events on the stream), so the decode loop has no host synchronisation.
RunRecord generate_once(PointContext& ctx, int max_new_tokens, Generated* generated_out = nullptr) {
  const int n = max_new_tokens;
  EventClock clock(ctx.device, n + 2);  // 0: prefill start, 1: prefill end, 1 + i: token i sampled
  Sampler sampler(ctx.sampling, ctx.device);

  const auto t0 = HostClock::now();
  const PromptIds prompts = ctx.prompt_spec.text ? text_prompts(ctx.prompt_spec, *ctx.tokenizer) : ctx.synthetic;
  const int64_t b = static_cast<int64_t>(prompts.rows.size()), p = static_cast<int64_t>(prompts.rows[0].size());
  torch::Tensor ids_host = torch::empty({b, p}, torch::kInt64);  // [B, P] int64
  for (int64_t r = 0; r < b; ++r) std::copy(prompts.rows[r].begin(), prompts.rows[r].end(), ids_host[r].data_ptr<int64_t>());
  torch::Tensor ids = ids_host.to(ctx.device);                     // [B, P] int64
  torch::Tensor out = torch::empty({b, n}, ids.options());         // [B, N] int64
  synchronize_device(ctx.device);
  const auto t_tok = HostClock::now();

  ctx.model.reset_cache();
  synchronize_device(ctx.device);
  const auto t_kv = HostClock::now();

  clock.mark(0);
  // Every row holds P tokens (no padding): no mask, so the prefill reads nothing back to the host.
  const bool replay = ctx.prefill_graph && ctx.prefill_graph->batch() == b && ctx.prefill_graph->prompt_len() == p;
  torch::Tensor logits = replay ? ctx.prefill_graph->prefill(ids) : ctx.model.prefill(ids);  // [B, V] float32
  clock.mark(1);
  torch::Tensor tok = sampler.sample(logits);                      // [B] int64
  out.select(1, 0).copy_(tok);
  clock.mark(2);
  torch::Tensor first = tok.to(torch::kCPU);                       // the first ids on the host
  const auto t_1 = HostClock::now();
  (void)first;

  for (int i = 2; i <= n; ++i) {
    logits = ctx.graph ? ctx.graph->step(tok) : ctx.model.decode_step(tok);
    tok = sampler.sample(logits);
    out.select(1, i - 1).copy_(tok);
    clock.mark(1 + i);
  }
  clock.synchronize();
  torch::Tensor generated = out.to(torch::kCPU);                   // [B, N] int64
  const auto t_detok = HostClock::now();
  if (ctx.tokenizer) {
    for (int64_t r = 0; r < b; ++r) {
      const int64_t* row = generated[r].data_ptr<int64_t>();
      std::vector<TokenId> toks(row, row + n);
      ctx.tokenizer->decode(toks, true);
    }
  }
  const auto t_end = HostClock::now();
  if (generated_out) *generated_out = {ids_host, generated};

  RunRecord rec;
  rec.tokenize_ms = ms_between(t0, t_tok);
  rec.kv_init_ms = ms_between(t_tok, t_kv);
  rec.prefill_ms = clock.elapsed_ms(0, 1);
  rec.ttft_ms = ms_between(t0, t_1);
  rec.itl_ms.reserve(n > 1 ? n - 1 : 0);
  for (int i = 2; i <= n; ++i) rec.itl_ms.push_back(clock.elapsed_ms(i, 1 + i));
  rec.decode_ms = n > 1 ? clock.elapsed_ms(2, 1 + n) : 0.0;
  rec.tpot_ms = n > 1 ? rec.decode_ms / (n - 1) : 0.0;
  rec.detokenize_ms = ms_between(t_detok, t_end);
  rec.e2e_ms = ms_between(t0, t_end);
  return rec;
}

std::string fixed_percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %%", 100 * fraction);
  return buf;
}

// The first kFirstRunIdsMax ids of each sequence of ids [B, N] (CPU int64).
void record_first_run(Outputs& out, const torch::Tensor& ids) {
  out.first_run_ids.clear();
  const auto n = std::min<std::int64_t>(ids.size(1), kFirstRunIdsMax);
  for (std::int64_t r = 0; r < ids.size(0); ++r) {
    const std::int64_t* row = ids[r].data_ptr<std::int64_t>();
    out.first_run_ids.emplace_back(row, row + n);
  }
}

// Per-rank memory (gathered), this group's devices, and the all-reduces of one decode step timed alone:
// 2 per layer (after o_proj, after down_proj) of the step's hidden state [B, 1, H].
TensorParallel tensor_parallel_figures(dist::ProcessGroup& group, const Model& model, const PointResult& pr,
                                       const PointParams& pp) {
  TensorParallel t;
  t.size = group.world();
  t.backend = group.backend();
  t.devices = group.devices();
  auto gather = [&](std::uint64_t v) {
    std::vector<std::uint64_t> out;
    for (double x : group.all_gather(static_cast<double>(v))) out.push_back(static_cast<std::uint64_t>(x));
    return out;
  };
  t.weights_bytes = gather(pr.memory.weights_bytes);
  t.peak_allocated_bytes = gather(pr.memory.peak_allocated_bytes);
  t.peak_rss_bytes = gather(pr.memory.peak_rss_bytes);
  const ModelConfig& c = model.rank_config();
  t.allreduce_ms_per_step = dist::time_step_allreduces(group, 2 * c.num_layers, {pp.batch, 1, c.hidden_size},
                                                        model.dtype(), pr.paths.at("cuda_graph"), 20, &t.allreduce_method);
  return t;
}

}  // namespace

void append_results(Results& into, Results&& more) {
  for (auto& p : more.points) into.points.push_back(std::move(p));
  into.interrupted = into.interrupted || more.interrupted;
}

namespace {

// Every refusal that needs no weights: contexts beyond the model's positions, a dtype, attention, weight or KV
// format the device cannot run, a point whose memory estimate does not fit (the whole sweep at once, not after
// its first dtype's points, and before gigabytes of weights are drawn), and a prompt that is empty, not UTF-8 or
// has no tokenizer to encode it.
void check_points(const RunOptions& options, const std::vector<PointParams>& points, const torch::Device& device) {
  const ResolvedModel resolved = resolve_model(options.model);
  for (const auto& p : points) {
    check_context(resolved.config, p.prompt_len + p.max_new_tokens);
    check_dtype_supported(p.dtype, device);
    parse_attn(p.attn);
    if (p.weights == "fp8") check_fp8_supported(device);
    if (p.kv_dtype == "fp8") check_kv_fp8_supported(device);
  }
  const ModelShape rank_shape = shape_of(dist::shard_config(resolved.config, options.tp));  // what each device holds
  for (std::size_t k = 0; k < points.size(); ++k) {
    const PointParams& p = points[k];
    const int elem = static_cast<int>(c10::elementSize(parse_dtype(p.dtype)));
    check_fits(device,
               estimate_memory(rank_shape, p.batch, p.prompt_len, p.max_new_tokens, elem, matmul_elem_bytes(p.weights),
                               kv_elem_bytes(p.kv_dtype))
                   .total(),
               cat(options.model, " at batch ", p.batch, " x ", p.prompt_len + p.max_new_tokens, " positions",
                   points.size() == 1 ? std::string()
                                      : cat(" (point ", k + 1, " of ", points.size(), ": ", p.dtype, ", ", p.weights,
                                            " weights, ", p.kv_dtype, " KV cache)")));
  }
  if (options.prompt) {
    if (options.prompt->empty()) throw UsageError("--prompt: the prompt is empty");
    const std::size_t bad = utf8::first_invalid(*options.prompt);
    if (bad != options.prompt->size()) throw UsageError(cat("--prompt: not valid UTF-8 at byte offset ", bad));
    if (!load_model_tokenizer(resolved))
      throw UsageError(cat("model '", options.model, "' has no tokenizer (none found with its weights): drop --prompt to use synthetic ids"));
  }
}

}  // namespace

void check_runnable(const RunOptions& options) {
  validate(options);
  if (options.tp > 1) dist::check_tp(resolve_model(options.model).config, options.tp);
  check_points(options, expand(options), torch::Device(resolve_device(options.device)));
}

Results run_benchmark(const RunOptions& options, const RunHooks& hooks) {
  validate(options);
  torch::NoGradGuard no_grad;
  // Tensor parallelism: refuse a size the model cannot split before any rank starts.
  if (options.tp > 1) dist::check_tp(resolve_model(options.model).config, options.tp);
  const dist::TpSession tp = dist::start_tensor_parallel(
      options.tp, options.device, std::chrono::milliseconds(static_cast<std::int64_t>(options.dist_timeout_s * 1000)));
  const std::string device_name = tp.device;
  const torch::Device device(device_name);

  Results results;
  results.created_at = now_iso8601();
  results.env = collect_env();

  std::vector<PointParams> points = expand(options);
  for (auto& p : points) p.device = device_name;
  const std::string label = options.label.empty() ? options.model : options.label;

  // Refuse what can be refused before loading anything (check_points), every point's memory estimate included.
  const ModelConfig planned = resolve_model(options.model).config;
  const ModelConfig planned_rank = dist::shard_config(planned, options.tp);  // what each device holds
  check_points(options, points, device);
  // The ceilings after every refusal above (seconds of measuring are not spent on a run that cannot start).
  if (hooks.ceilings && hooks.ceilings->device == device_name) results.env.ceilings = hooks.ceilings;
  else if (hooks.measure_ceilings) results.env.ceilings = measure_ceilings(device_name, 5);
  check_duration(planned_rank, points, options, results.env.ceilings, device_name);

  bool first_generate = true;
  std::set<int> warned_chat_cut;  // prompt lengths a cut chat prompt was warned about (once each)
  size_t i = 0;
  while (i < points.size() && !interrupted()) {
    // Points are nested with dtype, then weights outermost: load the model once per (dtype, weights).
    const std::string dtype_name = points[i].dtype, quant = points[i].weights;
    size_t end = i;
    while (end < points.size() && points[end].dtype == dtype_name && points[end].weights == quant) ++end;
    const ModelLoadOptions load_options{options.model, dtype_name, device_name, points[i].attn, options.seed, quant, tp.group};

    std::unique_ptr<Model> model;
    std::string load_error;
    try {
      model = Model::load(load_options);
    } catch (const Error& e) {
      if (dynamic_cast<const UsageError*>(&e) || points.size() == 1 || tp.group) throw;
      load_error = e.what();
    }
    std::unique_ptr<Tokenizer> tokenizer;
    if (model) tokenizer = load_model_tokenizer(model->info());
    if (options.prompt && !tokenizer)
      throw UsageError(cat("model '", options.model, "' has no tokenizer (none found with its weights): drop --prompt to use synthetic ids"));

    for (; i < end && !interrupted(); ++i) {
      PointResult pr;
      pr.params = points[i];
      pr.params.label = label;
      pr.warmup = options.warmup;
      pr.trim = options.trim;
      if (!model) {
        pr.status = "failed";
        pr.error = load_error;
        results.points.push_back(std::move(pr));
        continue;
      }
      const ModelConfig& cfg = model->rank_config();  // this device's share (the model itself when tp is 1)
      pr.weights = model->info().weights;
      pr.checkpoint = model->info().checkpoint_dir;
      pr.tokenizer = tokenizer ? tokenizer->info().source : "synthetic ids";
      pr.cold.load_ms = model->info().load_ms;
      pr.paths = {{"cuda_graph", false}, {"fused", false}};
      const PointParams& pp = pr.params;
      if (hooks.on_progress) hooks.on_progress({static_cast<int>(i), static_cast<int>(points.size()), -options.warmup, options.runs, label});
      std::uint64_t needed = 0;  // the point's estimate beyond the loaded weights, for an out-of-memory message
      try {
        check_context(cfg, pp.prompt_len + pp.max_new_tokens);
        model->set_attn(parse_attn(pp.attn));
        model->set_fused(pp.fused);
        model->set_gemv(pp.gemv);
        model->set_fp8_gemm(parse_fp8_gemm(pp.fp8_gemm));
        model->set_kv_format(parse_kv_format(pp.kv_dtype));
        const int elem = static_cast<int>(c10::elementSize(parse_dtype(pp.dtype)));
        const int matmul_elem = matmul_elem_bytes(pp.weights), kv_elem = kv_elem_bytes(pp.kv_dtype);
        MemoryEstimate est =
            estimate_memory(shape_of(cfg), pp.batch, pp.prompt_len, pp.max_new_tokens, elem, matmul_elem, kv_elem);
        needed = est.kv_cache + est.activations;
        check_fits(device, needed,
                   cat("batch ", pp.batch, " x ", pp.prompt_len + pp.max_new_tokens, " positions"));

        PromptSpec spec;
        spec.batch = pp.batch;
        spec.prompt_len = pp.prompt_len;
        spec.vocab_size = cfg.vocab_size;
        spec.seed = pp.seed;
        spec.text = options.prompt;
        spec.chat = options.chat;
        spec.chat_format = options.chat_format;
        PromptIds synthetic = spec.text ? PromptIds{} : synthetic_prompts(spec);
        pr.prompt_source = spec.text ? text_prompts(spec, *tokenizer).source : synthetic.source;
        // Cut to the length, a chat-wrapped prompt loses its end: the assistant header the model answers after.
        if (spec.chat && pr.prompt_source == "text-cut" && warned_chat_cut.insert(pp.prompt_len).second)
          log::warn(cat("--chat: the chat-wrapped prompt is longer than --prompt-len ", pp.prompt_len,
                        " and is cut: its end (the assistant header) is lost"));

        pr.memory.kv_cache_bytes = model->allocate_cache(pp.batch, pp.prompt_len + pp.max_new_tokens);
        pr.memory.weights_bytes = static_cast<std::uint64_t>(model->info().weight_bytes);
        pr.paths["fused"] = model->fused_active();
        pr.paths["gemv"] = model->gemv_active(pp.batch);
        pr.paths["gemv_mma"] = model->gemv_mma(pp.batch);
        pr.paths["gemm_lt"] = device.is_cuda() && lt_gemm_requested();
        model->tune_gemms({pp.batch * pp.prompt_len});  // cuBLASLt (LLMBENCH_GEMM): the prefill's shapes, before the warm-ups
        pr.paths["decode_attention_mma"] = model->decode_attention_mma(pp.batch);
        if (pp.weights == "fp8")
          pr.paths["fp8_scaled_mm"] = pp.fp8_gemm == "scaled-mm" && scaled_mm_available() && device.is_cuda();
        std::unique_ptr<DecodeGraph> graph;
        if (pp.cuda_graph && DecodeGraph::available(device)) {
          graph = std::make_unique<DecodeGraph>(*model);
          pr.paths["cuda_graph"] = true;
        }
        // The prefill of this point's one shape, captured too where it is small (PrefillGraph::kMaxTokens)
        // and on one rank; LLMBENCH_PREFILL_GRAPH=0 keeps it eager (A/B).
        std::unique_ptr<PrefillGraph> prefill_graph;
        pr.paths["prefill_graph"] = false;
        if (pp.cuda_graph && PrefillGraph::available(device) && PrefillGraph::enabled() && !tp.group &&
            static_cast<std::int64_t>(pp.batch) * pp.prompt_len <= PrefillGraph::kMaxTokens) {
          prefill_graph = std::make_unique<PrefillGraph>(*model, pp.prompt_len);
          pr.paths["prefill_graph"] = true;
        }
        SamplingParams sampling{pp.temperature, pp.top_k, pp.top_p, pp.seed};
        PointContext ctx{*model, graph.get(), prefill_graph.get(), tokenizer.get(), spec, synthetic, device, sampling};

        for (int w = 0; w < options.warmup && !interrupted(); ++w) {
          RunRecord r = generate_once(ctx, pp.max_new_tokens);
          if (first_generate) pr.cold.first_generate_ms = r.e2e_ms;
          first_generate = false;
          if (hooks.on_progress) hooks.on_progress({static_cast<int>(i), static_cast<int>(points.size()), -(w + 1), options.runs, label});
        }
        synchronize_device(device);
        reset_peak_memory(device);
        // A replayed prefill's activations live in its graph's pool, where the allocator's peak no longer
        // sees them: count them above what is allocated when the timed runs start, as an eager prefill would.
        const std::uint64_t graph_peak =
            prefill_graph ? allocated_bytes(device) + prefill_graph->activation_bytes() : 0;
        Generated first_run;
        for (int r = 0; r < options.runs && !interrupted(); ++r) {
          if (tp.group) tp.group->barrier();  // every rank starts the run together: rank 0 times it
          Generated gen;
          RunRecord rec = generate_once(ctx, pp.max_new_tokens, &gen);
          if (r == 0) {
            first_run = gen;
            record_first_run(pr.outputs, gen.ids);
          } else if (pp.temperature == 0 && !torch::equal(gen.ids, first_run.ids)) {
            pr.outputs.inconsistent_runs.push_back(r);
            log::warn(cat("point ", i + 1, ": timed run ", r + 1, " generated other tokens than run 1 at temperature 0"));
          }
          if (first_generate) pr.cold.first_generate_ms = rec.e2e_ms;
          first_generate = false;
          pr.runs.push_back(std::move(rec));
          if (hooks.on_progress) hooks.on_progress({static_cast<int>(i), static_cast<int>(points.size()), r, options.runs, label});
        }
        pr.memory.peak_allocated_bytes = std::max(peak_allocated_bytes(device), graph_peak);
        pr.memory.peak_reserved_bytes = peak_reserved_bytes(device);
        pr.memory.device_in_use_bytes = device_in_use_bytes(device);
        pr.memory.peak_rss_bytes = peak_rss_bytes();
        if (tp.group) pr.tensor_parallel = tensor_parallel_figures(*tp.group, *model, pr, pp);
        if (static_cast<int>(pr.runs.size()) < options.runs) {
          pr.status = "interrupted";
          pr.error = cat("interrupted after ", pr.runs.size(), " of ", options.runs, " timed runs");
        }
        if (pp.temperature == 0 && !pr.runs.empty()) pr.outputs.consistent = pr.outputs.inconsistent_runs.empty();
        if (pr.runs.size() > 0) summarize_point(pr);
        if (options.verify && pp.temperature == 0 && !pr.runs.empty()) {
          graph.reset();  // its capture holds the cache; the reference pass overwrites it anyway
          prefill_graph.reset();
          if (hooks.tamper_outputs) hooks.tamper_outputs(first_run.ids.data_ptr<std::int64_t>(), first_run.ids.size(0), first_run.ids.size(1));
          pr.verification = verify_greedy(*model, first_run.prompts, first_run.ids, verification_tolerance(pp.dtype));
          const Verification& v = *pr.verification;
          if (!v.ok) {
            pr.status = "failed";
            pr.error = cat("verification failed: ", v.over_tolerance, " of ", v.tokens,
                           " generated tokens are not what the reference path computes (worst gap ",
                           fixed_percent(v.worst_gap), " of the logit range, tolerance ", fixed_percent(v.tolerance), ")");
            pr.runs.clear();
            pr.summary.clear();
            pr.stages = {};
            if (points.size() > 1) log::warn(cat("point ", i + 1, " failed: ", pr.error));
          }
        }
        if (pr.status == "ok" && (pp.weights != "bf16" || pp.kv_dtype != "bf16") && !pr.runs.empty()) {
          // The reference: the same model with unquantized weights and KV cache, loaded after the timed runs
          // so that it never counts in their peak memory, and freed at once.
          graph.reset();
          prefill_graph.reset();
          ModelLoadOptions ref_options = load_options;
          ref_options.quant = "bf16";
          std::unique_ptr<Model> reference = Model::load(ref_options);
          reference->set_attn(parse_attn(pp.attn));
          pr.quality = measure_quality(*model, *reference, first_run.prompts, pp.max_new_tokens);
        }
        // An interrupted point too: its shape facts are the same, and its finished runs have figures (if any).
        if (pr.status == "ok" || pr.status == "interrupted") {
          const ModelShape shape = shape_of(cfg);
          pr.roofline.decode_bytes_per_step =
              decode_bytes_per_step(shape, pp.batch, pp.prompt_len, pp.max_new_tokens, elem, matmul_elem, kv_elem);
          pr.roofline.prefill_flops = prefill_flops(shape, pp.batch, pp.prompt_len);
          if (pp.max_new_tokens > 1 && pr.summary.count("tpot_ms"))
            pr.roofline.mbu = mbu(pr.roofline.decode_bytes_per_step, pr.summary.at("tpot_ms").trimmed_median, results.env.ceilings);
          // The matmul ceiling holds for one dtype only.
          if (results.env.ceilings && results.env.ceilings->matmul_dtype == pp.dtype && pr.summary.count("prefill_ms"))
            pr.roofline.mfu = mfu(pr.roofline.prefill_flops, pr.summary.at("prefill_ms").trimmed_median, results.env.ceilings);
          // Above 100 %: the point went faster than the ceiling measured, so the ceiling is what is off.
          if (pr.roofline.mfu && *pr.roofline.mfu > 1)
            log::warn(cat(point_text(pp), ": MFU ", fixed_percent(*pr.roofline.mfu), " is above 100 %: the matmul ceiling ",
                          "measured lower than this prefill ran (a busy or throttled device); `llmbench info --measure` "
                          "measures it again"));
          if (pr.roofline.mbu && *pr.roofline.mbu > 1)
            log::warn(cat(point_text(pp), ": MBU ", fixed_percent(*pr.roofline.mbu), " is above 100 %: a step read its ",
                          "bytes faster than the copy ceiling (weights small enough to stay in a cache, or a busy device ",
                          "when the ceiling was measured)"));
        }
      } catch (const std::exception& e) {
        if (tp.group) throw;  // the ranks would fall out of step: the whole run fails, on every rank
        pr.status = "failed";
        pr.runs.clear();  // a failed point has no metric values (docs/results-schema.md), whatever step threw
        pr.summary.clear();
        pr.stages = {};
        const bool oom = is_oom(e) && !dynamic_cast<const OutOfMemoryError*>(&e);  // not the estimate's refusal
        if (oom) release_cached_memory(device);  // so that "free" is what the next point can have
        pr.error = first_line(!oom ? std::string(e.what())
                              : needed ? cat("out of memory: needed ~", format_gib(needed), ", ", format_gib(available_bytes(device)), " free")
                                       : cat("out of memory: ", first_line(e.what())));
        // A single point's failure becomes the command's error: saying it twice would be noise.
        if (points.size() > 1) log::warn(cat("point ", i + 1, " failed: ", pr.error));
      }
      release_cached_memory(device);
      results.points.push_back(std::move(pr));
    }
    model.reset();
    release_cached_memory(device);
  }
  results.interrupted = interrupted();
  // A single point that failed, nothing interrupted: its failure is the command's error (no file). A point that
  // failed its verification is reported with its evidence, in the results; a sweep's failed points are too, even
  // when every one failed (the caller writes them and exits 1), so that CI can keep and report them.
  bool any_ok = points.size() > 1;
  for (const auto& p : results.points) any_ok = any_ok || p.status != "failed" || p.verification;
  if (!any_ok && !results.interrupted && !results.points.empty()) {
    const std::string& e = results.points.front().error;
    if (e.rfind("out of memory", 0) == 0) throw OutOfMemoryError(e);
    throw Error(e);
  }
  return results;
}

}  // namespace llmbench
