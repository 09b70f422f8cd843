#include "llmbench/model/decoder.h"

namespace llmbench {

namespace {

torch::Tensor dense(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b = {}) {
  return b.defined() ? torch::nn::functional::linear(x, w, b) : torch::nn::functional::linear(x, w);
}

}  // namespace

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  torch::Tensor h = x.to(torch::kFloat32);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * h.to(x.scalar_type());
}

template <class Write>
torch::Tensor Decoder::layer(std::int64_t i, const torch::Tensor& x, const torch::Tensor& cos,
                             const torch::Tensor& sin, const torch::Tensor& mask, Write&& write) const {
  const LayerWeights& w = weights_.layers[i];
  const auto b = x.size(0), s = x.size(1), d = config_.head_dim;
  const auto hq = config_.num_heads, hkv = config_.num_kv_heads;

  torch::Tensor h = rms_norm(x, w.input_norm, config_.rms_norm_eps);           // [B, S, H]
  torch::Tensor qkv = dense(h, w.qkv, w.qkv_bias);                            // [B, S, (Hq + 2 Hkv) D]
  auto parts = qkv.split({hq * d, hkv * d, hkv * d}, -1);
  torch::Tensor q = parts[0].view({b, s, hq, d}).transpose(1, 2);              // [B, Hq, S, D]
  torch::Tensor k = parts[1].view({b, s, hkv, d}).transpose(1, 2);             // [B, Hkv, S, D]
  torch::Tensor v = parts[2].view({b, s, hkv, d}).transpose(1, 2);             // [B, Hkv, S, D]
  q = apply_rope(q, cos, sin);
  k = apply_rope(k, cos, sin);
  auto [keys, values] = write(i, k, v);                                        // [B, Hkv, T, D] each
  torch::Tensor a = attention(attn_, q, keys, values, mask);                   // [B, Hq, S, D]
  a = a.transpose(1, 2).reshape({b, s, hq * d});                               // [B, S, Hq D]
  torch::Tensor out = x + dense(a, w.o, w.o_bias);                            // [B, S, H]

  h = rms_norm(out, w.post_norm, config_.rms_norm_eps);
  auto gu = dense(h, w.gate_up).chunk(2, -1);                             // 2 × [B, S, I]
  return out + dense(torch::silu(gu[0]) * gu[1], w.down);
}

torch::Tensor Decoder::logits(const torch::Tensor& last_hidden) const {
  torch::Tensor h = rms_norm(last_hidden, weights_.final_norm, config_.rms_norm_eps);  // [B, H]
  return dense(h, weights_.lm_head).to(torch::kFloat32);                          // [B, V]
}

torch::Tensor Decoder::prefill(const torch::Tensor& ids, const torch::Tensor& attention_mask, const Rope& rope,
                               KvCache& cache, DecodeState& state) const {
  torch::NoGradGuard no_grad;
  const auto p = ids.size(1);
  torch::Tensor mask = attention_mask.to(torch::kInt64);                               // [B, P]
  torch::Tensor positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1);           // [B, P]
  auto [cos, sin] = rope.cos_sin(positions);                                          // [B, 1, P, D]
  torch::Tensor causal = torch::ones({p, p}, ids.options().dtype(torch::kBool)).tril();  // [P, P]
  torch::Tensor allowed = causal.view({1, 1, p, p}).logical_and(mask.to(torch::kBool).view({-1, 1, 1, p}));  // [B, 1, P, P]

  torch::Tensor x = torch::embedding(weights_.embed, ids);                            // [B, P, H]
  auto write = [&](std::int64_t i, const torch::Tensor& k, const torch::Tensor& v) {
    cache.write_prefix(i, k, v);
    return std::make_pair(k, v);  // prefill attends over its own P columns
  };
  for (std::int64_t i = 0; i < config_.num_layers; ++i) x = layer(i, x, cos, sin, allowed, write);

  state.valid.zero_();
  state.valid.narrow(1, 0, p).copy_(mask.to(torch::kBool));
  state.column.fill_(p);
  state.positions.copy_(mask.sum(-1));
  return logits(x.select(1, p - 1));
}

torch::Tensor Decoder::decode_step(const torch::Tensor& tokens, const Rope& rope, KvCache& cache,
                                   DecodeState& state) const {
  torch::NoGradGuard no_grad;
  const auto b = tokens.size(0), t = cache.max_len();
  state.valid.index_fill_(1, state.column, true);                                     // the new token is visible
  auto [cos, sin] = rope.cos_sin(state.positions.view({b, 1}));                       // [B, 1, 1, D]
  torch::Tensor allowed = state.valid.view({b, 1, 1, t});                             // [B, 1, 1, T_max]

  torch::Tensor x = torch::embedding(weights_.embed, tokens.view({b, 1}));            // [B, 1, H]
  auto write = [&](std::int64_t i, const torch::Tensor& k, const torch::Tensor& v) {
    cache.write_column(i, state.column, k, v);
    return std::make_pair(cache.keys(i), cache.values(i));  // the whole preallocated cache
  };
  for (std::int64_t i = 0; i < config_.num_layers; ++i) x = layer(i, x, cos, sin, allowed, write);

  state.positions.add_(1);
  state.column.add_(1);
  return logits(x.select(1, 0));
}

}  // namespace llmbench
