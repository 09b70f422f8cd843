#include "llmbench/runner/kernel_profile.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/bench/device_env.h"
#include "llmbench/bench/event_clock.h"
#include "llmbench/bench/kernel_profiler.h"
#include "llmbench/dist/session.h"
#include "llmbench/dist/shard.h"
#include "llmbench/model/decode_graph.h"
#include "llmbench/model/model.h"
#include "llmbench/model/presets.h"
#include "llmbench/runner/prompts.h"

namespace llmbench {
namespace {

constexpr int kMaxSteps = 10000;
constexpr int kPrefillTimings = 3;  // the prefill's wall time: median of this many
constexpr int kLeadInSteps = 2;     // decode steps run in the profiler's window before the recorded ones

double since_us(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

void validate(const ProfileOptions& o) {
  if (o.batch < 1) throw UsageError(cat("--batch must be >= 1, got ", o.batch));
  if (o.prompt_len < 1) throw UsageError(cat("--prompt-len must be >= 1, got ", o.prompt_len));
  if (o.steps < 1 || o.steps > kMaxSteps) throw UsageError(cat("--steps must be in [1, ", kMaxSteps, "], got ", o.steps));
  if (o.warmup < 0) throw UsageError(cat("--warmup must be >= 0, got ", o.warmup));
  if (o.tp < 1) throw UsageError(cat("--tp must be >= 1, got ", o.tp));
  if (o.mixed_chunks < 0) throw UsageError(cat("--mixed-chunks must be >= 0, got ", o.mixed_chunks));
  if (o.mixed_chunks > 0 && o.chunk_len < 1) throw UsageError(cat("--chunk-len must be >= 1, got ", o.chunk_len));
  if (o.mixed_chunks > 0 && o.tp > 1) throw UsageError("--mixed-chunks is not supported with --tp");
  // Option values before the device: a typo is named as such, not as "no CUDA device".
  if (o.dtype != "bfloat16" && o.dtype != "float16" && o.dtype != "float32")
    throw UsageError(cat("--dtype: unknown value '", o.dtype, "' (expected one of: bfloat16, float16, float32)"));
  if (o.attn != "eager" && o.attn != "sdpa")
    throw UsageError(cat("--attn: unknown value '", o.attn, "' (expected one of: eager, sdpa)"));
  if (o.weights != "bf16" && o.weights != "int8" && o.weights != "fp8")
    throw UsageError(cat("--weights: unknown value '", o.weights, "' (expected one of: bf16, int8, fp8)"));
}

// One mixed step as the serving engine's chunked prefill runs it (SlotBatch::mixed → Model::mixed_slots,
// eager): rows [0, B) decode (prefilled with `ids` [B, P] in one batched pass), rows [B, B + C) each take
// a prompt chunk of L tokens from column 0 (freed again before every step, so each step carries the same
// work) with the chunk's last token giving the row's first logits; then the greedy argmax of all rows.
KernelSplit profile_mixed_step(Model& model, const ProfileOptions& o, const torch::Tensor& ids, std::int64_t columns) {
  const std::int64_t b = o.batch, c = o.mixed_chunks, len = o.chunk_len, rows = b + c;
  const torch::Device device = ids.device();
  model.allocate_cache(rows, columns);
  model.reset_cache();
  model.prefill_slots(0, ids, std::vector<std::int64_t>(b, o.prompt_len));
  // The chunks' tokens: the prompt rows' ids, repeated to chunk_len.
  const torch::Tensor host = ids.to(torch::kCPU);  // [B, P]
  std::vector<std::int64_t> step_ids(rows, 0);     // the decode inputs of rows [0, R), then the chunks' tokens
  std::vector<ChunkSpan> chunks;
  for (std::int64_t j = 0; j < c; ++j) {
    const torch::Tensor row = host[j % b];
    for (std::int64_t t = 0; t < len; ++t) step_ids.push_back(row[t % o.prompt_len].item<std::int64_t>());
    chunks.push_back({b + j, 0, len, true});
  }
  auto sync = [&] { synchronize_device(device); };
  auto step = [&] {
    for (std::int64_t j = 0; j < c; ++j) model.free_slot(b + j);
    model.mixed_slots(rows, columns, step_ids, chunks).argmax(-1);
  };
  for (int w = 0; w < o.warmup; ++w) step();
  sync();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.steps; ++i) step();
  sync();
  const double wall = since_us(t0) / o.steps;
  double profiled = 0;
  auto acts = record_gpu_activity(
      [&] {
        const auto t1 = std::chrono::steady_clock::now();
        for (int i = 0; i < o.steps; ++i) step();
        sync();
        profiled = since_us(t1) / o.steps;
      },
      [&] {
        for (int i = 0; i < kLeadInSteps; ++i) step();
      });
  if (acts.empty()) throw Error("the profiler recorded no CUDA kernel in the mixed steps");
  KernelSplit s = split_kernels(acts, o.steps, wall, o.full_names);
  s.title = cat("mixed step, eager (", b, " decode rows + ", c, " prompt chunks of ", len, " tokens, ", o.attn,
                " attention)");
  s.profiled_wall_us = profiled;
  s.notes.push_back(cat("each step frees the chunk rows first (a few small fills) and ends with the argmax of all ",
                        rows, " rows; the decode rows attend over ", o.prompt_len + o.warmup, " to ", columns - 1,
                        " cached columns in a view of ", columns));
  return s;
}

}  // namespace

ProfileReport profile_kernels(const ProfileOptions& o) {
  validate(o);
  if (o.tp > 1) dist::check_tp(resolve_model(o.model).config, o.tp);  // before any rank starts
  std::string device_name;
  try {
    device_name = resolve_device(o.device);
  } catch (const UsageError& e) {
    throw UsageError(cat("llmbench profile records CUDA kernels: ", e.what()));
  }
  torch::Device device(device_name);
  if (!device.is_cuda())
    throw UsageError(cat("llmbench profile records CUDA kernels: it needs a CUDA device (--device ", o.device,
                         " is ", device_name, ")"));
  std::string why;
  if (!kernel_profiler_available(&why)) throw Error(cat("llmbench profile: ", why));
  // --tp: every rank profiles the same calls on its GPU (its collectives meet the others'); rank 0 reports.
  const dist::TpSession tp = dist::start_tensor_parallel(
      o.tp, o.device, std::chrono::milliseconds(static_cast<std::int64_t>(o.dist_timeout_s * 1000)));
  if (tp.group) {
    device_name = tp.device;
    device = torch::Device(device_name);
  }
  // Each mode prefills again, then runs warm-ups, the timed steps, the lead-in and the recorded steps.
  const std::int64_t columns =
      static_cast<std::int64_t>(o.prompt_len) + o.warmup + kLeadInSteps + 2 * static_cast<std::int64_t>(o.steps);
  check_context(resolve_model(o.model).config, columns);
  // The mixed mode's cache: the decode rows grow by one column per mixed step; a chunk fills [0, chunk_len).
  const std::int64_t mixed_columns = std::max<std::int64_t>(columns + 1, o.chunk_len);
  if (o.mixed_chunks > 0) check_context(resolve_model(o.model).config, mixed_columns);

  torch::NoGradGuard no_grad;
  std::unique_ptr<Model> model = Model::load({o.model, o.dtype, device_name, o.attn, o.seed, o.weights, tp.group});
  model->set_fused(o.fused);
  model->set_gemv(o.gemv.value_or(true));
  model->allocate_cache(o.batch, columns);
  if (o.prefill) model->tune_gemms({static_cast<std::int64_t>(o.batch) * o.prompt_len});  // as `llmbench run` does
  const ModelConfig& cfg = model->config();
  PromptSpec spec;
  spec.batch = o.batch;
  spec.prompt_len = o.prompt_len;
  spec.vocab_size = cfg.vocab_size;
  spec.seed = o.seed;
  torch::Tensor ids = torch::empty({o.batch, o.prompt_len}, torch::kInt64);  // [B, P]
  const PromptIds prompts = synthetic_prompts(spec);
  for (int b = 0; b < o.batch; ++b) ids[b].copy_(torch::tensor(prompts.rows[b], torch::kInt64));
  ids = ids.to(device);

  ProfileReport report;
  const EnvInfo env = collect_env();
  const int index = device.has_index() ? device.index() : 0;
  const std::string gpu = index < static_cast<int>(env.gpus.size()) ? env.gpus[index].name : device_name;
  report.header.push_back(cat("model ", o.model, " (", model->info().weights, " weights, ", model->info().dtype,
                              o.weights == "bf16" ? "" : ", " + o.weights + " matmuls", ") on ", gpu, ", libtorch ",
                              env.torch_version));
  if (tp.group)
    report.header.push_back(cat("tensor-parallel: ", tp.group->world(), " ranks (", tp.group->backend(),
                                "), every rank runs the same calls; the kernels below are rank 0's (", device_name, ")"));
  report.header.push_back(cat("batch ", o.batch, ", prompt ", o.prompt_len, " tokens, prefill attention ", o.attn,
                              ", fused decode kernels ", model->fused_active() ? "on" : "off", ", GEMV kernel ",
                              model->gemv_active(o.batch) ? "on" : "off", "; decode steps timed over ", o.prompt_len + o.warmup,
                              " to ", o.prompt_len + o.warmup + o.steps, " cached columns, recorded (after ",
                              kLeadInSteps, " lead-in steps in the profiler's window) over ",
                              o.prompt_len + o.warmup + o.steps + kLeadInSteps, " to ", columns));
  auto sync = [&] { synchronize_device(device); };
  auto title_shape = cat("batch ", o.batch, ", prompt ", o.prompt_len);

  if (o.prefill) {
    auto prefill = [&] { model->prefill(ids); };
    for (int w = 0; w < o.warmup; ++w) {
      model->reset_cache();
      prefill();
    }
    std::vector<double> walls;
    for (int r = 0; r < kPrefillTimings; ++r) {
      model->reset_cache();
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      prefill();
      sync();
      walls.push_back(since_us(t0));
    }
    std::sort(walls.begin(), walls.end());
    double profiled = 0;
    auto acts = record_gpu_activity(
        [&] {
          const auto t0 = std::chrono::steady_clock::now();
          prefill();
          sync();
          profiled = since_us(t0);
        },
        [&] {  // lead-in: one prefill, and the cache reset for the recorded one (its kernels stay out)
          model->reset_cache();
          prefill();
          model->reset_cache();
        });
    if (acts.empty())
      throw Error("the profiler recorded no CUDA kernel in the prefill: this libtorch lacks Kineto/CUPTI support (or "
                  "CUPTI could not be loaded), so no per-kernel split can be made");
    KernelSplit s = split_kernels(acts, 1, walls[walls.size() / 2], o.full_names);
    s.title = cat("prefill, ", o.attn, " attention (", title_shape, ")");
    s.unit = "prefill";
    s.profiled_wall_us = profiled;
    s.notes.push_back(cat("wall time: median of ", kPrefillTimings, " prefills, the KV-cache reset before each not included"));
    report.splits.push_back(std::move(s));
  }

  // One decode mode: prefill, warm-ups, `steps` timed steps, `steps` recorded steps. A step is what the
  // runner's generate loop does per token: the decode step (graph replay or eager) and the greedy argmax.
  struct Recorded {
    std::vector<KernelActivity> acts;
    double wall_us = 0, profiled_us = 0;
  };
  auto record_decode = [&](DecodeGraph* graph) {
    model->reset_cache();
    torch::Tensor tok = model->prefill(ids).argmax(-1);  // [B] int64
    auto step = [&] { tok = (graph ? graph->step(tok) : model->decode_step(tok)).argmax(-1); };
    for (int w = 0; w < o.warmup; ++w) step();
    sync();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.steps; ++i) step();
    sync();
    Recorded r;
    r.wall_us = since_us(t0) / o.steps;
    r.acts = record_gpu_activity(
        [&] {
          const auto t1 = std::chrono::steady_clock::now();
          for (int i = 0; i < o.steps; ++i) step();
          sync();
          r.profiled_us = since_us(t1) / o.steps;
        },
        [&] {
          for (int i = 0; i < kLeadInSteps; ++i) step();
        });
    return r;
  };
  auto decode_split = [&](const Recorded& r, const std::string& title) {
    KernelSplit s = split_kernels(r.acts, o.steps, r.wall_us, o.full_names);
    s.title = title;
    s.profiled_wall_us = r.profiled_us;
    return s;
  };

  log::info(cat("profile: ", o.steps, " eager decode steps"));
  const Recorded eager = record_decode(nullptr);
  if (eager.acts.empty())
    throw Error(o.prefill ? "the profiler recorded the prefill's kernels but none in the eager decode steps (a second "
                            "profiler session in this process recorded nothing); --no-prefill records the decode only"
                          : "the profiler recorded no CUDA kernel: this libtorch lacks Kineto/CUPTI support (or CUPTI "
                            "could not be loaded), so no per-kernel split can be made");
  KernelSplit eager_split = decode_split(eager, cat("decode, eager launches (", title_shape, ")"));

  if (o.cuda_graph && DecodeGraph::available(device)) {
    log::info(cat("profile: capturing the decode step in a CUDA graph, then ", o.steps, " replays"));
    DecodeGraph graph(*model);
    const Recorded replay = record_decode(&graph);
    const std::string title = cat("decode, CUDA graph replay (", title_shape, ")");
    // Outside the graph each step launches the token copy and the argmax: with the graph's kernels hidden
    // from the profiler, a replay would show a handful of activities against the eager step's hundreds.
    const double seen = static_cast<double>(replay.acts.size()) / o.steps;
    if (seen < 0.5 * eager_split.calls) {
      KernelSplit s = decode_split({eager.acts, replay.wall_us, replay.profiled_us},
                                   title + " — kernels from the eager steps");
      s.notes.push_back(cat("the profiler saw ", seen, " GPU activities per graph replay against ", eager_split.calls,
                            " per eager step: it does not see the kernels inside CUDA graphs here, so the rows are "
                            "the eager steps' kernels (the same kernels, launched one by one) against the replay's "
                            "wall time"));
      report.splits.push_back(std::move(s));
    } else {
      report.splits.push_back(decode_split(replay, title));
    }
  } else if (o.cuda_graph) {
    eager_split.notes.push_back("CUDA graphs are not available in this build: eager steps only");
  }
  report.splits.push_back(std::move(eager_split));
  if (o.mixed_chunks > 0) report.splits.push_back(profile_mixed_step(*model, o, ids, mixed_columns));
  return report;
}

}  // namespace llmbench
