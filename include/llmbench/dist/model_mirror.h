#pragma once
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "llmbench/model/decode_graph.h"
#include "llmbench/model/model.h"

// The slot engine's calls into the Model, replayed on every tensor-parallel rank. Rank 0 runs the engine
// (scheduler, sampling, HTTP); ranks 1 … N−1 only hold their weight shards and must make the same Model
// calls in the same order, so that the all-reduces inside the decoder pair up. Rank 0's ModelMirror sends
// each call to the other ranks as a command (a broadcast over the model's process group) and then runs it
// itself; the other ranks run follow(), which receives and runs the same commands until `stop`.
// Without a group the mirror is a plain pass-through to the Model.
//
//   rank 0:   ModelMirror m(model);  m.allocate_cache(8, 512);  logits = m.decode_slots(tokens, 256); ...
//             m.stop();  // or ~ModelMirror
//   rank r:   ModelMirror::follow(model);  // returns at rank 0's stop; throws Error on a failure
//
// Wire format: one broadcast of an int64 header [kHeader] = {op, sequence, args[kArgs], payload length,
// payload (inline when it has at most kInline values)}, then, only for a longer payload, one broadcast of
// the payload [n] int64. A decode step of up to kInline rows is one broadcast.
//
// Adding a Model call (e.g. a mixed prefill + decode step): (1) a MirrorOp value before `count_`,
// (2) a public method here that packs its arguments into a Command (scalars in args, token ids in the
// payload) and returns call(command), (3) a case in execute() (model_mirror.cpp) that unpacks them and
// calls the Model, identically on every rank, (4) the SlotBatch calls the new method instead of the Model.
namespace llmbench::dist {

enum class MirrorOp : std::int64_t {
  stop = 0,           // followers return from follow()
  keepalive,          // nothing: an idle rank 0 says it is alive (followers' waits time out otherwise)
  allocate_cache,     // args: batch, max_len
  reset_cache,        //
  prefill_slots,      // args: first, k, columns; payload: lengths [k], then ids [k * columns]
  decode_slots,       // args: columns; payload: tokens [R]
  move_slot,          // args: from, to, columns
  free_slot,          // args: slot
  capture_graph,      // args: rows, columns (a DecodeGraph of that bucket, on every rank)
  graph_step,         // args: rows, columns; payload: tokens [n] (replay of that bucket's graph)
  mixed_slots,        // args: rows, columns, chunks c, ids n; payload: ids [n], then 4 values per chunk
                      // (row, start, length, last)
  count_              // keep last
};
const char* to_string(MirrorOp op);

class ModelMirror {
 public:
  static constexpr int kArgs = 5;
  static constexpr int kInline = 248;
  static constexpr int kHeader = 3 + kArgs + kInline;  // op, sequence, args, payload length, inline payload

  // Rank 0 of model.group() (or no group: a pass-through). Throws Error on another rank (use follow()).
  // With a group, a thread sends `keepalive` whenever no command went out for a quarter of the group's
  // timeout (at most 5 s), so that followers waiting through an idle period do not time out.
  explicit ModelMirror(Model& model);
  ~ModelMirror();  // stop()
  ModelMirror(const ModelMirror&) = delete;
  ModelMirror& operator=(const ModelMirror&) = delete;

  // Ranks 1 … N−1: run rank 0's commands until `stop`. Throws Error when a command fails here, when the
  // commands arrive out of sequence, or when no command arrives within the group's timeout (rank 0 gone).
  static void follow(Model& model);

  Model& model() const { return model_; }
  torch::Device device() const { return model_.device(); }
  int world() const;

  // The Model calls of the slot engine (model.h), on every rank.
  std::int64_t allocate_cache(std::int64_t batch, std::int64_t max_len);
  void reset_cache();
  torch::Tensor prefill_slots(std::int64_t first, const torch::Tensor& ids, const std::vector<std::int64_t>& lengths);
  torch::Tensor decode_slots(const torch::Tensor& tokens, std::int64_t columns);
  torch::Tensor mixed_slots(std::int64_t rows, std::int64_t columns, const std::vector<std::int64_t>& ids,
                            const std::vector<ChunkSpan>& chunks);
  void move_slot(std::int64_t from, std::int64_t to, std::int64_t columns);
  void free_slot(std::int64_t slot);
  // A DecodeGraph per (rows, columns) bucket, held by the mirror on every rank (model/decode_graph.h).
  void capture_graph(std::int64_t rows, std::int64_t columns);
  bool has_graph(std::int64_t rows, std::int64_t columns) const { return graphs_.count({rows, columns}) > 0; }
  std::size_t graph_count() const { return graphs_.size(); }
  // tokens [n] int64 (host or device) → logits [n, V] float32 (the graph's static buffer).
  torch::Tensor graph_step(std::int64_t rows, std::int64_t columns, const torch::Tensor& tokens);

  // Sends `stop` (once; not after a failure). Idempotent.
  void stop();
  // Why the group can no longer be used (thread-safe); nullopt while it can. With a group, any failure of a
  // mirrored call is final: rank 0 cannot know which collective the other ranks are waiting in, so every
  // later call that needs the other ranks throws this message (free_slot, move_slot and reset_cache then run
  // on rank 0 alone, so that the engine can still release its rows).
  std::optional<std::string> failure() const;

 private:
  struct Command {
    MirrorOp op = MirrorOp::keepalive;
    std::array<std::int64_t, kArgs> args{};
    torch::Tensor payload;  // [n] int64: on the host (rank 0) or the device (followers); undefined: none
  };
  ModelMirror(Model& model, bool leader);

  // Rank 0: sends `c` to the followers (with a group), then runs it here. Serialised with the keepalives.
  torch::Tensor call(const Command& c);
  torch::Tensor execute(const Command& c);
  void send(const Command& c);
  Command receive();
  void keepalive_loop();
  void fail(const std::string& why);

  Model& model_;
  std::shared_ptr<ProcessGroup> group_;  // null: pass-through
  std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<DecodeGraph>> graphs_;  // (rows, columns)
  std::int64_t sequence_ = 0;  // commands sent (rank 0) or received (followers)

  std::mutex call_mu_;  // one command at a time: the engine thread's calls and the keepalives
  std::chrono::steady_clock::time_point last_sent_;
  std::chrono::milliseconds keepalive_{0};
  std::condition_variable keepalive_cv_;
  bool stopped_ = false;  // guarded by call_mu_
  std::thread keepalive_thread_;

  mutable std::mutex failure_mu_;
  std::optional<std::string> failure_;
};

}  // namespace llmbench::dist
