#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llmbench/tokenizer/tokenizer.h"

// The serving engine: one thread owns the model and runs iteration-level (continuous) batching over a
// slot KV cache; other threads only submit requests and receive tokens through callbacks. This header is
// torch-free so that the HTTP layer (serve/) compiles without torch headers.
//
//   EngineOptions o; o.model = "tiny"; o.max_batch = 8; o.max_context = 512;
//   auto engine = Engine::start(o);              // loads the model, starts the engine thread
//   auto req = std::make_shared<EngineRequest>(); req->prompt = {...}; req->max_tokens = 16;
//   req->on_event = [](const EngineEvent& e) { /* post to the I/O thread; never block here */ };
//   engine->submit(req);                         // false: queue full (HTTP 503)
//   req->cancelled = true;                       // freed at the next step boundary
//   engine->stop();                              // cancels or finishes running work, joins
namespace llmbench {

namespace dist {
class ProcessGroup;  // llmbench/dist/process_group.h
}

using SteadyTime = std::chrono::steady_clock::time_point;

enum class Batching { continuous, static_batch };

struct EngineOptions {
  std::string model = "tiny";      // preset, directory or org/name (Model::load)
  std::string dtype = "float32";
  std::string device = "cpu";      // cpu | cuda | cuda:N | auto
  std::string attn = "eager";
  std::uint64_t seed = 0;          // random weights
  int max_batch = 32;              // KV-cache slots
  int max_context = 0;             // columns per slot; 0: min(model's max positions, 4096)
  Batching batching = Batching::continuous;
  double max_wait_ms = 5;          // static batching: wait this long for a full batch
  int max_queue = 256;             // waiting requests beyond this are refused
  // Padded tokens (requests × longest prompt) of one batched prefill pass; a longer prompt runs alone.
  int max_prefill_tokens = 8192;
  // Batched prefill passes one step boundary may run back to back before the decode step (each within
  // max_prefill_tokens); 0: as many as there are waiting requests and free slots. 1 (the default): running
  // rows wait for at most one pass between two tokens. More keeps the requests that arrive together (a closed
  // loop's replacements of a finished wave) decoding together, at the cost of that wait.
  int prefill_passes = 1;
  // Continuous batching with chunked prefill: prompts enter in chunks that ride along the decode step
  // (one forward of every running row's next token plus up to max_step_tokens − running rows prompt tokens,
  // but at least min(64, max_step_tokens)), so decoding never stops for a prefill. Off: each step boundary admits one
  // batched prefill pass (max_prefill_tokens) before the decode step.
  bool chunked_prefill = false;
  int max_step_tokens = 2048;
  // sdpa may use cuDNN's kernels (set_sdpa_cudnn, process-wide). Off: a server's shapes keep changing and
  // cuDNN builds a plan (≈ 47 ms) for each new one; torch's flash / efficient kernels build none.
  bool sdpa_cudnn = false;
  bool cuda_graph = true;          // graph per batch-size bucket where CUDA is available
  bool fused = true;
  // Tensor parallelism: this process is rank 0 of `group` and drives the other ranks, which replay the
  // engine's model calls (dist/model_mirror.h). Null: the whole model on one device.
  std::shared_ptr<dist::ProcessGroup> group;
};

// The row counts whose cuBLASLt algorithms an engine times at start (Model::tune_gemms): the buckets 512,
// 1024, … that its batched prefill passes reach (up to 8,192 rows), so that no pass times a new shape
// mid-serve. None with chunked prefill, whose mixed steps then keep torch's GEMM above 256 rows: with the
// buckets timed they served 7–9 % fewer tokens/s (H200, docs/serving.md, session 30);
// LLMBENCH_LT_CHUNKED=tuned times them anyway (an A/B switch). max_context: the engine's cache columns.
std::vector<std::int64_t> prefill_gemm_rows(const EngineOptions& o, std::int64_t max_context);

enum class FinishReason { none, stop, length, cancelled, error };
const char* to_string(FinishReason r);

// Engine-side timestamps of one request (steady clock). Unset stamps are time_point{}.
struct EngineTimes {
  SteadyTime enqueued;       // submit() accepted it
  SteadyTime admitted;       // took a slot (prefill starts)
  SteadyTime first_token;    // prefill + first sample done, token handed to on_event
  SteadyTime finished;       // last token handed to on_event
};

// What the engine hands back, in order, from the engine thread. `tokens` are the new ids of this step
// (one per step for a running request); the last event has finish != none.
struct EngineEvent {
  std::vector<std::int64_t> tokens;
  FinishReason finish = FinishReason::none;
  std::string error;                 // when finish == error
  int prompt_tokens = 0;
  int completion_tokens = 0;         // so far, this event included
  EngineTimes times;                 // complete on the last event
};

struct EngineRequest {
  std::vector<std::int64_t> prompt;  // token ids, 1 ≤ size, size + max_tokens ≤ max_context
  int max_tokens = 16;               // ≥ 1
  double temperature = 0;            // 0: greedy
  double top_p = 1;
  std::uint64_t seed = 0;
  bool ignore_eos = false;
  int min_tokens = 0;                // EOS does not end the request before this many tokens (0: off)
  // Called on the engine thread for every event; must not block (post to an I/O thread).
  std::function<void(const EngineEvent&)> on_event;
  // Set by any thread; the engine frees the slot at the next step boundary and sends a last event
  // with FinishReason::cancelled.
  std::atomic<bool> cancelled{false};
};

// A snapshot for /metrics (read from any thread).
struct EngineStats {
  int running = 0;           // requests holding a slot
  int waiting = 0;           // queued, no slot yet
  int slots_total = 0;
  int last_batch_size = 0;   // rows of the last decode step
  std::uint64_t steps = 0;   // decode steps run
  // Admission: batched prefill passes, the requests and prompt tokens they prefilled, and the tokens they
  // computed (requests × longest prompt of the pass, padding included).
  std::uint64_t prefill_passes = 0;
  std::uint64_t prefill_requests = 0;
  std::uint64_t prefill_tokens = 0;
  std::uint64_t prefill_padded_tokens = 0;
  int last_prefill_batch = 0;  // requests of the last prefill pass
  int tp = 1;                  // tensor-parallel ranks the model is split over
  std::string tp_backend;      // "gloo" | "nccl" with tp > 1
  // Chunked prefill: a pass is a step that carries prompt chunks (mixed with the decode rows); its
  // requests are the prompts it completed and its tokens the chunks' (no padding).
  std::uint64_t prefill_chunks = 0;  // chunks fed
  // Engine-thread wall time: busy (not waiting for work), in decode steps (the model call and sampling, up
  // to the tokens on the host) and in prefill passes (likewise). busy − step − prefill is the host's own
  // share (handing out tokens, admission, freeing rows), during which the device idles.
  double busy_seconds = 0;
  double step_seconds = 0;
  double prefill_seconds = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Loads the model (Model::load) and starts the engine thread. Throws Error/UsageError.
  static std::unique_ptr<Engine> start(const EngineOptions& options);
  // Tensor-parallel ranks 1 … N−1 of options.group (the same options as rank 0's start()): loads this
  // rank's shards the way start() does, then replays rank 0's model calls until rank 0 stops the engine.
  // Throws Error when a call fails here or rank 0 is gone (dist/model_mirror.h).
  static void follow(const EngineOptions& options);

  // Thread-safe. False when the queue already holds max_queue requests (nothing is called back then).
  // Throws UsageError for a request that can never run (empty prompt, id out of the vocabulary,
  // max_tokens < 1, prompt + max_tokens > max_context).
  virtual bool submit(std::shared_ptr<EngineRequest> request) = 0;
  virtual EngineStats stats() const = 0;
  // Model facts the HTTP layer needs.
  virtual int max_context() const = 0;
  virtual std::int64_t vocab_size() const = 0;
  virtual std::vector<std::int64_t> eos_ids() const = 0;
  virtual std::string model_name() const = 0;       // as given in EngineOptions::model
  // The model's own tokenizer (checkpoint files, or the tiny preset's); null for random weights of a
  // preset without a checkpoint. Safe to use from any thread.
  virtual std::shared_ptr<const Tokenizer> tokenizer() const = 0;
  // Why the engine can no longer run any request (a tensor-parallel rank failed); nullopt while it can.
  // The server then exits with this error.
  virtual std::optional<std::string> failure() const { return std::nullopt; }
  // Stops accepting, cancels what is queued, lets running requests finish for up to `grace_ms`, then
  // cancels them; joins the engine thread. Idempotent.
  virtual void stop(double grace_ms = 2000) = 0;
};

}  // namespace llmbench
