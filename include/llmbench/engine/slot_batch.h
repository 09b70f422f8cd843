#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "llmbench/dist/model_mirror.h"
#include "llmbench/model/model.h"

// The model's KV cache as `slots` rows of `max_context` columns, one request per row, kept compacted:
// running requests occupy rows [0, size()). When a request leaves, the last row moves into its place
// (KV columns, position, column, valid mask), so a decode step always runs on a prefix of rows: the
// smallest row bucket (1, 2, 4, …, slots) ≥ size() and the smallest column bucket (256, 512, …,
// max_context) longer than the longest row. Rows of the bucket beyond size() are inactive and never
// advance. With CUDA graphs one graph per (row bucket, column bucket) is captured up front.
// Every call into the Model goes through a dist::ModelMirror: on a tensor-parallel model (rank 0 of its
// group) the other ranks replay each call (dist/model_mirror.h); otherwise it is the Model itself.
// Not thread-safe: the engine thread owns it.
namespace llmbench {

class SlotBatch {
 public:
  // Allocates the cache (model.allocate_cache(slots, max_context)) and, when `cuda_graph` and the
  // model is on CUDA, captures every bucket's graph. Throws UsageError for a bad size.
  SlotBatch(Model& model, std::int64_t slots, std::int64_t max_context, bool cuda_graph);

  std::int64_t size() const { return static_cast<std::int64_t>(lengths_.size()); }
  std::int64_t slots() const { return slots_; }
  std::int64_t max_context() const { return max_context_; }
  bool full() const { return size() == slots_; }
  // Cache columns row `row` holds (prompt + tokens fed to decode steps).
  std::int64_t length(std::int64_t row) const { return lengths_.at(row); }
  bool graphs() const { return mirror_.graph_count() > 0; }
  // The Model calls' seam; failure() says when a tensor-parallel group can no longer be used.
  const dist::ModelMirror& mirror() const { return mirror_; }

  // Prefills `prompt` into row size() (a new running row) → its last logits [V] float32 on the device.
  // On an exception the row stays free.
  torch::Tensor add(const std::vector<std::int64_t>& prompt);
  // Prefills k prompts in one pass (right-padded to the longest, Model::prefill_slots) into rows
  // [size(), size() + k) in this order → their last logits [k, V] float32 on the device. On an exception
  // every one of those rows stays free.
  torch::Tensor add(const std::vector<std::vector<std::int64_t>>& prompts);
  // One decode step of every running row: tokens[i] is row i's input → logits [size(), V] float32 on the
  // device (a graph's static buffer: read it before the next step). Throws when a row's cache is full.
  // Rows still prefilling (reserve) take no part: their results are garbage and they stay put.
  torch::Tensor step(const std::vector<std::int64_t>& tokens);

  // Chunked prefill. reserve() takes row size() for a prompt that arrives in chunks: the row is inactive
  // (decode steps leave it alone) until mixed() feeds its last chunk. Returns the row.
  std::int64_t reserve();
  // One prompt chunk of an inactive row: `ids` go to the columns after the ones it holds.
  struct Chunk {
    std::int64_t row = 0;
    std::vector<std::int64_t> ids;
    bool last = false;  // completes the prompt: the row decodes from the next step
  };
  // One forward of every active row's decode step and the chunks (Model::mixed_slots) → logits
  // [size(), V] float32: active rows' next-token logits, a chunk row's after its chunk's last token.
  torch::Tensor mixed(const std::vector<std::int64_t>& tokens, const std::vector<Chunk>& chunks);
  // True when row `row` decodes (it has its whole prompt).
  bool active(std::int64_t row) const { return active_.at(row); }
  // Frees row `row`; the last running row moves into it (compaction). Returns the index of the row that
  // moved into `row` (size() before the call − 1), or −1 when `row` was the last one.
  std::int64_t remove(std::int64_t row);
  // Frees every row (after a failed step).
  void clear();

  // Row buckets 1, 2, 4, … capped at `slots`; column buckets 256, 512, … capped at `max_context`.
  static std::vector<std::int64_t> row_buckets(std::int64_t slots);
  static std::vector<std::int64_t> column_buckets(std::int64_t max_context);

 private:
  static std::int64_t bucket(const std::vector<std::int64_t>& buckets, std::int64_t at_least);
  // Throws when an active row's cache is full.
  void check_room() const;

  dist::ModelMirror mirror_;  // the model, and with tensor parallelism the other ranks
  std::int64_t slots_ = 0;
  std::int64_t max_context_ = 0;
  std::vector<std::int64_t> lengths_;  // per running row: cache columns written
  std::vector<bool> active_;           // per running row: false while its prompt is still being prefilled
  std::vector<std::int64_t> row_buckets_, column_buckets_;
};

}  // namespace llmbench
