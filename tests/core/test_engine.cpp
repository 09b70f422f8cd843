// The serving engine on the CPU with the tiny model: continuous batching gives each request the tokens it
// would get alone (Model::generate), slots are recycled, the queue is bounded, static batching waits,
// EOS / cancellation / validation / stop behave as engine.h says.
#include <gtest/gtest.h>

#include "remove_tree.h"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#include "llmbench/engine/engine.h"
#include "llmbench/engine/slot_batch.h"
#include "llmbench/model/model.h"

namespace llmbench {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::duration<double, std::milli>;

constexpr auto kWait = 60s;  // generous: the CPU box is shared

// Everything one request received, checked for the event contract as it arrives.
struct Trace {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::int64_t> tokens;
  std::vector<EngineEvent> events;
  bool done = false;
  std::string violation;  // first broken rule of the event contract

  void on_event(const EngineEvent& e) {
    std::lock_guard<std::mutex> lock(mu);
    if (done) violation = "an event after the last one";
    if (e.finish == FinishReason::none && e.tokens.size() != 1) violation = "a running event without exactly one token";
    tokens.insert(tokens.end(), e.tokens.begin(), e.tokens.end());
    if (e.completion_tokens != static_cast<int>(tokens.size())) violation = "completion_tokens disagrees with the tokens";
    events.push_back(e);
    done = e.finish != FinishReason::none;
    cv.notify_all();
  }
  bool wait_done() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kWait, [&] { return done; });
  }
  bool wait_tokens(std::size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kWait, [&] { return tokens.size() >= n || done; });
  }
  bool is_done() {
    std::lock_guard<std::mutex> lock(mu);
    return done;
  }
  EngineEvent last() {
    std::lock_guard<std::mutex> lock(mu);
    return events.back();
  }
};

std::shared_ptr<EngineRequest> make_request(std::vector<std::int64_t> prompt, int max_tokens,
                                            const std::shared_ptr<Trace>& trace, bool ignore_eos = true) {
  auto r = std::make_shared<EngineRequest>();
  r->prompt = std::move(prompt);
  r->max_tokens = max_tokens;
  r->ignore_eos = ignore_eos;
  r->on_event = [trace](const EngineEvent& e) { trace->on_event(e); };
  return r;
}

EngineOptions tiny_options(int max_batch, int max_context = 128) {
  EngineOptions o;
  o.model = "tiny";
  o.max_batch = max_batch;
  o.max_context = max_context;
  return o;
}

std::vector<std::int64_t> random_prompt(std::mt19937& rng, int len) {
  std::uniform_int_distribution<std::int64_t> id(3, 500);
  std::vector<std::int64_t> p(len);
  for (auto& x : p) x = id(rng);
  return p;
}

// The tokens Model::generate gives for this prompt alone.
std::vector<std::int64_t> alone(Model& m, const EngineRequest& r) {
  GenerateOptions g;
  g.max_new_tokens = r.max_tokens;
  g.ignore_eos = r.ignore_eos;
  g.sampling.temperature = r.temperature;
  g.sampling.top_p = r.top_p;
  g.sampling.seed = r.seed;
  return m.generate({r.prompt}, g).tokens[0];
}

void expect_times_ordered(const EngineTimes& t) {
  EXPECT_LE(t.enqueued, t.admitted);
  EXPECT_LE(t.admitted, t.first_token);
  EXPECT_LE(t.first_token, t.finished);
  EXPECT_NE(t.finished, SteadyTime{});
}

// An engine whose thread is held inside the first event of a first request (prompt {5, 6, 7}, 30 tokens)
// until release(): what is submitted meanwhile queues, so the next step boundary sees all of it. The
// destructor releases the thread before stopping the engine (a failed assertion must not hang the test).
class HeldEngine {
 public:
  explicit HeldEngine(const EngineOptions& o) : engine_(Engine::start(o)) {
    request->on_event = [this](const EngineEvent& e) {
      std::unique_lock<std::mutex> lock(mu_);
      held_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });  // the engine thread waits here on the first event only
      lock.unlock();
      trace->on_event(e);
    };
  }
  ~HeldEngine() {
    release();
    engine_.reset();
  }
  // Submits the request and waits until the engine thread is held in its callback.
  bool hold() {
    if (!engine_->submit(request)) return false;
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return held_; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  Engine& engine() { return *engine_; }

 private:
  std::mutex mu_;  // before the engine: its thread uses them until the engine is gone
  std::condition_variable cv_;
  bool held_ = false, open_ = false;

 public:
  const std::shared_ptr<Trace> trace = std::make_shared<Trace>();
  const std::shared_ptr<EngineRequest> request = make_request({5, 6, 7}, 30, trace);

 private:
  std::unique_ptr<Engine> engine_;
};

TEST(EngineSlots, BucketsCoverEverySize) {
  EXPECT_EQ(SlotBatch::row_buckets(1), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(SlotBatch::row_buckets(12), (std::vector<std::int64_t>{1, 2, 4, 8, 12}));
  EXPECT_EQ(SlotBatch::row_buckets(32), (std::vector<std::int64_t>{1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(SlotBatch::column_buckets(100), (std::vector<std::int64_t>{100}));
  EXPECT_EQ(SlotBatch::column_buckets(4096), (std::vector<std::int64_t>{256, 512, 1024, 2048, 4096}));
  EXPECT_EQ(SlotBatch::column_buckets(600), (std::vector<std::int64_t>{256, 512, 600}));
}

// The engine's batched sampler against Sampler row by row: same seeds, same ids (greedy rows are not
// its business; temperatures and top_p differ per row, one row keeps top_p = 1).
TEST(EngineSlots, SampleRowsMatchesSamplerRowByRow) {
  torch::manual_seed(3);
  const std::vector<double> temperature{0.7, 1.0, 1.3, 0.2}, top_p{0.9, 1.0, 0.5, 0.95};
  std::vector<at::Generator> generators;
  std::vector<Sampler> samplers;
  for (std::size_t i = 0; i < temperature.size(); ++i) {
    generators.push_back(make_generator(torch::kCPU, 40 + i));
    samplers.emplace_back(SamplingParams{temperature[i], 0, top_p[i], 40 + i}, torch::kCPU);
  }
  for (int draw = 0; draw < 20; ++draw) {
    torch::Tensor logits = torch::randn({4, 512}) * 3;  // [4, V]
    torch::Tensor got = sample_rows(logits, temperature, top_p, generators);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(got[i].item<std::int64_t>(), samplers[i].sample(logits.narrow(0, i, 1))[0].item<std::int64_t>())
          << "draw " << draw << " row " << i;
  }
}

// The model core's slot API against plain decode: three requests of different lengths in rows of one
// cache, one leaving (compaction) and a new one taking the freed row; every row's logits equal the
// logits of that prompt decoded alone.
TEST(EngineSlots, SlotDecodeMatchesEachPromptAlone) {
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  auto ref = Model::load({"tiny", "float32", "cpu", "eager", 0});
  std::mt19937 rng(7);
  std::vector<std::vector<std::int64_t>> prompts{random_prompt(rng, 5), random_prompt(rng, 17), random_prompt(rng, 2),
                                                 random_prompt(rng, 9)};
  // Reference: each prompt alone, greedy, logits per step.
  auto alone_logits = [&](const std::vector<std::int64_t>& p, int steps) {
    ref->allocate_cache(1, 64);
    ref->reset_cache();
    std::vector<torch::Tensor> out{ref->prefill(torch::tensor(p).view({1, -1}))[0]};
    for (int i = 1; i < steps; ++i) out.push_back(ref->decode_step(out.back().argmax(-1).view({1}))[0]);
    return out;
  };
  SlotBatch batch(*m, 4, 300, false);
  std::vector<std::vector<torch::Tensor>> got(4);
  std::vector<int> row_of{0, 1, 2, -1};  // prompt → row
  for (int i = 0; i < 3; ++i) got[i].push_back(batch.add(prompts[i]));
  auto tokens_of_rows = [&] {
    std::vector<std::int64_t> t(batch.size());
    for (int p = 0; p < 4; ++p)
      if (row_of[p] >= 0) t[row_of[p]] = got[p].back().argmax(-1).item<std::int64_t>();
    return t;
  };
  auto step = [&] {
    torch::Tensor l = batch.step(tokens_of_rows());
    for (int p = 0; p < 4; ++p)
      if (row_of[p] >= 0) got[p].push_back(l[row_of[p]].clone());
  };
  for (int s = 0; s < 3; ++s) step();
  EXPECT_EQ(batch.remove(0), 2);  // prompt 0 leaves: row 2 (prompt 2) moves into row 0
  row_of = {-1, 1, 0, -1};
  for (int s = 0; s < 2; ++s) step();
  got[3].push_back(batch.add(prompts[3]));  // takes row 2
  row_of[3] = 2;
  for (int s = 0; s < 4; ++s) step();
  for (int p = 0; p < 4; ++p) {
    SCOPED_TRACE(p);
    auto want = alone_logits(prompts[p], static_cast<int>(got[p].size()));
    ASSERT_EQ(got[p].size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[p][i], want[i], 1e-4, 1e-5)) << "step " << i;
      EXPECT_EQ(got[p][i].argmax().item<std::int64_t>(), want[i].argmax().item<std::int64_t>()) << "step " << i;
    }
  }
}

// Batched prefill (right-padded, Model::prefill_slots) against each prompt alone: three prompts of
// different lengths prefilled in one pass next to a row that is already decoding, then decode steps; every
// row's logits equal those of its prompt prefilled and decoded alone.
TEST(EngineSlots, BatchedPrefillMatchesEachPromptAlone) {
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  auto ref = Model::load({"tiny", "float32", "cpu", "eager", 0});
  std::mt19937 rng(5);
  std::vector<std::vector<std::int64_t>> prompts{random_prompt(rng, 9), random_prompt(rng, 4), random_prompt(rng, 23),
                                                 random_prompt(rng, 1)};
  SlotBatch batch(*m, 5, 300, false);
  std::vector<std::vector<torch::Tensor>> got(4);
  got[0].push_back(batch.add(prompts[0]));
  std::vector<std::int64_t> tokens{got[0].back().argmax(-1).item<std::int64_t>()};
  got[0].push_back(batch.step(tokens)[0].clone());  // row 0 is one step ahead of the others
  torch::Tensor first = batch.add(std::vector<std::vector<std::int64_t>>(prompts.begin() + 1, prompts.end()));  // [3, V]
  ASSERT_EQ(first.size(0), 3);
  EXPECT_EQ(batch.size(), 4);
  for (int p = 1; p < 4; ++p) {
    got[p].push_back(first[p - 1].clone());
    EXPECT_EQ(batch.length(p), static_cast<std::int64_t>(prompts[p].size()));  // no padding columns kept
  }
  for (int s = 0; s < 4; ++s) {
    std::vector<std::int64_t> t;
    for (int p = 0; p < 4; ++p) t.push_back(got[p].back().argmax(-1).item<std::int64_t>());
    torch::Tensor l = batch.step(t);
    for (int p = 0; p < 4; ++p) got[p].push_back(l[p].clone());
  }
  for (int p = 0; p < 4; ++p) {
    SCOPED_TRACE(p);
    ref->allocate_cache(1, 64);
    ref->reset_cache();
    std::vector<torch::Tensor> want{ref->prefill(torch::tensor(prompts[p]).view({1, -1}))[0]};
    while (want.size() < got[p].size()) want.push_back(ref->decode_step(want.back().argmax(-1).view({1}))[0]);
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[p][i], want[i], 1e-4, 1e-5)) << "step " << i;
      EXPECT_EQ(got[p][i].argmax().item<std::int64_t>(), want[i].argmax().item<std::int64_t>()) << "step " << i;
    }
  }
}

// An environment variable for one scope (the A/B switches are read at every call).
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  const char* name_;
};

// Chunked prefill (SlotBatch::reserve + mixed): prompts fed in chunks inside decode steps, next to rows
// that decode, through a plain decode step while a prompt is half in, and a compaction that moves a
// half-prefilled row; every row's logits equal those of its prompt prefilled and decoded alone. The tiny
// preset, and a Qwen2 fixture whose qkv bias goes through the mixed step's RoPE split.
class ChunkedPrefill : public ::testing::TestWithParam<std::string> {};

// "<model>" runs the direct mixed step (k / v written into the cache by RoPE), "<model>:copies" the one
// before it (LLMBENCH_MIXED_DIRECT=0).
TEST_P(ChunkedPrefill, MatchesEachPromptAlone) {
  std::string name = GetParam();
  const bool copies = name.size() > 7 && name.substr(name.size() - 7) == ":copies";
  if (copies) name.resize(name.size() - 7);
  ScopedEnv env("LLMBENCH_MIXED_DIRECT", copies ? "0" : "1");
  const std::string model = name == "tiny" ? "tiny" : std::string(LLMBENCH_TEST_DATA) + "/models/" + name;
  auto m = Model::load({model, "float32", "cpu", "eager", 0});
  auto ref = Model::load({model, "float32", "cpu", "eager", 0});
  std::mt19937 rng(9);
  std::vector<std::vector<std::int64_t>> prompts{random_prompt(rng, 6), random_prompt(rng, 23), random_prompt(rng, 5),
                                                 random_prompt(rng, 11)};
  for (auto& p : prompts)
    for (auto& id : p) id %= m->config().vocab_size;
  SlotBatch batch(*m, 4, 300, false);
  std::vector<std::vector<torch::Tensor>> got(4);
  std::vector<int> row_of{0, -1, -1, -1};  // prompt → row
  got[0].push_back(batch.add(prompts[0]));
  auto chunk = [&](int p, std::size_t from, std::size_t n) {
    const bool last = from + n == prompts[p].size();
    return SlotBatch::Chunk{row_of[p], std::vector<std::int64_t>(prompts[p].begin() + from, prompts[p].begin() + from + n), last};
  };
  // Inputs of the active rows (0 for the rows still prefilling); after the step, the logits of every row
  // that got a token: the active ones and those whose last chunk ran.
  auto run = [&](const std::vector<SlotBatch::Chunk>& chunks) {
    std::vector<std::int64_t> t(batch.size(), 0);
    std::vector<bool> emits(batch.size(), false);
    for (int p = 0; p < 4; ++p)
      if (row_of[p] >= 0 && batch.active(row_of[p])) {
        t[row_of[p]] = got[p].back().argmax(-1).item<std::int64_t>();
        emits[row_of[p]] = true;
      }
    for (const auto& c : chunks) emits[c.row] = c.last;
    torch::Tensor l = chunks.empty() ? batch.step(t) : batch.mixed(t, chunks);
    ASSERT_EQ(l.size(0), batch.size());
    for (int p = 0; p < 4; ++p)
      if (row_of[p] >= 0 && emits[row_of[p]]) got[p].push_back(l[row_of[p]].clone());
  };
  row_of[1] = static_cast<int>(batch.reserve());  // row 1: 23 tokens in chunks of 7, 9, 7
  EXPECT_FALSE(batch.active(1));
  run({chunk(1, 0, 7)});
  EXPECT_EQ(batch.length(1), 7);
  EXPECT_EQ(batch.length(0), 7);  // prompt 6 + one decode input
  run({});                         // a plain decode step: row 1 stays put
  EXPECT_EQ(batch.length(1), 7);
  row_of[2] = static_cast<int>(batch.reserve());  // row 2: all 5 tokens in one chunk, next to row 1's second
  run({chunk(1, 7, 9), chunk(2, 0, 5)});
  EXPECT_TRUE(batch.active(2));
  EXPECT_FALSE(batch.active(1));
  row_of[3] = static_cast<int>(batch.reserve());  // row 3: 11 tokens in chunks of 4, 7
  run({chunk(3, 0, 4)});
  EXPECT_EQ(batch.remove(0), 3);  // prompt 0 leaves: half-prefilled row 3 moves into row 0
  row_of = {-1, 1, 2, 0};
  EXPECT_FALSE(batch.active(0));
  EXPECT_EQ(batch.length(0), 4);
  run({chunk(1, 16, 7), chunk(3, 4, 7)});
  EXPECT_TRUE(batch.active(0));
  EXPECT_TRUE(batch.active(1));
  for (int s = 0; s < 3; ++s) run({});
  for (int p = 0; p < 4; ++p) {
    SCOPED_TRACE(p);
    ASSERT_GE(got[p].size(), 2u);
    ref->allocate_cache(1, 64);
    ref->reset_cache();
    std::vector<torch::Tensor> want{ref->prefill(torch::tensor(prompts[p]).view({1, -1}))[0]};
    while (want.size() < got[p].size()) want.push_back(ref->decode_step(want.back().argmax(-1).view({1}))[0]);
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[p][i], want[i], 1e-4, 1e-5)) << "step " << i;
      EXPECT_EQ(got[p][i].argmax().item<std::int64_t>(), want[i].argmax().item<std::int64_t>()) << "step " << i;
    }
  }
  EXPECT_THROW(batch.mixed(std::vector<std::int64_t>(batch.size(), 0), {{1, {5}, true}}), Error);  // row 1 decodes
}

INSTANTIATE_TEST_SUITE_P(Models, ChunkedPrefill,
                         ::testing::Values("tiny", "qwen2_bias", "tiny:copies", "qwen2_bias:copies"));

// The cuBLASLt row buckets an engine times at start (prefill_gemm_rows): those its batched prefill passes
// reach (bounded by max_prefill_tokens, the cache and 8,192 rows); none with chunked prefill, unless
// LLMBENCH_LT_CHUNKED=tuned (then up to the step's tokens and rows); a bad value is a usage error.
TEST(Engine, PrefillGemmRowsLeaveChunkedStepsToTorchsGemm) {
  using Rows = std::vector<std::int64_t>;
  EngineOptions o;  // max_batch 32, max_prefill_tokens 8192
  EXPECT_EQ(prefill_gemm_rows(o, 4096), (Rows{512, 1024, 2048, 4096, 8192}));
  o.max_prefill_tokens = 1000;
  EXPECT_EQ(prefill_gemm_rows(o, 4096), (Rows{512, 1024}));
  EXPECT_EQ(prefill_gemm_rows(o, 8), (Rows{}));  // 32 slots × 8 columns: no pass over 256 rows
  o.chunked_prefill = true;                       // max_step_tokens 2048
  EXPECT_EQ(prefill_gemm_rows(o, 4096), (Rows{}));
  {
    ScopedEnv env("LLMBENCH_LT_CHUNKED", "tuned");
    EXPECT_EQ(prefill_gemm_rows(o, 4096), (Rows{512, 1024, 2048, 4096}));  // 2048 + 32 rows reach bucket 4096
  }
  ScopedEnv bad("LLMBENCH_LT_CHUNKED", "lt");
  EXPECT_THROW(prefill_gemm_rows(o, 4096), UsageError);
}

// Requests that wait at the same step boundary are prefilled together: one pass per boundary, the oldest
// first, as many as fit in the free slots and in max_prefill_tokens (requests × longest prompt); a prompt
// at the budget fills a pass, one over it runs alone. Each request gets the tokens it gets alone. The
// engine thread is held in the first request's callback while the others queue, so the passes are known.
TEST(Engine, WaitingRequestsArePrefilledTogetherWithinTheTokenBudget) {
  EngineOptions o = tiny_options(8);
  o.max_prefill_tokens = 64;
  HeldEngine held(o);
  ASSERT_TRUE(held.hold());
  Engine* engine = &held.engine();
  const std::shared_ptr<EngineRequest> hold = held.request;
  const std::shared_ptr<Trace> hold_trace = held.trace;
  // Passes expected with a budget of 64: {64}, {10, 30} (3 × 30 > 64), {5, 12, 16, 16} (4 × 16 = 64; and
  // only 4 slots are free), {100} alone once a slot frees.
  const std::vector<int> lengths{64, 10, 30, 5, 12, 16, 16, 100};
  std::mt19937 rng(17);
  std::vector<std::shared_ptr<EngineRequest>> reqs;
  std::vector<std::shared_ptr<Trace>> traces;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    traces.push_back(std::make_shared<Trace>());
    auto r = make_request(random_prompt(rng, lengths[i]), lengths[i] == 100 ? 20 : 6 + static_cast<int>(i),
                          traces.back(), /*ignore_eos=*/i % 2 == 0);
    if (i == 2 || i == 5) {
      r->temperature = 0.8;
      r->top_p = 0.9;
      r->seed = 40 + i;
    }
    reqs.push_back(r);
    ASSERT_TRUE(engine->submit(r));
  }
  held.release();
  for (auto& t : traces) ASSERT_TRUE(t->wait_done());
  ASSERT_TRUE(hold_trace->wait_done());

  const EngineStats s = engine->stats();
  EXPECT_EQ(s.prefill_passes, 5u);  // the held request's, then the four above
  EXPECT_EQ(s.prefill_requests, 9u);
  EXPECT_EQ(s.prefill_tokens, 3u + 64 + 10 + 30 + 5 + 12 + 16 + 16 + 100);
  EXPECT_EQ(s.prefill_padded_tokens, 3u + 64 + 2 * 30 + 4 * 16 + 100);
  EXPECT_EQ(s.last_prefill_batch, 1);
  auto admitted = [&](int i) { return traces[i]->last().times.admitted; };
  EXPECT_EQ(admitted(1), admitted(2));
  EXPECT_EQ(admitted(3), admitted(6));
  EXPECT_LT(admitted(0), admitted(1));
  EXPECT_LT(admitted(2), admitted(3));
  EXPECT_LT(admitted(6), admitted(7));

  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(traces[i]->violation, "");
    EXPECT_EQ(traces[i]->tokens, alone(*m, *reqs[i]));
    expect_times_ordered(traces[i]->last().times);
  }
  EXPECT_EQ(hold_trace->tokens, alone(*m, *hold));
}

// prefill_passes: how many batched passes one step boundary runs before its decode step. The engine thread
// is held in a first request's callback while seven more queue; passes of a budget of 64 are {64}, {10, 30},
// {5, 12, 16, 16}. Each request records how many decode steps had run when its first token came: with one
// pass per boundary a decode step separates the passes (1, 2, 3), with 2 the second pass follows the first
// at once, with 0 (no limit) all three run before any decode step. The tokens are each request's own.
class PrefillPasses : public ::testing::TestWithParam<int> {};

TEST_P(PrefillPasses, BoundTheBatchedPassesBetweenTwoDecodeSteps) {
  EngineOptions o = tiny_options(8);
  o.max_prefill_tokens = 64;
  o.prefill_passes = GetParam();
  HeldEngine held(o);
  ASSERT_TRUE(held.hold());
  Engine* engine = &held.engine();
  const std::shared_ptr<EngineRequest> hold = held.request;
  const std::shared_ptr<Trace> hold_trace = held.trace;
  const std::vector<int> lengths{64, 10, 30, 5, 12, 16, 16};
  std::mt19937 rng(23);
  std::vector<std::shared_ptr<EngineRequest>> reqs;
  std::vector<std::shared_ptr<Trace>> traces;
  std::vector<std::uint64_t> steps_at_first(lengths.size(), 99);  // written on the engine thread
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    traces.push_back(std::make_shared<Trace>());
    auto r = make_request(random_prompt(rng, lengths[i]), 5, traces.back());
    r->on_event = [&, i, t = traces.back()](const EngineEvent& e) {
      if (e.completion_tokens == 1) steps_at_first[i] = engine->stats().steps;
      t->on_event(e);
    };
    reqs.push_back(r);
    ASSERT_TRUE(engine->submit(r));
  }
  held.release();
  for (auto& t : traces) ASSERT_TRUE(t->wait_done());
  ASSERT_TRUE(hold_trace->wait_done());
  const std::vector<std::uint64_t> want = GetParam() == 1   ? std::vector<std::uint64_t>{1, 2, 2, 3, 3, 3, 3}
                                          : GetParam() == 2 ? std::vector<std::uint64_t>{0, 1, 1, 1, 1, 1, 1}
                                                            : std::vector<std::uint64_t>{0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(steps_at_first, want);
  engine->stop();  // the thread's last iteration has added its busy time
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.prefill_passes, 4u);
  EXPECT_GT(s.busy_seconds, 0.0);
  EXPECT_GT(s.step_seconds, 0.0);
  EXPECT_GT(s.prefill_seconds, 0.0);
  EXPECT_LE(s.step_seconds + s.prefill_seconds, s.busy_seconds);
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(traces[i]->violation, "");
    EXPECT_EQ(traces[i]->tokens, alone(*m, *reqs[i]));
  }
  EXPECT_EQ(hold_trace->tokens, alone(*m, *hold));
}

INSTANTIATE_TEST_SUITE_P(Engine, PrefillPasses, ::testing::Values(1, 2, 0));

TEST(Engine, RefusesANegativePrefillPassCount) {
  EngineOptions o = tiny_options(2);
  o.prefill_passes = -1;
  EXPECT_THROW(Engine::start(o), UsageError);
}

// 32 requests of random prompts (1–39 tokens) and lengths (2–19 new tokens), every other one ignoring EOS,
// those with i % 4 == sampled sampling (temperature 0.9, top-p 0.9, seed seed_base + i), submitted from four
// threads with random delays of up to 3 ms; returns once every one has finished.
std::pair<std::vector<std::shared_ptr<EngineRequest>>, std::vector<std::shared_ptr<Trace>>> submit_concurrently(
    Engine& engine, unsigned seed, int sampled, std::uint64_t seed_base) {
  std::mt19937 rng(seed);
  std::vector<std::shared_ptr<EngineRequest>> reqs;
  std::vector<std::shared_ptr<Trace>> traces;
  for (int i = 0; i < 32; ++i) {
    traces.push_back(std::make_shared<Trace>());
    auto r = make_request(random_prompt(rng, 1 + static_cast<int>(rng() % 40)), 2 + static_cast<int>(rng() % 18),
                          traces.back(), /*ignore_eos=*/i % 2 == 0);
    if (i % 4 == sampled) {
      r->temperature = 0.9;
      r->top_p = 0.9;
      r->seed = seed_base + i;
    }
    reqs.push_back(r);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 delay(t);
      for (int i = t; i < 32; i += 4) {
        std::this_thread::sleep_for(std::chrono::microseconds(delay() % 3000));
        EXPECT_TRUE(engine.submit(reqs[i]));
      }
    });
  for (auto& th : threads) th.join();
  for (auto& t : traces) EXPECT_TRUE(t->wait_done());
  return {reqs, traces};
}

// 32 requests of different lengths, greedy and sampled, submitted from four threads with staggering into
// 8 slots: each gets exactly what Model::generate gives for its prompt alone.
TEST(Engine, ContinuousBatchingGivesEachRequestItsTokensAlone) {
  EngineOptions o = tiny_options(8);
  auto engine = Engine::start(o);
  EXPECT_EQ(engine->max_context(), 128);
  EXPECT_EQ(engine->vocab_size(), 512);
  EXPECT_EQ(engine->eos_ids(), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(engine->model_name(), "tiny");
  EXPECT_EQ(engine->stats().slots_total, 8);
  ASSERT_NE(engine->tokenizer(), nullptr);

  const auto [reqs, traces] = submit_concurrently(*engine, 11, /*sampled=*/3, /*seed_base=*/100);

  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  for (int i = 0; i < 32; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(traces[i]->violation, "");
    EXPECT_EQ(traces[i]->tokens, alone(*m, *reqs[i]));
    const EngineEvent last = traces[i]->last();
    const bool eos = traces[i]->tokens.back() == 2 && !reqs[i]->ignore_eos;
    EXPECT_EQ(last.finish, eos ? FinishReason::stop : FinishReason::length);
    EXPECT_EQ(last.prompt_tokens, static_cast<int>(reqs[i]->prompt.size()));
    expect_times_ordered(last.times);
  }
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.slots_total, 8);
  EXPECT_GT(s.steps, 0u);
  engine->stop();
}

// Chunked prefill with a schedule known in advance: the engine thread is held in the first request's
// callback while three prompts queue; with 16 tokens per step they are admitted and fed oldest first
// (15 + 5 / 5 / 5 + 5 tokens per step next to the decoding rows) and each gets its tokens alone.
TEST(Engine, ChunkedPrefillFeedsTheOldestPromptsWithinTheStepBudget) {
  EngineOptions o = tiny_options(8);
  o.chunked_prefill = true;
  o.max_step_tokens = 16;
  HeldEngine held(o);
  ASSERT_TRUE(held.hold());
  Engine* engine = &held.engine();
  const std::shared_ptr<EngineRequest> hold = held.request;
  const std::shared_ptr<Trace> hold_trace = held.trace;
  std::mt19937 rng(23);
  std::vector<std::shared_ptr<EngineRequest>> reqs;
  std::vector<std::shared_ptr<Trace>> traces;
  for (int len : {20, 5, 10}) {
    traces.push_back(std::make_shared<Trace>());
    reqs.push_back(make_request(random_prompt(rng, len), 8, traces.back()));
    if (len == 5) {
      reqs.back()->temperature = 0.8;
      reqs.back()->seed = 3;
    }
    ASSERT_TRUE(engine->submit(reqs.back()));
  }
  held.release();
  for (auto& t : traces) ASSERT_TRUE(t->wait_done());
  ASSERT_TRUE(hold_trace->wait_done());
  // Steps with chunks: {hold 3}, {A 15}, {A 5, B 5, C 5}, {C 5}.
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.prefill_passes, 4u);
  EXPECT_EQ(s.prefill_chunks, 6u);
  EXPECT_EQ(s.prefill_requests, 4u);
  EXPECT_EQ(s.prefill_tokens, 38u);
  EXPECT_EQ(s.prefill_padded_tokens, 38u);
  EXPECT_EQ(s.last_prefill_batch, 1);
  auto times = [&](int i) { return traces[i]->last().times; };
  EXPECT_LT(times(0).admitted, times(1).admitted);  // A alone, then B and C one step later
  EXPECT_LT(times(0).first_token, times(2).first_token);  // A and B complete a step before C
  EXPECT_LT(times(1).first_token, times(2).first_token);
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(traces[i]->violation, "");
    EXPECT_EQ(traces[i]->tokens, alone(*m, *reqs[i]));
    expect_times_ordered(traces[i]->last().times);
  }
  EXPECT_EQ(hold_trace->tokens, alone(*m, *hold));
}

// The 32-request mix of the continuous test with chunked prefill and a step budget small enough that most
// prompts arrive in several chunks while other rows decode.
TEST(Engine, ChunkedPrefillGivesEachRequestItsTokensAlone) {
  EngineOptions o = tiny_options(8);
  o.chunked_prefill = true;
  o.max_step_tokens = 12;
  auto engine = Engine::start(o);
  const auto [reqs, traces] = submit_concurrently(*engine, 31, /*sampled=*/1, /*seed_base=*/200);
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  std::uint64_t prompt_tokens = 0;
  for (int i = 0; i < 32; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(traces[i]->violation, "");
    EXPECT_EQ(traces[i]->tokens, alone(*m, *reqs[i]));
    expect_times_ordered(traces[i]->last().times);
    prompt_tokens += reqs[i]->prompt.size();
  }
  const EngineStats s = engine->stats();
  EXPECT_EQ(s.prefill_requests, 32u);
  EXPECT_EQ(s.prefill_tokens, prompt_tokens);
  EXPECT_GT(s.prefill_chunks, 32u);  // some prompts took several chunks
  EXPECT_EQ(s.running, 0);
  engine->stop();
}

TEST(Engine, ChunkedPrefillNeedsContinuousBatching) {
  EngineOptions o = tiny_options(2);
  o.chunked_prefill = true;
  o.batching = Batching::static_batch;
  EXPECT_THROW(Engine::start(o), UsageError);
}

TEST(Engine, ShortRequestIsNotHeldByALongerOne) {
  auto engine = Engine::start(tiny_options(4));
  auto long_trace = std::make_shared<Trace>(), short_trace = std::make_shared<Trace>();
  auto long_req = make_request({5, 6, 7, 8}, 120, long_trace);
  ASSERT_TRUE(engine->submit(long_req));
  ASSERT_TRUE(long_trace->wait_tokens(2));
  ASSERT_TRUE(engine->submit(make_request({9, 10}, 3, short_trace)));
  ASSERT_TRUE(short_trace->wait_done());
  {
    std::lock_guard<std::mutex> lock(long_trace->mu);
    EXPECT_FALSE(long_trace->done) << "the short request waited for the long one";
    EXPECT_LT(long_trace->tokens.size(), 120u);
  }
  EXPECT_EQ(short_trace->last().finish, FinishReason::length);
  EXPECT_EQ(short_trace->tokens.size(), 3u);
  ASSERT_TRUE(long_trace->wait_done());
  EXPECT_LT(short_trace->last().times.finished, long_trace->last().times.finished);
  EXPECT_EQ(long_trace->tokens.size(), 120u);
}

TEST(Engine, CancellationFreesTheSlotForTheNextRequest) {
  auto engine = Engine::start(tiny_options(1));
  auto a_trace = std::make_shared<Trace>(), b_trace = std::make_shared<Trace>();
  auto a = make_request({5, 6, 7}, 120, a_trace);
  auto b = make_request({8, 9}, 4, b_trace);
  ASSERT_TRUE(engine->submit(a));
  ASSERT_TRUE(a_trace->wait_tokens(1));
  ASSERT_TRUE(engine->submit(b));
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(b_trace->is_done());  // one slot, held by a
  EXPECT_EQ(engine->stats().waiting, 1);
  a->cancelled = true;
  ASSERT_TRUE(a_trace->wait_done());
  ASSERT_TRUE(b_trace->wait_done());
  const EngineEvent a_last = a_trace->last(), b_last = b_trace->last();
  EXPECT_EQ(a_last.finish, FinishReason::cancelled);
  EXPECT_TRUE(a_last.tokens.empty());
  EXPECT_LT(a_last.completion_tokens, 120);
  EXPECT_EQ(b_last.finish, FinishReason::length);
  EXPECT_EQ(b_trace->tokens.size(), 4u);
  EXPECT_GE(b_last.times.admitted, a_last.times.finished);
  EXPECT_EQ(a_trace->violation, "");
  EXPECT_EQ(b_trace->violation, "");
}

TEST(Engine, CancelledWhileQueuedNeverRuns) {
  auto engine = Engine::start(tiny_options(1));
  auto a_trace = std::make_shared<Trace>(), b_trace = std::make_shared<Trace>();
  auto a = make_request({5, 6, 7}, 60, a_trace);
  auto b = make_request({8, 9}, 4, b_trace);
  ASSERT_TRUE(engine->submit(a));
  ASSERT_TRUE(a_trace->wait_tokens(1));
  ASSERT_TRUE(engine->submit(b));
  b->cancelled = true;
  ASSERT_TRUE(b_trace->wait_done());
  EXPECT_EQ(b_trace->last().finish, FinishReason::cancelled);
  EXPECT_TRUE(b_trace->tokens.empty());
  EXPECT_EQ(b_trace->last().times.admitted, SteadyTime{});
  ASSERT_TRUE(a_trace->wait_done());
  EXPECT_EQ(a_trace->tokens.size(), 60u);
}

TEST(Engine, FullQueueRefuses) {
  EngineOptions o = tiny_options(1);
  o.max_queue = 2;
  auto engine = Engine::start(o);
  auto a_trace = std::make_shared<Trace>();
  auto a = make_request({5, 6, 7}, 120, a_trace);
  ASSERT_TRUE(engine->submit(a));
  ASSERT_TRUE(a_trace->wait_tokens(1));  // a holds the only slot; the queue is empty
  auto t = std::make_shared<Trace>();
  EXPECT_TRUE(engine->submit(make_request({1}, 1, t)));
  EXPECT_TRUE(engine->submit(make_request({1}, 1, t)));
  auto refused = std::make_shared<Trace>();
  EXPECT_FALSE(engine->submit(make_request({1}, 1, refused)));
  EXPECT_EQ(engine->stats().waiting, 2);
  a->cancelled = true;
  ASSERT_TRUE(a_trace->wait_done());
  engine->stop();
  EXPECT_TRUE(refused->events.empty());  // a refused request is never called back
}

TEST(Engine, StaticBatchingWaitsForMaxWaitOrAFullBatch) {
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  {
    EngineOptions o = tiny_options(4);
    o.batching = Batching::static_batch;
    o.max_wait_ms = 300;
    auto engine = Engine::start(o);
    auto t = std::make_shared<Trace>();
    auto r = make_request({5, 6, 7}, 3, t);
    ASSERT_TRUE(engine->submit(r));
    ASSERT_TRUE(t->wait_done());
    const EngineTimes times = t->last().times;
    EXPECT_GE(Ms(times.admitted - times.enqueued).count(), 290);  // alone: waited max_wait_ms
    EXPECT_EQ(t->tokens, alone(*m, *r));
  }
  EngineOptions o = tiny_options(4);
  o.batching = Batching::static_batch;
  o.max_wait_ms = 20000;
  auto engine = Engine::start(o);
  std::vector<std::shared_ptr<Trace>> traces;
  std::vector<std::shared_ptr<EngineRequest>> reqs;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) {
    traces.push_back(std::make_shared<Trace>());
    reqs.push_back(make_request({5 + i, 6, 7 + 2 * i}, 10 + 10 * i, traces.back()));
    ASSERT_TRUE(engine->submit(reqs.back()));
  }
  ASSERT_TRUE(traces[0]->wait_tokens(1));
  EXPECT_LT(Ms(std::chrono::steady_clock::now() - t0).count(), 10000);  // a full batch starts at once
  // Requests arriving while the batch runs (a full batch of them) wait for the whole batch to finish.
  std::vector<std::shared_ptr<Trace>> late;
  for (int i = 0; i < 4; ++i) {
    late.push_back(std::make_shared<Trace>());
    ASSERT_TRUE(engine->submit(make_request({9, 9}, 2, late.back())));
  }
  SteadyTime batch_end{};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(traces[i]->wait_done());
    EXPECT_EQ(traces[i]->tokens, alone(*m, *reqs[i]));
    batch_end = std::max(batch_end, traces[i]->last().times.finished);
  }
  for (auto& t : late) {
    ASSERT_TRUE(t->wait_done());
    EXPECT_GE(t->last().times.admitted, batch_end);
  }
}

// A checkpoint whose config names `eos` as the EOS id (weights of the llama3_tied fixture).
class CheckpointWithEos {
 public:
  explicit CheckpointWithEos(std::int64_t eos) {
    namespace fs = std::filesystem;
    const fs::path src = fs::path(LLMBENCH_TEST_DATA) / "models" / "llama3_tied";
    dir_ = fs::temp_directory_path() / ("llmbench_engine_eos_" + std::to_string(::getpid()));
    testing_util::remove_tree(dir_.string());
    fs::create_directories(dir_);
    fs::copy_file(src / "model.safetensors", dir_ / "model.safetensors");
    auto cfg = nlohmann::json::parse(read_file((src / "config.json").string()));
    cfg["eos_token_id"] = eos;
    std::ofstream(dir_ / "config.json") << cfg.dump();
  }
  ~CheckpointWithEos() { testing_util::remove_tree(dir_.string()); }
  std::string dir() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

TEST(Engine, EosEndsTheRequestUnlessIgnored) {
  // The fixture's own greedy continuation; its 4th token becomes the EOS id of an edited copy.
  const std::string fixture = std::string(LLMBENCH_TEST_DATA) + "/models/llama3_tied";
  std::vector<std::int64_t> prompt{17, 45, 203, 9, 88};
  GenerateOptions g;
  g.max_new_tokens = 10;
  g.ignore_eos = true;
  const auto free_run = Model::load({fixture, "float32", "cpu", "eager", 0})->generate({prompt}, g).tokens[0];
  const std::int64_t eos = free_run[3];
  const auto stop_at = std::find(free_run.begin(), free_run.end(), eos) - free_run.begin() + 1;
  CheckpointWithEos ckpt(eos);
  EngineOptions o = tiny_options(2);
  o.model = ckpt.dir();
  auto engine = Engine::start(o);
  EXPECT_EQ(engine->eos_ids(), (std::vector<std::int64_t>{eos}));
  auto stopped = std::make_shared<Trace>(), ignored = std::make_shared<Trace>();
  ASSERT_TRUE(engine->submit(make_request(prompt, 10, stopped, /*ignore_eos=*/false)));
  ASSERT_TRUE(engine->submit(make_request(prompt, 10, ignored, /*ignore_eos=*/true)));
  ASSERT_TRUE(stopped->wait_done());
  ASSERT_TRUE(ignored->wait_done());
  EXPECT_EQ(stopped->tokens, std::vector<std::int64_t>(free_run.begin(), free_run.begin() + stop_at));
  EXPECT_EQ(stopped->tokens.back(), eos);  // the EOS id is the last token handed out
  EXPECT_EQ(stopped->last().finish, FinishReason::stop);
  EXPECT_EQ(ignored->tokens, free_run);
  EXPECT_EQ(ignored->last().finish, FinishReason::length);

  // min_tokens: an EOS before it is an ordinary token; the first EOS at or after it ends the request.
  auto at_least = std::make_shared<Trace>();
  auto req = make_request(prompt, 10, at_least, /*ignore_eos=*/false);
  req->min_tokens = static_cast<int>(stop_at) + 1;
  ASSERT_TRUE(engine->submit(req));
  ASSERT_TRUE(at_least->wait_done());
  const auto next_eos = std::find(free_run.begin() + stop_at, free_run.end(), eos);
  EXPECT_EQ(at_least->tokens, std::vector<std::int64_t>(free_run.begin(), next_eos == free_run.end() ? next_eos : next_eos + 1));
}

TEST(Engine, SubmitRejectsRequestsThatCanNeverRun) {
  auto engine = Engine::start(tiny_options(1, 32));
  auto t = std::make_shared<Trace>();
  auto error_of = [&](std::vector<std::int64_t> prompt, int max_tokens, double temperature = 0, double top_p = 1) {
    auto r = make_request(std::move(prompt), max_tokens, t);
    r->temperature = temperature;
    r->top_p = top_p;
    try {
      engine->submit(r);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({}, 4), "the prompt is empty");
  EXPECT_EQ(error_of({5, -1}, 4), "token id -1 at prompt position 1 is outside the vocabulary [0, 512)");
  EXPECT_EQ(error_of({512}, 4), "token id 512 at prompt position 0 is outside the vocabulary [0, 512)");
  EXPECT_EQ(error_of({5}, 0), "max_tokens must be >= 1, got 0");
  EXPECT_EQ(error_of(std::vector<std::int64_t>(30, 5), 3),
            "prompt of 30 tokens + max_tokens 3 = 33 exceeds the context of 32 tokens");
  EXPECT_EQ(error_of({5}, 4, -1), "temperature must be a finite number >= 0, got -1");
  EXPECT_EQ(error_of({5}, 4, 1, 0), "top_p must be in (0, 1], got 0");
  EXPECT_THROW(engine->submit(nullptr), UsageError);
  EXPECT_EQ(error_of(std::vector<std::int64_t>(30, 5), 2), "no error");  // exactly the context fits
  ASSERT_TRUE(t->wait_done());
  EXPECT_EQ(t->tokens.size(), 2u);
  EXPECT_TRUE(t->events.size() == 2);  // nothing was called back for the refused ones
}

TEST(Engine, ThrowingCallbackDoesNotStopTheEngine) {
  auto engine = Engine::start(tiny_options(2));
  auto bad = std::make_shared<EngineRequest>();
  bad->prompt = {5, 6};
  bad->max_tokens = 3;
  bad->on_event = [](const EngineEvent&) { throw std::runtime_error("client gone"); };
  ASSERT_TRUE(engine->submit(bad));
  auto t = std::make_shared<Trace>();
  ASSERT_TRUE(engine->submit(make_request({7, 8}, 5, t)));
  ASSERT_TRUE(t->wait_done());
  EXPECT_EQ(t->tokens.size(), 5u);
}

TEST(Engine, StopWithRunningRequestsIsBoundedAndIdempotent) {
  EngineOptions o = tiny_options(2);
  auto engine = Engine::start(o);
  std::vector<std::shared_ptr<Trace>> traces;
  for (int i = 0; i < 4; ++i) {  // two running, two queued
    traces.push_back(std::make_shared<Trace>());
    ASSERT_TRUE(engine->submit(make_request({5, 6, 7 + i}, 120, traces.back())));
  }
  ASSERT_TRUE(traces[0]->wait_tokens(1));
  const auto t0 = std::chrono::steady_clock::now();
  engine->stop(50);
  EXPECT_LT(Ms(std::chrono::steady_clock::now() - t0).count(), 5000);
  for (int i = 0; i < 4; ++i) {
    Trace& t = *traces[i];
    std::lock_guard<std::mutex> lock(t.mu);
    ASSERT_TRUE(t.done) << i;  // every request got its last event before stop() returned
    EXPECT_EQ(t.violation, "");
    if (i < 2) {  // running: cancelled after the grace (or done, on a very fast machine)
      EXPECT_TRUE(t.events.back().finish == FinishReason::cancelled || t.events.back().finish == FinishReason::length);
    } else {      // queued: cancelled at once
      EXPECT_EQ(t.events.back().finish, FinishReason::cancelled);
      EXPECT_TRUE(t.tokens.empty());
    }
  }
  auto late = std::make_shared<Trace>();
  EXPECT_FALSE(engine->submit(make_request({5}, 1, late)));
  engine->stop();  // again: no effect
  EXPECT_EQ(engine->stats().running, 0);
}

TEST(Engine, StopGraceLetsShortRequestsFinish) {
  auto engine = Engine::start(tiny_options(2));
  auto t = std::make_shared<Trace>();
  ASSERT_TRUE(engine->submit(make_request({5, 6}, 8, t)));
  ASSERT_TRUE(t->wait_tokens(1));
  engine->stop(30000);
  ASSERT_TRUE(t->done);
  EXPECT_EQ(t->events.back().finish, FinishReason::length);
  EXPECT_EQ(t->tokens.size(), 8u);
}

}  // namespace
}  // namespace llmbench
