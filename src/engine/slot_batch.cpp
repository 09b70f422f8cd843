#include "llmbench/engine/slot_batch.h"

#include <algorithm>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"

namespace llmbench {

namespace {

// The smallest column bucket: below it the attention's cost is noise next to the weights.
constexpr std::int64_t kMinColumnBucket = 256;

}  // namespace

std::vector<std::int64_t> SlotBatch::row_buckets(std::int64_t slots) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 1; r < slots; r *= 2) out.push_back(r);
  out.push_back(slots);
  return out;
}

std::vector<std::int64_t> SlotBatch::column_buckets(std::int64_t max_context) {
  std::vector<std::int64_t> out;
  for (std::int64_t c = kMinColumnBucket; c < max_context; c *= 2) out.push_back(c);
  out.push_back(max_context);
  return out;
}

std::int64_t SlotBatch::bucket(const std::vector<std::int64_t>& buckets, std::int64_t at_least) {
  for (std::int64_t b : buckets)
    if (b >= at_least) return b;
  throw Error(cat("no bucket holds ", at_least, " (largest ", buckets.back(), ")"));
}

SlotBatch::SlotBatch(Model& model, std::int64_t slots, std::int64_t max_context, bool cuda_graph)
    : mirror_(model), slots_(slots), max_context_(max_context) {
  if (slots < 1) throw UsageError(cat("the engine needs at least 1 slot, got ", slots));
  if (max_context < 2) throw UsageError(cat("the engine's context must be at least 2 tokens, got ", max_context));
  row_buckets_ = row_buckets(slots);
  column_buckets_ = column_buckets(max_context);
  mirror_.allocate_cache(slots, max_context);
  mirror_.reset_cache();
  if (cuda_graph && DecodeGraph::available(mirror_.device()) && max_context >= 4) {
    for (std::int64_t r : row_buckets_)
      for (std::int64_t c : column_buckets_) mirror_.capture_graph(r, c);
    log::info(cat("engine: captured ", mirror_.graph_count(), " decode graphs (", row_buckets_.size(), " row × ",
                  column_buckets_.size(), " column buckets)"));
  }
  mirror_.reset_cache();  // the captures' warm-up steps wrote the cache
}

torch::Tensor SlotBatch::add(const std::vector<std::int64_t>& prompt) { return add(std::vector<std::vector<std::int64_t>>{prompt})[0]; }

torch::Tensor SlotBatch::add(const std::vector<std::vector<std::int64_t>>& prompts) {
  const auto k = static_cast<std::int64_t>(prompts.size()), first = size();
  if (k < 1) throw Error("add: no prompt");
  if (first + k > slots_) throw Error(cat("no room for ", k, " rows (", first, " of ", slots_, " slots in use)"));
  std::vector<std::int64_t> lengths;
  for (const auto& p : prompts) lengths.push_back(static_cast<std::int64_t>(p.size()));
  const std::int64_t columns = *std::max_element(lengths.begin(), lengths.end());
  torch::Tensor ids = torch::zeros({k, columns}, torch::kInt64);  // [k, P] right-padded with 0
  for (std::int64_t i = 0; i < k; ++i)
    if (lengths[i] > 0) ids[i].narrow(0, 0, lengths[i]).copy_(torch::tensor(prompts[i], torch::kInt64));
  try {
    torch::Tensor logits = mirror_.prefill_slots(first, ids, lengths);  // [k, V]
    lengths_.insert(lengths_.end(), lengths.begin(), lengths.end());
    active_.insert(active_.end(), lengths.size(), true);
    return logits;
  } catch (...) {
    for (std::int64_t i = 0; i < k; ++i) mirror_.free_slot(first + i);
    throw;
  }
}

torch::Tensor SlotBatch::step(const std::vector<std::int64_t>& tokens) {
  const auto n = size();
  if (n == 0) throw Error("decode step with no running row");
  if (static_cast<std::int64_t>(tokens.size()) != n)
    throw Error(cat("decode step: ", tokens.size(), " tokens for ", n, " running rows"));
  const std::int64_t longest = *std::max_element(lengths_.begin(), lengths_.end());
  check_room();
  const std::int64_t rows = bucket(row_buckets_, n), columns = bucket(column_buckets_, longest + 1);
  torch::Tensor input = torch::tensor(tokens, torch::kInt64);  // [n] on the host
  torch::Tensor logits;                                      // [n, V]
  if (mirror_.has_graph(rows, columns)) {
    logits = mirror_.graph_step(rows, columns, input);
  } else {
    // Inactive rows of the bucket are fed token 0; their results are dropped.
    torch::Tensor padded = torch::zeros({rows}, torch::kInt64);  // [R]
    padded.narrow(0, 0, n).copy_(input);
    logits = mirror_.decode_slots(padded, columns).narrow(0, 0, n);
  }
  for (std::int64_t i = 0; i < n; ++i) lengths_[i] += active_[i] ? 1 : 0;
  return logits;
}

void SlotBatch::check_room() const {
  for (std::int64_t i = 0; i < size(); ++i)
    if (active_[i] && lengths_[i] >= max_context_) throw Error(cat("KV cache full: row ", i, " holds all ", max_context_, " columns"));
}

std::int64_t SlotBatch::reserve() {
  if (full()) throw Error(cat("no free row (", slots_, " slots in use)"));
  const std::int64_t row = size();
  mirror_.free_slot(row);  // column 0, position 0, inactive
  lengths_.push_back(0);
  active_.push_back(false);
  return row;
}

torch::Tensor SlotBatch::mixed(const std::vector<std::int64_t>& tokens, const std::vector<Chunk>& chunks) {
  const auto n = size();
  if (static_cast<std::int64_t>(tokens.size()) != n)
    throw Error(cat("mixed step: ", tokens.size(), " tokens for ", n, " rows"));
  check_room();
  std::int64_t longest = *std::max_element(lengths_.begin(), lengths_.end()) + 1;
  std::vector<std::int64_t> ids = tokens;
  std::vector<ChunkSpan> spans;
  for (const Chunk& c : chunks) {
    if (c.row < 0 || c.row >= n || active_[c.row] || c.ids.empty())
      throw Error(cat("mixed step: row ", c.row, " is not a prefilling row, or its chunk is empty"));
    const auto len = static_cast<std::int64_t>(c.ids.size());
    if (lengths_[c.row] + len > max_context_)
      throw Error(cat("mixed step: a prompt of ", lengths_[c.row] + len, " tokens does not fit ", max_context_, " columns"));
    spans.push_back({c.row, lengths_[c.row], len, c.last});
    ids.insert(ids.end(), c.ids.begin(), c.ids.end());
    longest = std::max(longest, lengths_[c.row] + len);
  }
  torch::Tensor logits = mirror_.mixed_slots(n, bucket(column_buckets_, longest), ids, spans);  // [n, V]
  for (std::int64_t i = 0; i < n; ++i) lengths_[i] += active_[i] ? 1 : 0;
  for (const ChunkSpan& c : spans) {
    lengths_[c.row] += c.length;
    active_[c.row] = c.last;
  }
  return logits;
}

std::int64_t SlotBatch::remove(std::int64_t row) {
  const auto last = size() - 1;
  if (row < 0 || row > last) throw Error(cat("remove: row ", row, " is not running (", size(), " rows)"));
  if (row != last) {
    mirror_.move_slot(last, row, lengths_[last]);
    lengths_[row] = lengths_[last];
    active_[row] = active_[last];
  }
  mirror_.free_slot(last);
  lengths_.pop_back();
  active_.pop_back();
  return row == last ? -1 : last;
}

void SlotBatch::clear() {
  for (std::int64_t r = 0; r < size(); ++r) mirror_.free_slot(r);
  lengths_.clear();
  active_.clear();
}

}  // namespace llmbench
