#include "llmbench/model/model.h"

#include <algorithm>
#include <chrono>

#include <torch/version.h>

#include "llmbench/base/error.h"
#include "llmbench/base/log.h"
#include "llmbench/bench/device_env.h"
#include "llmbench/dist/shard.h"
#include "llmbench/model/fused_ops.h"
#include "llmbench/model/linear.h"
#include "llmbench/model/presets.h"
#include "llmbench/model/quantize.h"

namespace llmbench {

torch::Dtype parse_dtype(const std::string& name) {
  if (name == "float32" || name == "fp32") return torch::kFloat32;
  if (name == "bfloat16" || name == "bf16") return torch::kBFloat16;
  if (name == "float16" || name == "fp16" || name == "half") return torch::kFloat16;
  throw UsageError(cat("unknown dtype '", name, "' (expected float32, bfloat16 or float16)"));
}

std::string dtype_name(torch::Dtype dtype) {
  if (dtype == torch::kBFloat16) return "bfloat16";
  if (dtype == torch::kFloat16) return "float16";
  return "float32";
}

void check_dtype_supported(const std::string& dtype, const torch::Device& device) {
#if TORCH_VERSION_MAJOR < 2
  if (parse_dtype(dtype) == torch::kFloat16 && device.is_cpu())
    throw UsageError("--dtype float16: libtorch 1.x has no float16 matrix multiply on the CPU; use float32 or bfloat16");
#else
  (void)dtype;
  (void)device;
#endif
}

std::unique_ptr<Model> Model::load(const ModelLoadOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Model> m(new Model());
  m->dtype_ = parse_dtype(o.dtype);
  const AttnImpl attn = parse_attn(o.attn);
  m->device_ = torch::Device(resolve_device(o.device));
  check_dtype_supported(o.dtype, m->device_);  // found before the weights load, not by the first matmul
  const WeightFormat quant = parse_weight_format(o.quant);
  if (quant == WeightFormat::fp8) check_fp8_supported(m->device_);
  ResolvedModel r = resolve_model(o.model);

  ModelInfo& info = m->info_;
  info.spec = o.model;
  info.preset = r.preset;
  info.config = r.config;
  info.dtype = dtype_name(m->dtype_);
  info.device = m->device_.str();
  info.attn = to_string(attn);
  m->group_ = o.group;
  info.tp = o.group ? o.group->world() : 1;
  m->rank_config_ = dist::shard_config(info.config, info.tp);
  const dist::Shard shard{o.group ? o.group->rank() : 0, info.tp};
  if (r.checkpoint_dir) {
    info.weights = "checkpoint";
    info.checkpoint_dir = *r.checkpoint_dir;
    m->weights_ = load_weights(info.config, info.checkpoint_dir, m->dtype_, m->device_, nullptr, shard);
  } else {
    info.weights = "random";
    m->weights_ = random_weights(info.config, m->dtype_, m->device_, o.seed, shard);
  }
  quantize_weights(m->weights_, quant);
  info.quant = to_string(quant);
  info.weight_bytes = m->weights_.bytes();
  info.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  m->decoder_ = std::make_unique<Decoder>(m->rank_config_, m->weights_, attn);
  if (auto group = m->group_) m->decoder_->set_all_reduce([group](torch::Tensor& t) { group->all_reduce_sum_(t); });
  log::info(cat("model ", o.model, ": weights: ", info.weights,
                info.checkpoint_dir.empty() ? "" : " (" + info.checkpoint_dir + ")", ", ", info.dtype,
                quant == WeightFormat::plain ? "" : " (" + info.quant + " matmul weights)", " on ",
                info.device, ", ", info.weight_bytes / 1e6, " MB in ", info.load_ms, " ms",
                info.tp > 1 ? cat(" (tensor-parallel rank ", shard.rank, " of ", info.tp, ")") : std::string()));
  return m;
}

void Model::set_fused(bool fused) { decoder_->set_fused(fused); }

double Model::tune_gemms(const std::vector<std::int64_t>& rows) {
  if (weights_.layers.empty() || !device_.is_cuda() || !lt_gemm_requested()) return 0;
  const auto start = std::chrono::steady_clock::now();
  const LayerWeights& l = weights_.layers[0];  // every layer has the same shapes
  for (std::int64_t r : rows)
    for (const torch::Tensor* w : {&l.qkv, &l.o, &l.gate_up, &l.down}) tune_lt_gemm(*w, r);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool Model::fused_active() const { return decoder_->fused_active(weights_.embed, rope_); }

bool Model::decode_attention_mma(std::int64_t rows) const {
  if (!fused_active() || !cache_.allocated()) return false;
  const ModelConfig& c = config();
  return fused::decode_attention_uses_mma(weights_.embed, rows, c.num_heads, c.num_kv_heads, c.head_dim,
                                          cache_.max_len());
}

void Model::set_gemv(bool gemv) {
  LinearPaths p = decoder_->linear_paths();
  p.gemv = gemv;
  decoder_->set_linear_paths(p);
}

bool Model::gemv_enabled() const { return decoder_->linear_paths().gemv; }

bool Model::gemv_active(std::int64_t rows) const {
  if (weights_.layers.empty()) return false;
  const LayerWeights& l = weights_.layers[0];
  const LinearPaths& paths = decoder_->linear_paths();
  auto takes = [&](const torch::Tensor& w, const torch::Tensor& scale, const torch::Tensor& bias) {
    torch::Tensor x = torch::empty({rows, w.size(1)}, weights_.embed.options());  // [B, K] probe
    return gemv_applies(x, w, scale, bias, paths);
  };
  return takes(l.qkv, l.qkv_scale, l.qkv_bias) || takes(l.o, l.o_scale, l.o_bias) ||
         takes(l.gate_up, l.gate_up_scale, {}) || takes(l.down, l.down_scale, {}) ||
         takes(weights_.lm_head, weights_.lm_head_scale, {});
}

bool Model::gemv_mma(std::int64_t rows) const {
  if (weights_.layers.empty()) return false;
  const LayerWeights& l = weights_.layers[0];
  torch::Tensor x = torch::empty({rows, config().hidden_size}, weights_.embed.options());  // [B, H] probe
  return gemv_uses_mma(x, l.qkv, l.qkv_scale, l.qkv_bias, decoder_->linear_paths());
}

void Model::set_fp8_gemm(Fp8Gemm gemm) {
  LinearPaths p = decoder_->linear_paths();
  p.fp8_gemm = gemm;
  decoder_->set_linear_paths(p);
}

void Model::set_attn(AttnImpl attn) {
  decoder_->set_attn(attn);
  info_.attn = to_string(attn);
}

void Model::set_kv_format(KvFormat format) {
  if (format == KvFormat::fp8) check_kv_fp8_supported(device_);
  kv_format_ = format;
}

std::int64_t Model::allocate_cache(std::int64_t batch, std::int64_t max_len) {
  check_context(config(), max_len);
  if (cache_.allocated() && cache_.batch() == batch && cache_.max_len() == max_len && cache_.format() == kv_format_)
    return cache_.bytes();
  cache_ = KvCache();  // free the old one first: peak memory holds one cache, not two
  cache_ = KvCache(rank_config_, batch, max_len, dtype_, device_, kv_format_);
  rope_ = Rope(rank_config_, max_len, dtype_, device_);
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device_);
  state_.positions = torch::zeros({batch}, i64);
  state_.column = torch::zeros({batch}, i64);
  state_.active = torch::zeros({batch}, i64);
  state_.valid = torch::zeros({batch, max_len}, i64.dtype(torch::kBool));
  next_column_ = 0;
  return cache_.bytes();
}

void Model::reset_cache() {
  if (!cache_.allocated()) return;
  cache_.reset();
  state_.positions.zero_();
  state_.column.zero_();
  state_.active.zero_();
  state_.valid.zero_();
  next_column_ = 0;
}

torch::Tensor Model::prefill(const torch::Tensor& ids, const torch::Tensor& attention_mask) {
  if (!cache_.allocated()) throw Error("prefill before allocate_cache");
  if (ids.dim() != 2 || ids.size(0) != cache_.batch() || ids.size(1) < 1)
    throw UsageError(cat("prefill: ids must be [", cache_.batch(), ", P >= 1], got ", ids.sizes()));
  if (ids.size(1) > cache_.max_len())
    throw UsageError(cat("prompt of ", ids.size(1), " tokens does not fit the KV cache of ", cache_.max_len()));
  torch::Tensor d_ids = ids.to(device_, torch::kInt64);
  torch::Tensor mask = attention_mask.defined() ? attention_mask.to(device_, torch::kInt64) : torch::Tensor();
  next_column_ = ids.size(1);
  return decoder_->prefill(d_ids, mask, rope_, cache_, state_);  // undefined mask: no padding, no host sync
}

void Model::note_replayed_prefill(std::int64_t prompt_len) {
  if (prompt_len < 1 || prompt_len > cache_.max_len())
    throw Error(cat("note_replayed_prefill: ", prompt_len, " columns do not fit the cache of ", cache_.max_len()));
  next_column_ = prompt_len;
}

torch::Tensor Model::forward_normed(const torch::Tensor& ids) {
  if (!cache_.allocated()) throw Error("forward_normed before allocate_cache");
  if (ids.dim() != 2 || ids.size(0) != cache_.batch() || ids.size(1) < 1 || ids.size(1) > cache_.max_len())
    throw UsageError(cat("forward_normed: ids must be [", cache_.batch(), ", 1..", cache_.max_len(), "], got ", ids.sizes()));
  torch::NoGradGuard no_grad;
  torch::Tensor d_ids = ids.to(device_, torch::kInt64);  // [B, S]
  reset_cache();
  next_column_ = ids.size(1);
  return decoder_->final_norm(decoder_->prefill_hidden(d_ids, torch::ones_like(d_ids), rope_, cache_, state_));
}

torch::Tensor Model::lm_head_float32() const {
  torch::NoGradGuard no_grad;
  if (weights_.lm_head_scale.defined()) return dequantize(weights_.lm_head, weights_.lm_head_scale, torch::kFloat32);
  return weights_.lm_head.to(torch::kFloat32);  // [V, H]
}

torch::Tensor Model::decode_step(const torch::Tensor& tokens) {
  if (next_column_ < 1) throw Error("decode_step before prefill");
  if (next_column_ >= cache_.max_len())
    throw Error(cat("KV cache full: ", cache_.max_len(), " positions (allocate a longer cache)"));
  ++next_column_;
  return decoder_->decode_step(tokens.to(device_, torch::kInt64), rope_, cache_, state_);
}

void Model::check_slot(std::int64_t slot, const char* what) const {
  if (!cache_.allocated()) throw Error(cat(what, " before allocate_cache"));
  if (slot < 0 || slot >= cache_.batch())
    throw Error(cat(what, ": slot ", slot, " is outside [0, ", cache_.batch(), ")"));
}

torch::Tensor Model::prefill_slot(std::int64_t slot, const torch::Tensor& ids) {
  if (ids.dim() != 1 || ids.size(0) < 1) throw UsageError(cat("prefill_slot: ids must be [P >= 1], got ", ids.sizes()));
  return prefill_slots(slot, ids.view({1, ids.size(0)}), {ids.size(0)})[0];
}

torch::Tensor Model::prefill_slots(std::int64_t first, const torch::Tensor& ids, const std::vector<std::int64_t>& lengths) {
  check_slot(first, "prefill_slots");
  const auto k = static_cast<std::int64_t>(lengths.size());
  if (ids.dim() != 2 || ids.size(0) != k || k < 1 || ids.size(1) < 1)
    throw UsageError(cat("prefill_slots: ids must be [", k, ", P >= 1] for ", k, " lengths, got ", ids.sizes()));
  check_slot(first + k - 1, "prefill_slots");
  const auto p = ids.size(1);
  if (p > cache_.max_len())
    throw UsageError(cat("prompt of ", p, " tokens does not fit the KV cache of ", cache_.max_len()));
  for (auto n : lengths)
    if (n < 1 || n > p) throw UsageError(cat("prefill_slots: a length of ", n, " for ", p, " columns"));
  torch::Tensor d_ids = ids.to(device_, torch::kInt64);                                     // [k, P]
  torch::Tensor len = torch::tensor(lengths, torch::kInt64).to(device_);                    // [k]
  torch::Tensor mask = (torch::arange(p, d_ids.options()).view({1, p}) < len.view({k, 1})).to(torch::kInt64);  // [k, P]
  KvCache rows = cache_.view(first, k, cache_.max_len());
  DecodeState rows_state = state_.view(first, k, cache_.max_len());
  torch::Tensor x = decoder_->prefill_hidden(d_ids, mask, rope_, rows, rows_state);        // [k, P, H]
  torch::Tensor last = x.gather(1, (len - 1).view({k, 1, 1}).expand({k, 1, x.size(2)}));  // [k, 1, H]
  return decoder_->logits(last.squeeze(1));                                                // [k, V]
}

torch::Tensor Model::decode_slots(const torch::Tensor& tokens, std::int64_t columns) {
  if (!cache_.allocated()) throw Error("decode_slots before allocate_cache");
  if (tokens.dim() != 1 || tokens.size(0) < 1 || tokens.size(0) > cache_.batch())
    throw Error(cat("decode_slots: tokens must be [R] with 1 <= R <= ", cache_.batch(), ", got ", tokens.sizes()));
  const auto rows = tokens.size(0);
  KvCache view = cache_.view(0, rows, columns);
  DecodeState view_state = state_.view(0, rows, columns);
  return decoder_->decode_step(tokens.to(device_, torch::kInt64), rope_, view, view_state);
}

torch::Tensor Model::mixed_slots(std::int64_t rows, std::int64_t columns, const std::vector<std::int64_t>& ids,
                                 const std::vector<ChunkSpan>& chunks) {
  if (!cache_.allocated()) throw Error("mixed_slots before allocate_cache");
  if (rows < 1 || rows > cache_.batch() || columns < 1 || columns > cache_.max_len())
    throw Error(cat("mixed_slots: ", rows, " rows × ", columns, " columns outside the cache of ", cache_.batch(),
                    " × ", cache_.max_len()));
  std::int64_t tokens = rows;
  for (const ChunkSpan& c : chunks) {
    if (c.row < 0 || c.row >= rows || c.start < 0 || c.length < 1 || c.start + c.length > columns)
      throw Error(cat("mixed_slots: chunk of row ", c.row, " columns [", c.start, ", ", c.start + c.length,
                      ") is outside ", rows, " rows × ", columns, " columns"));
    tokens += c.length;
  }
  if (static_cast<std::int64_t>(ids.size()) != tokens)
    throw Error(cat("mixed_slots: ", ids.size(), " ids for ", tokens, " tokens"));
  const std::int64_t vocab = config().vocab_size;
  for (auto id : ids)
    if (id < 0 || id >= vocab) throw UsageError(cat("token id ", id, " is outside the vocabulary [0, ", vocab, ")"));
  torch::Tensor d_ids = torch::tensor(ids, torch::kInt64).to(device_);  // [R + Σ length]
  KvCache view = cache_.view(0, rows, columns);
  DecodeState view_state = state_.view(0, rows, columns);
  return decoder_->mixed_step(d_ids, chunks, rope_, view, view_state);
}

void Model::move_slot(std::int64_t from, std::int64_t to, std::int64_t columns) {
  check_slot(from, "move_slot");
  check_slot(to, "move_slot");
  if (from == to) return;
  cache_.copy_row(from, to, columns);
  for (torch::Tensor* t : {&state_.positions, &state_.column, &state_.active, &state_.valid})
    t->narrow(0, to, 1).copy_(t->narrow(0, from, 1));
}

void Model::free_slot(std::int64_t slot) {
  check_slot(slot, "free_slot");
  for (torch::Tensor* t : {&state_.positions, &state_.column, &state_.active, &state_.valid}) t->narrow(0, slot, 1).zero_();
}

GenerateResult Model::generate(const std::vector<std::vector<std::int64_t>>& prompts, const GenerateOptions& o) {
  if (prompts.empty()) throw UsageError("no prompt given");
  if (o.max_new_tokens < 1) throw UsageError(cat("max new tokens must be >= 1, got ", o.max_new_tokens));
  const auto batch = static_cast<std::int64_t>(prompts.size());
  std::int64_t p = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) throw UsageError(cat("prompt ", i, " is empty"));
    for (auto id : prompts[i])
      if (id < 0 || id >= config().vocab_size)
        throw UsageError(cat("token id ", id, " in prompt ", i, " is outside the vocabulary [0, ", config().vocab_size, ")"));
    p = std::max<std::int64_t>(p, static_cast<std::int64_t>(prompts[i].size()));
  }
  allocate_cache(batch, p + o.max_new_tokens);
  reset_cache();

  torch::Tensor ids = torch::zeros({batch, p}, torch::kInt64);   // [B, P] left-padded with 0
  torch::Tensor mask = torch::zeros({batch, p}, torch::kInt64);  // [B, P]
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto n = static_cast<std::int64_t>(prompts[b].size());
    ids[b].narrow(0, p - n, n).copy_(torch::tensor(prompts[b], torch::kInt64));
    mask[b].narrow(0, p - n, n).fill_(1);
  }

  Sampler sampler(o.sampling, device_);
  const auto& eos = config().eos_token_ids;
  GenerateResult out;
  out.tokens.resize(batch);
  std::vector<bool> done(batch, false);
  torch::Tensor logits = prefill(ids, mask);  // [B, V]
  out.last_logits = logits.cpu();
  for (std::int64_t step = 0; step < o.max_new_tokens; ++step) {
    torch::Tensor next = sampler.sample(logits);  // [B] int64
    const torch::Tensor host = next.cpu();        // generate() is not timed: one sync per token is fine
    bool all_done = true;
    for (std::int64_t b = 0; b < batch; ++b) {
      if (done[b]) continue;
      const std::int64_t id = host[b].item<std::int64_t>();
      out.tokens[b].push_back(id);
      if (!o.ignore_eos && std::find(eos.begin(), eos.end(), id) != eos.end()) done[b] = true;
      all_done = all_done && done[b];
    }
    if (all_done || step + 1 == o.max_new_tokens) break;
    logits = decode_step(next);
  }
  return out;
}

}  // namespace llmbench
