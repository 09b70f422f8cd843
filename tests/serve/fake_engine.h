#pragma once
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "llmbench/base/error.h"
#include "llmbench/engine/engine.h"

namespace llmbench::test {

// A protocol-level test double of Engine: no model, one thread, continuous batching over `max_batch`
// slots, one token per running request every `step_ms`. Token i of a request is
// next_token(prompt, i) = (prompt.back() + 1 + i) % vocab, so tests know the exact output.
class FakeEngine : public Engine {
 public:
  struct Options {
    int max_batch = 4;
    int max_queue = 16;
    int max_context = 256;
    std::int64_t vocab = 512;
    double step_ms = 2;
    std::int64_t eos = -1;  // finish with `stop` on this token (unless ignore_eos)
  };

  static std::int64_t next_token(const std::vector<std::int64_t>& prompt, int i, std::int64_t vocab) {
    return (prompt.back() + 1 + i) % vocab;
  }

  FakeEngine(Options o, std::shared_ptr<const Tokenizer> tokenizer) : o_(o), tokenizer_(std::move(tokenizer)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeEngine() override { stop(0); }

  bool submit(std::shared_ptr<EngineRequest> r) override {
    if (r->prompt.empty()) throw UsageError("empty prompt");
    if (r->max_tokens < 1) throw UsageError("max_tokens < 1");
    if (int(r->prompt.size()) + r->max_tokens > o_.max_context) throw UsageError("prompt + max_tokens > max_context");
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || int(waiting_.size()) >= o_.max_queue) return false;
    Slot s;
    s.request = std::move(r);
    s.times.enqueued = std::chrono::steady_clock::now();
    waiting_.push_back(std::move(s));
    ++submitted_;
    return true;
  }

  EngineStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    EngineStats s;
    s.running = int(running_.size());
    s.waiting = int(waiting_.size());
    s.slots_total = o_.max_batch;
    s.last_batch_size = last_batch_;
    s.steps = steps_;
    return s;
  }
  int max_context() const override { return o_.max_context; }
  std::int64_t vocab_size() const override { return o_.vocab; }
  std::vector<std::int64_t> eos_ids() const override { return {o_.eos}; }
  std::string model_name() const override { return "fake"; }
  std::shared_ptr<const Tokenizer> tokenizer() const override { return tokenizer_; }
  std::optional<std::string> failure() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }
  // What a tensor-parallel engine reports once a rank has failed.
  void set_failure(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = why;
  }

  void stop(double grace_ms) override {
    std::deque<Slot> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!thread_.joinable()) return;
      stopping_ = true;
      dropped.swap(waiting_);
      cancel_at_ = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double, std::milli>(grace_ms));
    }
    for (auto& s : dropped) finish(s, FinishReason::cancelled);
    thread_.join();
  }

  // From now on token i of every request is script[i % size] (next_token again when empty).
  void set_script(std::vector<std::int64_t> script) {
    std::lock_guard<std::mutex> lock(mutex_);  // submit() takes it too: the engine thread sees it
    script_ = std::move(script);
  }

  std::uint64_t submitted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return submitted_;
  }

 private:
  struct Slot {
    std::shared_ptr<EngineRequest> request;
    EngineTimes times;
    int generated = 0;
  };

  void finish(Slot& s, FinishReason reason) {
    EngineEvent e;
    e.finish = reason;
    s.times.finished = std::chrono::steady_clock::now();
    e.times = s.times;
    e.prompt_tokens = int(s.request->prompt.size());
    e.completion_tokens = s.generated;
    s.request->on_event(e);
  }

  void loop() {
    for (;;) {
      std::vector<Slot*> batch;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ && running_.empty()) return;
        while (!stopping_ && !waiting_.empty() && int(running_.size()) < o_.max_batch) {
          running_.push_back(std::move(waiting_.front()));
          waiting_.pop_front();
          running_.back().times.admitted = std::chrono::steady_clock::now();
        }
        if (stopping_ && std::chrono::steady_clock::now() > cancel_at_)
          for (auto& s : running_) s.request->cancelled = true;
        last_batch_ = int(running_.size());
        if (!running_.empty()) ++steps_;
      }
      // Only this thread touches running_'s elements; other threads read its size under the lock.
      for (auto& s : running_) {
        if (s.request->cancelled) {
          finish(s, FinishReason::cancelled);
          s.request.reset();
          continue;
        }
        EngineEvent e;
        const std::int64_t token = script_.empty() ? next_token(s.request->prompt, s.generated, o_.vocab)
                                                   : script_[std::size_t(s.generated) % script_.size()];
        ++s.generated;
        e.tokens = {token};
        if (s.generated == 1) s.times.first_token = std::chrono::steady_clock::now();
        e.prompt_tokens = int(s.request->prompt.size());
        e.completion_tokens = s.generated;
        if (token == o_.eos && !s.request->ignore_eos) e.finish = FinishReason::stop;
        else if (s.generated == s.request->max_tokens) e.finish = FinishReason::length;
        if (e.finish != FinishReason::none) s.times.finished = std::chrono::steady_clock::now();
        e.times = s.times;
        s.request->on_event(e);
        if (e.finish != FinishReason::none) s.request.reset();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        running_.erase(std::remove_if(running_.begin(), running_.end(), [](const Slot& s) { return !s.request; }),
                       running_.end());
      }
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o_.step_ms));
    }
  }

  Options o_;
  std::vector<std::int64_t> script_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  mutable std::mutex mutex_;
  std::optional<std::string> failure_;
  std::deque<Slot> waiting_;
  std::vector<Slot> running_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point cancel_at_;
  int last_batch_ = 0;
  std::uint64_t steps_ = 0;
  std::uint64_t submitted_ = 0;
  std::thread thread_;
};

}  // namespace llmbench::test
