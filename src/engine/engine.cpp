#include "llmbench/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <pthread.h>

#include <thread>

#include <torch/torch.h>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/base/switch.h"
#include "llmbench/dist/model_mirror.h"
#include "llmbench/dist/process_group.h"
#include "llmbench/engine/slot_batch.h"
#include "llmbench/model/attention.h"
#include "llmbench/model/model.h"
#include "llmbench/model/sampler.h"
#include "llmbench/runner/model_tokenizer.h"

#ifdef LLMBENCH_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#endif

namespace llmbench {

const char* to_string(FinishReason r) {
  switch (r) {
    case FinishReason::none: return "none";
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::cancelled: return "cancelled";
    case FinishReason::error: return "error";
  }
  return "none";
}

namespace {

// Default context per slot when EngineOptions::max_context is 0.
constexpr int kDefaultMaxContext = 4096;
// Prefill rows whose cuBLASLt algorithms the engine times at start (unless LLMBENCH_GEMM=torch); larger passes keep
// torch's GEMM (timing them would hold gigabytes of scratch activations).
constexpr std::int64_t kMaxTunedPrefillRows = 8192;
// Chunked prefill: prompt tokens a step carries even when the running rows use up max_step_tokens, so that
// waiting prompts always make progress.
constexpr std::int64_t kMinChunkTokens = 64;

// The engine's model, loaded alike on every tensor-parallel rank (rank 0's start(), the others' follow()).
std::unique_ptr<Model> load_engine_model(const EngineOptions& o) {
  set_sdpa_cudnn(o.sdpa_cudnn);
  std::unique_ptr<Model> model = Model::load({o.model, o.dtype, o.device, o.attn, o.seed, "bf16", o.group});
  model->set_fused(o.fused);
  return model;
}

using Clock = std::chrono::steady_clock;

struct Waiting {
  std::shared_ptr<EngineRequest> request;
  SteadyTime enqueued;
};

// A request holding row i of the SlotBatch (rows_[i]).
struct Running {
  std::shared_ptr<EngineRequest> request;
  EngineTimes times;
  int generated = 0;
  std::int64_t last = 0;              // the last sampled token: the next step's input
  std::optional<at::Generator> generator;  // sampled requests only: seeded with the request's seed
  std::size_t prefilled = 0;          // chunked prefill: prompt tokens in the cache so far
  std::uint64_t order = 0;            // admission order (chunks go to the oldest prompt first)
};

class EngineImpl final : public Engine {
 public:
  EngineImpl(const EngineOptions& o) : options_(o) {
    if (o.max_batch < 1) throw UsageError(cat("engine max_batch must be >= 1, got ", o.max_batch));
    if (o.max_queue < 1) throw UsageError(cat("engine max_queue must be >= 1, got ", o.max_queue));
    if (!(o.max_wait_ms >= 0)) throw UsageError(cat("engine max_wait_ms must be >= 0, got ", o.max_wait_ms));
    if (o.max_context < 0) throw UsageError(cat("engine max_context must be >= 0, got ", o.max_context));
    if (o.max_prefill_tokens < 1)
      throw UsageError(cat("engine max_prefill_tokens must be >= 1, got ", o.max_prefill_tokens));
    if (o.prefill_passes < 0) throw UsageError(cat("engine prefill_passes must be >= 0, got ", o.prefill_passes));
    if (o.max_step_tokens < 1) throw UsageError(cat("engine max_step_tokens must be >= 1, got ", o.max_step_tokens));
    if (o.chunked_prefill && o.batching != Batching::continuous)
      throw UsageError("chunked prefill needs continuous batching");
    model_ = load_engine_model(o);
    const ModelConfig& c = model_->config();
    max_context_ = o.max_context > 0 ? o.max_context
                                     : static_cast<int>(std::min<std::int64_t>(c.max_position_embeddings, kDefaultMaxContext));
    eos_ = c.eos_token_ids;
    tokenizer_ = load_model_tokenizer(model_->info());
#ifdef LLMBENCH_WITH_CUDA
    std::optional<c10::cuda::CUDAGuard> guard;
    if (model_->device().is_cuda()) guard.emplace(model_->device());
#endif
    batch_ = std::make_unique<SlotBatch>(*model_, o.max_batch, max_context_, o.cuda_graph);
    tune_prefill_gemms();
    // LLMBENCH_DEFER_EVENTS: auto (the default) defers the events (see call()) where a step runs
    // asynchronously, on a GPU (on the CPU the step computes inside the call, and a deferred token would wait
    // for the whole next step); 0 hands every event out at once (A/B runs); 1 defers everywhere (the CPU tests
    // of the deferred path). H200, 64 streams: host work between steps 0.12–0.15 → 0.04–0.09 ms, +0.2 to
    // +0.5 % output tok/s (docs/serving.md, session 29).
    const std::size_t defer = env_switch("LLMBENCH_DEFER_EVENTS", {"auto", "0", "1"});
    defer_events_ = defer == 2 || (defer == 0 && model_->device().is_cuda());
    stats_.slots_total = o.max_batch;
    stats_.tp = model_->info().tp;
    if (o.group) stats_.tp_backend = o.group->backend();
    log::info(cat("engine: ", o.max_batch, " slots × ", max_context_, " columns, ",
                  o.batching == Batching::continuous ? "continuous" : "static", " batching, ",
                  o.chunked_prefill ? cat("chunked prefill (", o.max_step_tokens, " tokens per step)")
                                    : o.prefill_passes == 0 ? std::string("batched prefill (passes while requests wait)")
                                    : cat("batched prefill (up to ", o.prefill_passes, " pass",
                                          o.prefill_passes == 1 ? "" : "es", " per step boundary)"),
                  ", fused ",
                  model_->fused_active() ? "on" : "off", ", graphs ", batch_->graphs() ? "on" : "off",
                  defer_events_ ? ", events deferred to the next step's launch" : "",
                  o.attn == "sdpa" ? (o.sdpa_cudnn ? ", sdpa with cuDNN" : ", sdpa without cuDNN") : ""));
    thread_ = std::thread([this] {
      ::pthread_setname_np(::pthread_self(), "llmbench-engine");  // per-thread CPU time in /proc
      loop();
    });
  }

  ~EngineImpl() override { stop(0); }

  bool submit(std::shared_ptr<EngineRequest> r) override {
    if (!r) throw UsageError("null request");
    validate(*r);
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || static_cast<int>(queue_.size()) >= options_.max_queue) return false;
    queue_.push_back({std::move(r), Clock::now()});
    cv_.notify_all();
    return true;
  }

  EngineStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    EngineStats s = stats_;
    s.waiting = static_cast<int>(queue_.size());
    return s;
  }

  int max_context() const override { return max_context_; }
  std::int64_t vocab_size() const override { return model_->config().vocab_size; }
  std::vector<std::int64_t> eos_ids() const override { return eos_; }
  std::string model_name() const override { return options_.model; }
  std::shared_ptr<const Tokenizer> tokenizer() const override { return tokenizer_; }
  std::optional<std::string> failure() const override { return batch_->mirror().failure(); }

  void stop(double grace_ms) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!stopping_) {
        stopping_ = true;
        const auto grace = std::chrono::duration<double, std::milli>(std::max(0.0, grace_ms));
        deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(grace);
      }
      cv_.notify_all();
    }
    std::lock_guard<std::mutex> join(join_mu_);
    if (thread_.joinable()) thread_.join();
  }

 private:
  void validate(const EngineRequest& r) const {
    const auto p = static_cast<std::int64_t>(r.prompt.size());
    if (p == 0) throw UsageError("the prompt is empty");
    const std::int64_t vocab = model_->config().vocab_size;
    for (std::size_t i = 0; i < r.prompt.size(); ++i)
      if (r.prompt[i] < 0 || r.prompt[i] >= vocab)
        throw UsageError(cat("token id ", r.prompt[i], " at prompt position ", i, " is outside the vocabulary [0, ",
                             vocab, ")"));
    if (r.max_tokens < 1) throw UsageError(cat("max_tokens must be >= 1, got ", r.max_tokens));
    if (p + r.max_tokens > max_context_)
      throw UsageError(cat("prompt of ", p, " tokens + max_tokens ", r.max_tokens, " = ", p + r.max_tokens,
                           " exceeds the context of ", max_context_, " tokens"));
    if (!(r.temperature >= 0) || !std::isfinite(r.temperature))
      throw UsageError(cat("temperature must be a finite number >= 0, got ", r.temperature));
    if (!(r.top_p > 0 && r.top_p <= 1)) throw UsageError(cat("top_p must be in (0, 1], got ", r.top_p));
  }

  // The engine thread: step boundaries, admission, one decode step per iteration.
  void loop() {
    torch::NoGradGuard no_grad;
#ifdef LLMBENCH_WITH_CUDA
    std::optional<c10::cuda::CUDAGuard> guard;
    if (model_->device().is_cuda()) guard.emplace(model_->device());
#endif
    for (;;) {
      SteadyTime busy_from = Clock::now();
      // Cancelled rows leave first, so that their slots are free for this boundary's admissions.
      for (std::int64_t i = size() - 1; i >= 0; --i)
        if (i < size() && rows_[i].request->cancelled) finish(i, FinishReason::cancelled);
      publish();  // before waiting: an idle engine must not keep reporting the rows it just freed
      if (size() == 0) flush_events();  // nothing runs that they could overlap: before the engine may wait
      std::vector<std::vector<Waiting>> passes;  // requests to prefill, one batched pass each
      std::vector<Waiting> admitted;             // chunked prefill: requests that take a row now
      std::vector<Waiting> dropped;
      bool cancel_running = false;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (!wait_for_work(lock)) break;
        busy_from = Clock::now();
        if (stopping_) {
          for (auto& w : queue_) dropped.push_back(std::move(w));
          queue_.clear();
          cancel_running = Clock::now() >= deadline_;
        } else {
          // Queued requests cancelled while waiting leave now, without taking a slot.
          for (auto it = queue_.begin(); it != queue_.end();) {
            if (it->request->cancelled) {
              dropped.push_back(std::move(*it));
              it = queue_.erase(it);
            } else {
              ++it;
            }
          }
          // Continuous: one prefill pass per step boundary, so that running rows wait for at most one pass
          // between their tokens. Static: the whole batch, in as many passes as the token budget needs.
          std::int64_t free = batch_->slots() - batch_->size();
          if (options_.chunked_prefill) {
            // Admit while this step's prompt budget lasts (after the prompts already being prefilled).
            std::int64_t budget = chunk_budget() - unprefilled();
            while (budget > 0 && free > 0 && !queue_.empty()) {
              budget -= static_cast<std::int64_t>(queue_.front().request->prompt.size());
              admitted.push_back(std::move(queue_.front()));
              queue_.pop_front();
              --free;
            }
          } else if (options_.batching == Batching::continuous) {
            if (free > 0 && !queue_.empty()) passes.push_back(take_pass(free));
          } else if (batch_->size() == 0) {
            while (free > 0 && !queue_.empty()) {
              passes.push_back(take_pass(free));
              free -= static_cast<std::int64_t>(passes.back().size());
            }
          }
        }
      }
      for (auto& w : dropped) finish_waiting(w, FinishReason::cancelled);
      if (cancel_running) end_all(FinishReason::cancelled);
      for (auto& pass : passes) start_requests(pass);
      // More passes back to back (prefill_passes), each taking what has arrived meanwhile.
      for (int k = 1; !passes.empty() && (options_.prefill_passes == 0 || k < options_.prefill_passes); ++k) {
        std::vector<Waiting> more;
        {
          std::lock_guard<std::mutex> lock(mu_);
          const std::int64_t free = batch_->slots() - batch_->size();
          if (stopping_ || free <= 0 || queue_.empty()) break;
          more = take_pass(free);
        }
        start_requests(more);
      }
      for (auto& w : admitted) reserve(w);
      if (size() > 0) decode();
      publish();
      const double busy = std::chrono::duration<double>(Clock::now() - busy_from).count();
      std::lock_guard<std::mutex> lock(mu_);
      stats_.busy_seconds += busy;
    }
    end_all(FinishReason::cancelled);
    publish();
    flush_events();
  }

  // Chunked prefill: prompt tokens this step may carry.
  std::int64_t chunk_budget() const {
    std::int64_t decoding = 0;
    for (std::int64_t i = 0; i < size(); ++i) decoding += batch_->active(i) ? 1 : 0;
    return std::max<std::int64_t>(options_.max_step_tokens - decoding,
                                  std::min<std::int64_t>(kMinChunkTokens, options_.max_step_tokens));
  }

  // Prompt tokens of the rows still being prefilled that are not in the cache yet.
  std::int64_t unprefilled() const {
    std::int64_t n = 0;
    for (const auto& run : rows_) n += static_cast<std::int64_t>(run.request->prompt.size() - run.prefilled);
    return n;
  }

  // Chunked prefill: `w` takes a row whose prompt the next steps feed in chunks.
  void reserve(Waiting& w) {
    if (w.request->cancelled) return finish_waiting(w, FinishReason::cancelled);
    Running run;
    run.request = w.request;
    run.times.enqueued = w.enqueued;
    run.times.admitted = Clock::now();
    run.order = ++admissions_;
    try {
      if (w.request->temperature > 0) run.generator = make_generator(model_->device(), w.request->seed);
      batch_->reserve();
    } catch (const std::exception& e) {
      const std::string what = first_line(e.what());
      log::warn(cat("engine: admitting a request failed: ", what));
      return finish_waiting(w, FinishReason::error, what, run.times.admitted);
    }
    rows_.push_back(std::move(run));
  }

  // cuBLASLt on (the default, llmbench/model/linear.h): times the row buckets of prefill_gemm_rows.
  void tune_prefill_gemms() {
    const std::vector<std::int64_t> rows = prefill_gemm_rows(options_, max_context_);
    if (rows.empty()) return;
    try {
      const double seconds = model_->tune_gemms(rows);
      if (seconds > 0)
        log::info(cat("engine: timed cuBLASLt's algorithms for prefills of up to ", rows.back(), " rows in ",
                      seconds, " s"));
    } catch (const std::exception& e) {  // e.g. out of memory for the scratch rows: those prefills keep torch's GEMM
      log::warn(cat("engine: timing cuBLASLt's prefill algorithms stopped: ", first_line(e.what())));
    }
  }

  // The chunks of this step: the oldest prompts first, within chunk_budget().
  std::vector<SlotBatch::Chunk> take_chunks() {
    std::vector<std::int64_t> waiting;  // rows still prefilling, oldest first
    for (std::int64_t i = 0; i < size(); ++i)
      if (!batch_->active(i)) waiting.push_back(i);
    std::sort(waiting.begin(), waiting.end(), [&](auto a, auto b) { return rows_[a].order < rows_[b].order; });
    std::vector<SlotBatch::Chunk> chunks;
    std::int64_t budget = chunk_budget();
    for (std::int64_t i : waiting) {
      if (budget <= 0) break;
      const auto& prompt = rows_[i].request->prompt;
      const std::size_t from = rows_[i].prefilled;
      const std::size_t take = std::min<std::size_t>(prompt.size() - from, static_cast<std::size_t>(budget));
      chunks.push_back({i, std::vector<std::int64_t>(prompt.begin() + from, prompt.begin() + from + take),
                        from + take == prompt.size()});
      budget -= static_cast<std::int64_t>(take);
    }
    return chunks;
  }

  // Pops the requests of one prefill pass off the queue (mu_ held): the oldest ones, in order, while they
  // fit in `free` slots and (requests × longest prompt) stays within max_prefill_tokens. The oldest one
  // always goes, even when its prompt alone is over the budget. Never skips a request (no starvation).
  std::vector<Waiting> take_pass(std::int64_t free) {
    std::vector<Waiting> pass;
    std::size_t longest = 0;
    while (!queue_.empty() && static_cast<std::int64_t>(pass.size()) < free) {
      const std::size_t p = std::max(longest, queue_.front().request->prompt.size());
      if (!pass.empty() && (pass.size() + 1) * p > static_cast<std::size_t>(options_.max_prefill_tokens)) break;
      longest = p;
      pass.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    return pass;
  }

  std::int64_t size() const { return static_cast<std::int64_t>(rows_.size()); }

  void end_all(FinishReason reason, const std::string& error = {}) {
    while (size() > 0) finish(size() - 1, reason, error);
  }

  // Blocks until there is something to do. False: stopping and nothing left (the thread exits).
  bool wait_for_work(std::unique_lock<std::mutex>& lock) {
    for (;;) {
      if (batch_->size() > 0) return true;
      if (stopping_) return !queue_.empty();
      if (!queue_.empty()) {
        if (options_.batching == Batching::continuous) return true;
        // Static batching: a full batch, or max_wait_ms after the oldest request arrived.
        const auto due = queue_.front().enqueued + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double, std::milli>(options_.max_wait_ms));
        if (static_cast<std::int64_t>(queue_.size()) >= batch_->slots() || Clock::now() >= due) return true;
        cv_.wait_until(lock, due);
        continue;
      }
      cv_.wait(lock);
    }
  }

  // Admits `pass` (requests cancelled meanwhile aside): one batched prefill into new rows, each row's first
  // token sampled and handed out. A failure ends every request of the pass with `error`.
  void start_requests(std::vector<Waiting>& pass) {
    flush_events();  // no event waits for the length of a prefill pass
    std::vector<Waiting> go;
    for (auto& w : pass) {
      if (w.request->cancelled)
        finish_waiting(w, FinishReason::cancelled);
      else
        go.push_back(std::move(w));
    }
    if (go.empty()) return;
    const auto admitted = Clock::now();
    const std::int64_t first = size();
    std::vector<Running> runs(go.size());
    std::vector<std::vector<std::int64_t>> prompts;
    std::size_t tokens = 0, longest = 0;
    std::vector<std::int64_t> next;
    double prefill_seconds = 0;
    try {
      std::vector<Running*> rows;
      for (std::size_t i = 0; i < go.size(); ++i) {
        const EngineRequest& r = *go[i].request;
        runs[i].request = go[i].request;
        runs[i].times.enqueued = go[i].enqueued;
        runs[i].times.admitted = admitted;
        if (r.temperature > 0) runs[i].generator = make_generator(model_->device(), r.seed);
        prompts.push_back(r.prompt);
        tokens += r.prompt.size();
        longest = std::max(longest, r.prompt.size());
        rows.push_back(&runs[i]);
      }
      torch::Tensor logits = batch_->add(prompts);  // [k, V]
      next = sample(rows, logits);
      prefill_seconds = std::chrono::duration<double>(Clock::now() - admitted).count();
    } catch (const std::exception& e) {
      while (batch_->size() > size()) batch_->remove(batch_->size() - 1);
      const std::string what = first_line(e.what());
      log::warn(cat("engine: prefill of ", go.size(), " requests failed: ", what));
      for (auto& w : go) finish_waiting(w, FinishReason::error, what, admitted);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.prefill_passes;
      stats_.prefill_requests += go.size();
      stats_.prefill_tokens += tokens;
      stats_.prefill_padded_tokens += go.size() * longest;
      stats_.last_prefill_batch = static_cast<int>(go.size());
      stats_.prefill_seconds += prefill_seconds;
    }
    for (auto& run : runs) rows_.push_back(std::move(run));
    // Backwards, so that compaction (a finished row replaced by the last one) never moves an unvisited row.
    for (std::int64_t i = size() - 1; i >= first; --i)
      if (i < size()) emit_token(i, next[i - first]);
  }

  // Greedy rows: the exact argmax of their float32 logits. Sampled rows: sample_rows, each from its own
  // generator, so a request's draws depend on its seed and its own logits only, never on which other
  // requests share the step. logits [n, V] → ids on the host (the step's one sync).
  std::vector<std::int64_t> sample(const std::vector<Running*>& rows, const torch::Tensor& logits) {
    torch::Tensor ids = logits.argmax(-1);  // [n] int64
    std::vector<std::int64_t> sampled;
    std::vector<double> temperature, top_p;
    std::vector<at::Generator> generators;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i]->generator) continue;
      sampled.push_back(static_cast<std::int64_t>(i));
      temperature.push_back(rows[i]->request->temperature);
      top_p.push_back(rows[i]->request->top_p);
      generators.push_back(*rows[i]->generator);
    }
    if (!sampled.empty()) {
      torch::Tensor index = torch::tensor(sampled, torch::kInt64).to(logits.device());  // [s]
      ids.index_copy_(0, index, sample_rows(logits.index_select(0, index), temperature, top_p, generators));
    }
    ids = ids.cpu();
    const auto* p = ids.data_ptr<std::int64_t>();
    return std::vector<std::int64_t>(p, p + ids.size(0));
  }

  // One decode step of every running row (with chunked prefill: plus this step's prompt chunks, in one
  // forward), its tokens handed out, finished rows freed.
  void decode() {
    const auto n = batch_->size();
    std::vector<std::int64_t> tokens(n, 0);
    std::vector<std::int64_t> emitting;  // rows that get a token: the decoding ones, the prompts completed now
    for (std::int64_t i = 0; i < n; ++i) {
      if (!batch_->active(i)) continue;
      tokens[i] = rows_[i].last;
      emitting.push_back(i);
    }
    const std::vector<SlotBatch::Chunk> chunks = options_.chunked_prefill ? take_chunks() : std::vector<SlotBatch::Chunk>{};
    const auto decoding = static_cast<int>(emitting.size());
    std::size_t chunk_tokens = 0, completed = 0;
    for (const auto& c : chunks) {
      chunk_tokens += c.ids.size();
      if (c.last) {
        emitting.push_back(c.row);
        ++completed;
      }
    }
    std::sort(emitting.begin(), emitting.end());
    std::vector<std::int64_t> next;
    const auto step_from = Clock::now();
    try {
      torch::Tensor logits = chunks.empty() ? batch_->step(tokens) : batch_->mixed(tokens, chunks);  // [n, V] float32
      flush_events();  // the previous step's tokens go out while this one runs on the GPU
      std::vector<Running*> rows;
      for (auto i : emitting) rows.push_back(&rows_[i]);
      if (!rows.empty()) {
        const bool all = static_cast<std::int64_t>(emitting.size()) == n;
        next = sample(rows, all ? logits : logits.index_select(0, torch::tensor(emitting, torch::kInt64).to(logits.device())));
      }
    } catch (const std::exception& e) {
      const std::string what = first_line(e.what());
      log::warn(cat("engine: ", chunks.empty() ? "decode" : "mixed", " step of ", n, " rows failed: ", what));
      end_all(FinishReason::error, what);
      return;
    }
    const double step_seconds = std::chrono::duration<double>(Clock::now() - step_from).count();
    for (const auto& c : chunks) rows_[c.row].prefilled += c.ids.size();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.steps;
      stats_.step_seconds += step_seconds;
      stats_.last_batch_size = decoding;
      if (!chunks.empty()) {
        ++stats_.prefill_passes;
        stats_.prefill_chunks += chunks.size();
        stats_.prefill_requests += completed;
        stats_.prefill_tokens += chunk_tokens;
        stats_.prefill_padded_tokens += chunk_tokens;
        stats_.last_prefill_batch = static_cast<int>(chunks.size());
      }
    }
    // Backwards, so that compaction (the last row moving into a freed one) never moves an unvisited row.
    for (auto k = static_cast<std::int64_t>(emitting.size()) - 1; k >= 0; --k)
      if (emitting[k] < size()) emit_token(emitting[k], next[k]);
  }

  // Hands row i its new token; frees the row when that token ends the request.
  void emit_token(std::int64_t i, std::int64_t token) {
    Running& run = rows_[i];
    const std::shared_ptr<EngineRequest> request = run.request;  // outlives release(i)
    const EngineRequest& r = *request;
    ++run.generated;
    run.last = token;
    const auto now = Clock::now();
    if (run.generated == 1) run.times.first_token = now;
    FinishReason finish = FinishReason::none;
    if (!r.ignore_eos && run.generated >= r.min_tokens && std::find(eos_.begin(), eos_.end(), token) != eos_.end())
      finish = FinishReason::stop;
    else if (run.generated >= r.max_tokens)
      finish = FinishReason::length;
    EngineEvent e;
    e.tokens = {token};
    e.finish = finish;
    e.prompt_tokens = static_cast<int>(r.prompt.size());
    e.completion_tokens = run.generated;
    if (finish != FinishReason::none) run.times.finished = now;
    e.times = run.times;
    if (finish != FinishReason::none) release(i);
    call(request, e);
  }

  // Ends row i without a new token (cancelled, error) and frees it.
  void finish(std::int64_t i, FinishReason reason, const std::string& error = {}) {
    Running& run = rows_[i];
    run.times.finished = Clock::now();
    const EngineEvent e = last_event(run, reason, error);
    const std::shared_ptr<EngineRequest> request = run.request;
    release(i);
    call(request, e);
  }

  // Frees row i of the batch and of rows_ with the same compaction. A failure to free (the device state is
  // suspect) resets every slot and ends the other rows with an error.
  void release(std::int64_t i) {
    bool reset = false;
    try {
      batch_->remove(i);
    } catch (const std::exception& e) {
      log::warn(cat("engine: freeing a slot failed: ", first_line(e.what()), "; every slot is reset"));
      batch_->clear();
      reset = true;
    }
    rows_[i] = std::move(rows_.back());
    rows_.pop_back();
    if (reset) {
      std::vector<Running> rest = std::move(rows_);
      rows_.clear();
      for (auto& run : rest) {
        run.times.finished = Clock::now();
        call(run.request, last_event(run, FinishReason::error, "the engine's slots were reset after a failure"));
      }
    }
  }

  static EngineEvent last_event(const Running& run, FinishReason reason, const std::string& error) {
    EngineEvent e;
    e.finish = reason;
    e.error = error;
    e.prompt_tokens = static_cast<int>(run.request->prompt.size());
    e.completion_tokens = run.generated;
    e.times = run.times;
    return e;
  }

  void finish_waiting(const Waiting& w, FinishReason reason, const std::string& error = {}, SteadyTime admitted = {}) {
    EngineEvent e;
    e.finish = reason;
    e.error = error;
    e.prompt_tokens = static_cast<int>(w.request->prompt.size());
    e.times.enqueued = w.enqueued;
    e.times.admitted = admitted;
    e.times.finished = Clock::now();
    call(w.request, e);
  }

  // Hands `e` to the request's callback. Deferred (LLMBENCH_DEFER_EVENTS, see the constructor): queued until
  // flush_events(), which decode() calls right after launching its step, so that the callbacks (the server
  // posts each one to its connection's strand) run while the GPU computes instead of between two steps; every
  // prefill pass and the loop whenever no row runs (before it may wait) flush too. Same events, same
  // order per request; a token reaches its callback one step launch later (µs), never a step later.
  void call(const std::shared_ptr<EngineRequest>& r, const EngineEvent& e) {
    if (!r->on_event) return;
    if (defer_events_)
      pending_.emplace_back(r, e);
    else
      dispatch(*r, e);
  }

  void flush_events() {
    std::vector<std::pair<std::shared_ptr<EngineRequest>, EngineEvent>> events;
    events.swap(pending_);
    for (const auto& [r, e] : events) dispatch(*r, e);
  }

  // A throwing callback is logged and ignored: it must not take the engine down.
  static void dispatch(const EngineRequest& r, const EngineEvent& e) {
    try {
      r.on_event(e);
    } catch (const std::exception& ex) {
      log::warn(cat("engine: on_event threw: ", first_line(ex.what())));
    } catch (...) {
      log::warn("engine: on_event threw");
    }
  }

  void publish() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.running = static_cast<int>(batch_->size());
  }

  EngineOptions options_;
  std::unique_ptr<Model> model_;
  int max_context_ = 0;
  std::vector<std::int64_t> eos_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::unique_ptr<SlotBatch> batch_;  // engine thread only
  std::vector<Running> rows_;         // engine thread only; rows_[i] holds batch_ row i
  std::uint64_t admissions_ = 0;      // engine thread only
  // Events not yet handed to their callbacks (engine thread only; see call()).
  std::vector<std::pair<std::shared_ptr<EngineRequest>, EngineEvent>> pending_;
  bool defer_events_ = false;  // see call() and the constructor

  mutable std::mutex mu_;             // guards queue_, stopping_, deadline_, stats_
  std::condition_variable cv_;
  std::deque<Waiting> queue_;
  bool stopping_ = false;
  SteadyTime deadline_;               // stop(): running requests are cancelled after this
  EngineStats stats_;

  std::mutex join_mu_;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Engine> Engine::start(const EngineOptions& options) { return std::make_unique<EngineImpl>(options); }

void Engine::follow(const EngineOptions& options) {
  if (!options.group) throw Error("Engine::follow needs a tensor-parallel group");
  std::unique_ptr<Model> model = load_engine_model(options);
  dist::ModelMirror::follow(*model);
}

std::vector<std::int64_t> prefill_gemm_rows(const EngineOptions& o, std::int64_t max_context) {
  if (o.chunked_prefill && env_switch("LLMBENCH_LT_CHUNKED", {"torch", "tuned"}) == 0) return {};
  const std::int64_t most = std::min<std::int64_t>(
      {std::max<std::int64_t>(o.max_prefill_tokens, o.chunked_prefill ? o.max_step_tokens + o.max_batch : 0),
       static_cast<std::int64_t>(o.max_batch) * max_context, kMaxTunedPrefillRows});
  std::vector<std::int64_t> rows;
  for (std::int64_t r = 512; r / 2 < most; r *= 2) rows.push_back(r);  // the buckets above 256 rows
  return rows;
}

}  // namespace llmbench
