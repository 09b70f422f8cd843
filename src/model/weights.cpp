#include "llmbench/model/weights.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <unordered_set>

#include <torch/cuda.h>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/model/load_progress.h"
#include "llmbench/model/random_fill.h"
#include "llmbench/model/safetensors.h"
#include "llmbench/model/sampler.h"

namespace llmbench {

namespace {

std::string shape_str(at::IntArrayRef shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

torch::Dtype torch_dtype(StDtype d) {
  switch (d) {
    case StDtype::F32: return torch::kFloat32;
    case StDtype::F16: return torch::kFloat16;
    case StDtype::BF16: return torch::kBFloat16;
  }
  return torch::kFloat32;
}

// Copies checkpoint tensors into preallocated (fused) device tensors, tracking which names were used.
class Loader {
 public:
  // `where` names the checkpoint in errors: its index, or its single file.
  Loader(const SafetensorsCheckpoint& ckpt, std::string where, torch::Dtype dtype, torch::Device device)
      : ckpt_(ckpt), where_(std::move(where)), options_(torch::TensorOptions().dtype(dtype).device(device)) {}

  // A host tensor over the mapping (copied when the mapping is misaligned for the element type), narrowed
  // to `slice` along `dim` when given: only those bytes are then read.
  torch::Tensor source(const std::string& name, std::vector<std::int64_t> expected, int dim = -1, dist::Range slice = {}) {
    const TensorView* v = ckpt_.find(name);
    if (!v) throw Error(cat(where_, ": missing tensor '", name, "' (expected shape ", shape_str(expected), ")"));
    if (v->shape != expected)
      throw Error(cat(v->file, ": tensor '", name, "' has shape ", shape_str(v->shape), ", expected ", shape_str(expected),
                      " from config.json"));
    used_.insert(name);
    const auto opts = torch::TensorOptions().dtype(torch_dtype(v->dtype));
    auto* ptr = const_cast<std::uint8_t*>(v->data);
    torch::Tensor t;
    if (reinterpret_cast<std::uintptr_t>(ptr) % element_size(v->dtype) == 0) {
      t = torch::from_blob(ptr, v->shape, opts);
    } else {
      t = torch::empty(v->shape, opts);
      std::memcpy(t.data_ptr(), ptr, v->nbytes);
    }
    if (dim >= 0) t = t.narrow(dim, slice.start, slice.length);
    bytes_ += t.numel() * static_cast<std::int64_t>(element_size(v->dtype));
    return t;
  }

  // One tensor, or this rank's columns of it when `columns` is given (row-parallel o and down).
  torch::Tensor one(const std::string& name, std::vector<std::int64_t> shape, const dist::Shard* columns = nullptr) {
    if (!columns || !columns->split()) {
      torch::Tensor t = torch::empty(shape, options_);
      t.copy_(source(name, shape));
      return t;
    }
    const dist::Range r = dist::shard_range(shape[1], *columns);
    torch::Tensor t = torch::empty({shape[0], r.length}, options_);
    t.copy_(source(name, shape, 1, r));
    return t;
  }

  // Stacks tensors along dim 0 into one device tensor: q/k/v → qkv, gate/up → gate_up; with a split
  // `rows`, this rank's rows of each part (column-parallel).
  torch::Tensor fused(const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& parts,
                      const dist::Shard& rows = {}) {
    std::vector<std::int64_t> shape = parts[0].second;
    shape[0] = 0;
    for (const auto& p : parts) shape[0] += p.second[0] / rows.world;
    torch::Tensor t = torch::empty(shape, options_);
    std::int64_t row = 0;
    for (const auto& [name, s] : parts) {
      const dist::Range r = dist::shard_range(s[0], rows);
      t.narrow(0, row, r.length).copy_(rows.split() ? source(name, s, 0, r) : source(name, s));
      row += r.length;
    }
    return t;
  }

  void warn_unused(bool tied) const {
    std::vector<std::string> extra;
    for (const auto& [name, view] : ckpt_.tensors()) {
      if (used_.count(name)) continue;
      if (name.size() >= 19 && name.compare(name.size() - 19, 19, "rotary_emb.inv_freq") == 0) continue;
      if (tied && name == "lm_head.weight") continue;
      extra.push_back(name);
    }
    if (extra.empty()) return;
    std::string list;
    for (std::size_t i = 0; i < extra.size() && i < 5; ++i) list += (i ? ", " : "") + extra[i];
    log::warn(cat("checkpoint has ", extra.size(), " unexpected tensor(s), ignored: ", list,
                  extra.size() > 5 ? ", ..." : ""));
  }

  std::int64_t bytes() const { return bytes_; }

 private:
  const SafetensorsCheckpoint& ckpt_;
  std::string where_;
  torch::TensorOptions options_;
  std::unordered_set<std::string> used_;
  std::int64_t bytes_ = 0;
};

void sync(torch::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace

std::int64_t Weights::bytes() const {
  std::set<const void*> seen;
  std::int64_t n = 0;
  auto add = [&](const torch::Tensor& t) {
    if (t.defined() && seen.insert(t.data_ptr()).second) n += t.numel() * static_cast<std::int64_t>(t.element_size());
  };
  add(embed);
  add(final_norm);
  add(lm_head);
  add(lm_head_scale);
  for (const auto& l : layers)
    for (const auto* t : {&l.input_norm, &l.qkv, &l.qkv_bias, &l.o, &l.o_bias, &l.post_norm, &l.gate_up, &l.down, &l.qkv_scale,
                          &l.o_scale, &l.gate_up_scale, &l.down_scale})
      add(*t);
  return n;
}

Weights load_weights(const ModelConfig& c, const std::string& dir, torch::Dtype dtype, torch::Device device,
                     WeightsLoadStats* stats, const dist::Shard& shard) {
  if (shard.split()) dist::check_tp(c, shard.world);
  torch::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  SafetensorsCheckpoint ckpt(dir);
  const std::filesystem::path single = std::filesystem::path(dir) / "model.safetensors";
  std::error_code ec;
  const std::string where =  // the file SafetensorsCheckpoint read: model.safetensors first, as transformers
      std::filesystem::exists(single, ec) ? single.string() : (std::filesystem::path(dir) / "model.safetensors.index.json").string();
  Loader ld(ckpt, where, dtype, device);
  if (c.tie_word_embeddings && ckpt.find("lm_head.weight"))
    log::warn(cat(dir, ": config.json has tie_word_embeddings true, so the checkpoint's lm_head.weight is ignored ",
                  "(the embedding table is the lm_head, as in transformers)"));
  std::int64_t file_bytes = 0;
  for (const auto& [name, view] : ckpt.tensors()) file_bytes += static_cast<std::int64_t>(view->nbytes);
  LoadProgress progress("loading checkpoint", file_bytes);
  const std::int64_t H = c.hidden_size, I = c.intermediate_size, Q = c.q_size(), KV = c.kv_size();

  Weights w;
  w.embed = ld.one("model.embed_tokens.weight", {c.vocab_size, H});
  std::int64_t progress_bytes = 0;
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = cat("model.layers.", i, ".");
    LayerWeights l;
    l.input_norm = ld.one(p + "input_layernorm.weight", {H});
    l.qkv = ld.fused({{p + "self_attn.q_proj.weight", {Q, H}},
                      {p + "self_attn.k_proj.weight", {KV, H}},
                      {p + "self_attn.v_proj.weight", {KV, H}}},
                     shard);
    if (c.qkv_bias)
      l.qkv_bias = ld.fused({{p + "self_attn.q_proj.bias", {Q}},
                             {p + "self_attn.k_proj.bias", {KV}},
                             {p + "self_attn.v_proj.bias", {KV}}},
                            shard);
    l.o = ld.one(p + "self_attn.o_proj.weight", {H, Q}, &shard);
    if (c.o_bias) l.o_bias = ld.one(p + "self_attn.o_proj.bias", {H});
    l.post_norm = ld.one(p + "post_attention_layernorm.weight", {H});
    l.gate_up = ld.fused({{p + "mlp.gate_proj.weight", {I, H}}, {p + "mlp.up_proj.weight", {I, H}}}, shard);
    l.down = ld.one(p + "mlp.down_proj.weight", {H, I}, &shard);
    w.layers.push_back(std::move(l));
    progress.advance(ld.bytes() - progress_bytes);
    progress_bytes = ld.bytes();
  }
  w.final_norm = ld.one("model.norm.weight", {H});
  w.lm_head = c.tie_word_embeddings ? w.embed : ld.one("lm_head.weight", {c.vocab_size, H});
  ld.warn_unused(c.tie_word_embeddings);
  sync(device);
  if (stats) {
    stats->load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    stats->file_bytes = ld.bytes();
  }
  return w;
}

Weights random_weights(const ModelConfig& c, torch::Dtype dtype, torch::Device device, std::uint64_t seed,
                       const dist::Shard& shard) {
  torch::NoGradGuard no_grad;
  if (shard.split()) dist::check_tp(c, shard.world);
  at::Generator gen = make_generator(device, seed);
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  LoadProgress progress("drawing random weights", c.parameter_count() * static_cast<std::int64_t>(c10::elementSize(dtype)));
  std::uint64_t ordinal = 0;
  // CUDA: torch's normal_ on the device (instant). CPU: fill_random's counter hash, multi-threaded
  // (torch's CPU normal_ is single-threaded: ~2 minutes for a 7B model).
  auto normal = [&](std::vector<std::int64_t> shape) {
    torch::Tensor t = torch::empty(shape, options);
    if (device.is_cpu())
      fill_random(t, 0.02, random_key(seed, ordinal++));
    else
      t.normal_(0.0, 0.02, gen);
    progress.advance(t.numel() * static_cast<std::int64_t>(t.element_size()));
    return t;
  };
  auto ones = [&](std::int64_t n) {
    progress.advance(n * static_cast<std::int64_t>(c10::elementSize(dtype)));
    return torch::ones({n}, options);
  };
  const std::int64_t H = c.hidden_size, I = c.intermediate_size, Q = c.q_size(), KV = c.kv_size();

  Weights w;
  w.embed = normal({c.vocab_size, H});
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    LayerWeights l;
    l.input_norm = ones(H);
    // Split: each draw is whole, then this rank's slice is kept (the whole one is freed at once).
    l.qkv = shard.split() ? dist::qkv_shard(normal({Q + 2 * KV, H}), c, shard) : normal({Q + 2 * KV, H});
    if (c.qkv_bias) l.qkv_bias = shard.split() ? dist::qkv_shard(normal({Q + 2 * KV}), c, shard) : normal({Q + 2 * KV});
    l.o = shard.split() ? dist::column_shard(normal({H, Q}), shard) : normal({H, Q});
    if (c.o_bias) l.o_bias = normal({H});
    l.post_norm = ones(H);
    l.gate_up = shard.split() ? dist::gate_up_shard(normal({2 * I, H}), shard) : normal({2 * I, H});
    l.down = shard.split() ? dist::column_shard(normal({H, I}), shard) : normal({H, I});
    w.layers.push_back(std::move(l));
  }
  w.final_norm = ones(H);
  w.lm_head = c.tie_word_embeddings ? w.embed : normal({c.vocab_size, H});
  sync(device);
  return w;
}

}  // namespace llmbench
