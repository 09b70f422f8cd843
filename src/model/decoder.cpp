#include "llmbench/model/decoder.h"

#include "llmbench/base/error.h"
#include "llmbench/base/switch.h"
#include "llmbench/model/fused_ops.h"
#include "llmbench/model/fused_prefill.h"
#include "llmbench/model/linear.h"

namespace llmbench {

DecodeState DecodeState::view(std::int64_t row, std::int64_t rows, std::int64_t columns) const {
  return {positions.narrow(0, row, rows), column.narrow(0, row, rows), active.narrow(0, row, rows),
          valid.narrow(0, row, rows).narrow(1, 0, columns)};
}

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  torch::Tensor h = x.to(torch::kFloat32);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * h.to(x.scalar_type());
}

torch::Tensor Decoder::row_parallel(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                                    const torch::Tensor& b) const {
  if (!all_reduce_) return linear(x, w, scale, b, paths_);
  torch::Tensor y = linear(x, w, scale, {}, paths_);  // this rank's partial sum
  all_reduce_(y);
  return b.defined() ? y + b : y;
}

// The decode step's row-parallel projection and the residual add + next norm after it: residual += x · wᵀ,
// returns rms_norm(residual) · norm. Where cuBLASLt would split K (one rank; LLMBENCH_SPLITK_FUSE), the
// norm kernel sums the GEMM's float partials itself (linear_partials), one kernel fewer.
torch::Tensor Decoder::project_add_norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                                        const torch::Tensor& bias, torch::Tensor& residual,
                                        const torch::Tensor& norm) const {
  if (!all_reduce_) {
    torch::Tensor partials = linear_partials(x, w, scale, bias, paths_);  // [S, B, 1, H] float32 or undefined
    if (partials.defined()) {
      std::vector<std::int64_t> sizes{partials.size(0)};
      sizes.insert(sizes.end(), residual.sizes().begin(), residual.sizes().end());
      return fused::add_rms_norm_partials(partials.view(sizes), residual, norm, config_.rms_norm_eps);
    }
  }
  torch::Tensor y = row_parallel(x, w, scale, bias);      // [B, 1, H]
  fused::add_rms_norm_(y, residual, norm, config_.rms_norm_eps);  // residual += y; y = norm
  return y;
}

template <class Attend>
torch::Tensor Decoder::layer(std::int64_t i, const torch::Tensor& x, const torch::Tensor& cos,
                             const torch::Tensor& sin, Attend&& attend) const {
  const LayerWeights& w = weights_.layers[i];
  const auto b = x.size(0), s = x.size(1), d = config_.head_dim;
  const auto hq = config_.num_heads, hkv = config_.num_kv_heads;

  torch::Tensor h = rms_norm(x, w.input_norm, config_.rms_norm_eps);           // [B, S, H]
  torch::Tensor qkv = linear(h, w.qkv, w.qkv_scale, w.qkv_bias, paths_);       // [B, S, (Hq + 2 Hkv) D]
  auto parts = qkv.split({hq * d, hkv * d, hkv * d}, -1);
  torch::Tensor q = parts[0].view({b, s, hq, d}).transpose(1, 2);              // [B, Hq, S, D]
  torch::Tensor k = parts[1].view({b, s, hkv, d}).transpose(1, 2);             // [B, Hkv, S, D]
  torch::Tensor v = parts[2].view({b, s, hkv, d}).transpose(1, 2);             // [B, Hkv, S, D]
  q = apply_rope(q, cos, sin);
  k = apply_rope(k, cos, sin);
  torch::Tensor a = attend(i, q, k, v);                                        // [B, Hq, S, D]
  a = a.transpose(1, 2).reshape({b, s, hq * d});                               // [B, S, Hq D]
  torch::Tensor out = x + row_parallel(a, w.o, w.o_scale, w.o_bias);        // [B, S, H]

  h = rms_norm(out, w.post_norm, config_.rms_norm_eps);
  auto gu = linear(h, w.gate_up, w.gate_up_scale, {}, paths_).chunk(2, -1);  // 2 × [B, S, I]
  return out + row_parallel(torch::silu(gu[0]) * gu[1], w.down, w.down_scale);
}

torch::Tensor Decoder::head(const torch::Tensor& h) const {
  // The GEMV where it applies (a quantized head; a model-dtype head at one row), else cuBLAS or
  // dequantize-then-GEMM.
  return linear(h, weights_.lm_head, weights_.lm_head_scale, {}, paths_).to(torch::kFloat32);  // [R, V]
}

torch::Tensor Decoder::logits(const torch::Tensor& last_hidden) const {
  torch::Tensor h = rms_norm(last_hidden, weights_.final_norm, config_.rms_norm_eps);  // [B, H]
  return head(h);                                                                  // [B, V]
}

torch::Tensor Decoder::prefill(const torch::Tensor& ids, const torch::Tensor& attention_mask, const Rope& rope,
                               KvCache& cache, DecodeState& state) const {
  torch::Tensor x = prefill_hidden(ids, attention_mask, rope, cache, state);  // [B, P, H]
  return logits(x.select(1, x.size(1) - 1));
}

torch::Tensor Decoder::final_norm(const torch::Tensor& hidden) const {
  return rms_norm(hidden, weights_.final_norm, config_.rms_norm_eps);
}

torch::Tensor Decoder::prefill_hidden(const torch::Tensor& ids, const torch::Tensor& attention_mask, const Rope& rope,
                                      KvCache& cache, DecodeState& state) const {
  torch::NoGradGuard no_grad;
  const auto p = ids.size(1);
  const bool unpadded = !attention_mask.defined();  // all ones, known on the host
  torch::Tensor mask = unpadded ? torch::ones_like(ids, ids.options().dtype(torch::kInt64))
                                : attention_mask.to(torch::kInt64);                  // [B, P]
  torch::Tensor positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1);           // [B, P]
  auto [cos, sin] = rope.cos_sin(positions);                                          // [B, 1, P, D]
  AttnMask allowed = prefill_mask(mask, unpadded);                                    // [B, 1, P, P] + facts
  allowed.fused = fused_active(weights_.embed, rope);  // eager tiles' softmax in one kernel

  torch::Tensor x = torch::embedding(weights_.embed, ids);                            // [B, P, H]
  auto attend = [&](std::int64_t i, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
    cache.write_prefix(i, k, v);
    return attention(attn_, q, k, v, allowed);  // prefill attends over its own P columns
  };
  if (fused_ && rope.has_tables() && fused::uses_kernels(x))
    x = prefill_layers_fused(x, positions, rope, cache, allowed, attend);
  else
    for (std::int64_t i = 0; i < config_.num_layers; ++i) x = layer(i, x, cos, sin, attend);

  // The next column is one past each row's last real token: P with left padding, the row's length with
  // right padding (the slot engine's batched prefill), where the pad columns are overwritten by decode.
  torch::Tensor after = torch::arange(1, p + 1, mask.options()).view({1, p});        // [1, P]
  state.valid.zero_();
  state.valid.narrow(1, 0, p).copy_(mask.to(torch::kBool));
  state.column.copy_((mask * after).amax(-1));
  state.active.fill_(1);
  state.positions.copy_(mask.sum(-1));
  return x;
}

// The layers of `layer` with the small ops fused, for S ≥ 1 (prefill): RMSNorm, the residual add folded
// into the next RMSNorm, RoPE with the q/k/v split and transposes in one kernel, SiLU·mul. The same
// roundings as the plain ops except where the kernels document otherwise (fused_ops.h).
//
// The prefill's own copies (Qwen2.5-7B at 8,192 tokens: 84 copies, 3.2 ms of a 198 ms prefill on the H200,
// 0.3 ms of 13.4 at 512): RoPE writes k and v into the cache's first P columns (write_prefix then has
// nothing to copy) and, for sdpa, q seq-major so that the attention output is already [B, P, Hq·D].
// Measured (H200, one A/B invocation, docs/performance.md session 15): sdpa TTFT at 512 tokens −2 to −3 %;
// eager and the 8,192-token sdpa prefill within noise. LLMBENCH_PREFILL_DIRECT=0 keeps the copies (A/B).
namespace {
bool prefill_direct() { return env_switch("LLMBENCH_PREFILL_DIRECT", {"1", "0"}) == 0; }
}  // namespace

template <class Attend>
torch::Tensor Decoder::prefill_layers_fused(const torch::Tensor& x, const torch::Tensor& positions, const Rope& rope,
                                            KvCache& cache, const AttnMask& mask, Attend&& attend) const {
  const auto hq = config_.num_heads, hkv = config_.num_kv_heads, n = config_.num_layers;
  const auto b = x.size(0), s = x.size(1);
  const bool direct = prefill_direct();
  const bool kv_direct = direct && !cache.fp8() && cache.keys(0).size(0) == b && cache.keys(0).size(2) >= s &&
                         cache.keys(0).scalar_type() == x.scalar_type();
  fused::PrefillQkvDest dest;
  dest.seq_major_q = direct && attn_ == AttnImpl::sdpa && mask.causal && !mask.padded;
  torch::Tensor residual = x;  // [B, P, H]: the embedding output, updated in place
  torch::Tensor h = fused::rms_norm(residual, weights_.layers[0].input_norm, config_.rms_norm_eps);  // [B, P, H]
  for (std::int64_t i = 0; i < n; ++i) {
    const LayerWeights& w = weights_.layers[i];
    torch::Tensor qkv = linear(h, w.qkv, w.qkv_scale, {}, paths_);                   // [B, P, (Hq + 2 Hkv) D]
    if (kv_direct) {
      dest.k = cache.keys(i).narrow(2, 0, s);    // [B, Hkv, P, D], T_max·D apart per head
      dest.v = cache.values(i).narrow(2, 0, s);  // [B, Hkv, P, D]
    }
    fused::PrefillQkv p =
        fused::rope_split_qkv(qkv, rope.cos_table(), rope.sin_table(), positions, hq, hkv, w.qkv_bias, dest);  // + bias
    torch::Tensor a = fused::merge_heads(attend(i, p.q, p.k, p.v));                   // [B, P, Hq D]
    torch::Tensor o = row_parallel(a, w.o, w.o_scale, w.o_bias);                       // [B, P, H]
    fused::add_rms_norm_(o, residual, w.post_norm, config_.rms_norm_eps);              // residual += o; norm
    torch::Tensor m = fused::silu_mul(linear(o, w.gate_up, w.gate_up_scale, {}, paths_));  // [B, P, I]
    torch::Tensor down = row_parallel(m, w.down, w.down_scale);                        // [B, P, H]
    if (i + 1 == n) {
      residual.add_(down);  // the pre-norm hidden states, as layer() returns them
      break;
    }
    fused::add_rms_norm_(down, residual, weights_.layers[i + 1].input_norm, config_.rms_norm_eps);
    h = down;
  }
  return residual;
}

// Any --attn: it selects the prefill's attention. A decode step has one query row per sequence over the
// cache, where eager and sdpa compute the same softmax(q·Kᵀ/√D + mask)·V; the fused kernel computes it
// with eager's rounding (tests/gpu/test_decode_paths.cpp holds both models to their plain path).
bool Decoder::fused_active(const torch::Tensor& x, const Rope& rope) const {
  return fused_ && rope.has_tables() && fused::uses_kernels(x);
}

// The same step as decode_step with the small ops fused: per layer two GEMMs around the attention
// kernel and two around the MLP, with the residual adds folded into the next RMSNorm.
torch::Tensor Decoder::decode_step_fused(const torch::Tensor& tokens, const Rope& rope, KvCache& cache,
                                         DecodeState& state) const {
  const auto b = tokens.size(0), n = config_.num_layers;
  const auto hq = config_.num_heads, hkv = config_.num_kv_heads, d = config_.head_dim;
  state.valid.scatter_(1, state.column.view({b, 1}), true);                           // the new token is visible

  torch::Tensor residual = torch::embedding(weights_.embed, tokens.view({b, 1}));     // [B, 1, H]
  torch::Tensor h = fused::rms_norm(residual, weights_.layers[0].input_norm, config_.rms_norm_eps);  // [B, 1, H]
  for (std::int64_t i = 0; i < n; ++i) {
    const LayerWeights& w = weights_.layers[i];
    torch::Tensor keys = cache.keys(i), values = cache.values(i);                     // [B, Hkv, T_max, D] dtype or fp8
    torch::Tensor k_scale = cache.key_scales(i), v_scale = cache.value_scales(i);     // [B, Hkv] float32 (fp8 only)
    // The qkv bias: in the GEMV's epilogue when the GEMV runs, else added by the RoPE kernel (one launch
    // fewer per layer; the same two roundings as cuBLAS's matmul followed by torch's broadcast add).
    const bool bias_in_gemv = w.qkv_bias.defined() && gemv_applies(h, w.qkv, w.qkv_scale, w.qkv_bias, paths_);
    torch::Tensor qkv = linear(h, w.qkv, w.qkv_scale, bias_in_gemv ? w.qkv_bias : torch::Tensor(), paths_);  // [B, 1, (Hq + 2 Hkv) D]
    torch::Tensor q = fused::rope_qkv_cache(qkv, bias_in_gemv ? torch::Tensor() : w.qkv_bias, rope.cos_table(),
                                            rope.sin_table(), state.positions, state.column, keys, values, hq, hkv,
                                            k_scale, v_scale);  // [B, Hq, D]
    torch::Tensor a = fused::decode_attention(q, keys, values, state.valid, k_scale, v_scale,
                                               state.column);  // [B, Hq, D]
    torch::Tensor o = project_add_norm(a.view({b, 1, hq * d}), w.o, w.o_scale, w.o_bias, residual, w.post_norm);  // [B, 1, H]
    torch::Tensor m = fused::silu_mul(linear(o, w.gate_up, w.gate_up_scale, {}, paths_));  // [B, 1, I]
    const torch::Tensor& next_norm = i + 1 < n ? weights_.layers[i + 1].input_norm : weights_.final_norm;
    h = project_add_norm(m, w.down, w.down_scale, {}, residual, next_norm);           // [B, 1, H]
  }
  state.positions.add_(state.active);
  state.column.add_(state.active);
  return head(h.select(1, 0));  // [B, V]
}

torch::Tensor Decoder::decode_step(const torch::Tensor& tokens, const Rope& rope, KvCache& cache,
                                   DecodeState& state) const {
  torch::NoGradGuard no_grad;
  if (fused_active(weights_.embed, rope)) return decode_step_fused(tokens, rope, cache, state);
  const auto b = tokens.size(0), t = cache.max_len();
  state.valid.scatter_(1, state.column.view({b, 1}), true);                           // the new token is visible
  auto [cos, sin] = rope.cos_sin(state.positions.view({b, 1}));                       // [B, 1, 1, D]
  AttnMask allowed;
  allowed.allowed = state.valid.view({b, 1, 1, t});                                   // [B, 1, 1, T_max]

  torch::Tensor x = torch::embedding(weights_.embed, tokens.view({b, 1}));            // [B, 1, H]
  auto attend = [&](std::int64_t i, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
    cache.write_column(i, state.column, k, v);
    return attention(attn_, q, cache.read_keys(i), cache.read_values(i), allowed);  // the whole cache (fp8: dequantized)
  };
  for (std::int64_t i = 0; i < config_.num_layers; ++i) x = layer(i, x, cos, sin, attend);

  state.positions.add_(state.active);
  state.column.add_(state.active);
  return logits(x.select(1, 0));
}

torch::Tensor Decoder::mixed_step(const torch::Tensor& ids, const std::vector<ChunkSpan>& chunks, const Rope& rope,
                                  KvCache& cache, DecodeState& state) const {
  torch::NoGradGuard no_grad;
  // An fp8 cache takes its per-head scales from a whole prompt (write_prefix): a prompt in chunks has none
  // to give, so chunked prefill keeps to the model-dtype cache (the serving engine never sets fp8).
  if (cache.fp8()) throw Error("chunked prefill (mixed_step) needs a bf16 KV cache; --kv-dtype fp8 is not supported there");
  const auto r = cache.batch(), n = ids.size(0);
  const auto i64 = ids.options();
  // The packed tokens: each decode row's own, then each chunk's columns and rows (host → device, one copy).
  std::vector<std::int64_t> chunk_info_host, chunk_rows, last_token(r);  // last_token[row]: the packed token
  for (std::int64_t row = 0; row < r; ++row) last_token[row] = row;     // whose hidden state gives row's logits
  std::int64_t offset = r;
  for (const ChunkSpan& c : chunks) {
    for (std::int64_t j = 0; j < c.length; ++j) chunk_info_host.push_back(c.start + j);
    chunk_rows.insert(chunk_rows.end(), c.length, c.row);
    offset += c.length;
    last_token[c.row] = offset - 1;
  }
  const std::int64_t packed = n - r;  // the chunks' tokens
  chunk_info_host.insert(chunk_info_host.end(), chunk_rows.begin(), chunk_rows.end());
  torch::Tensor chunk_info = torch::tensor(chunk_info_host, torch::kInt64).to(ids.device());  // [2 Σ length]
  torch::Tensor positions = torch::cat({state.positions, chunk_info.narrow(0, 0, packed)}).view({1, n});  // [1, N]
  // RoPE with the q/k/v split in one kernel where the tables exist (the prefill's), else the plain ops.
  const bool rope_tables = rope.has_tables();
  // Direct (the default; LLMBENCH_MIXED_DIRECT=0: the copies, for A/B runs): RoPE writes every token's k / v
  // straight into its row and column of the cache (a decode row that is not running writes nothing) and q
  // token-major, so the decode rows' queries are a slice and the attention outputs land in the o
  // projection's input; without it, each layer moved q, k, v and the outputs through ≈ 15 copies.
  const bool direct = rope_tables && env_switch("LLMBENCH_MIXED_DIRECT", {"1", "0"}) == 0;
  torch::Tensor kv_rows, kv_cols;  // [N] int64: where each token's k / v go
  if (direct) {
    kv_rows = torch::cat({torch::arange(r, i64), chunk_info.narrow(0, packed, packed)});
    kv_cols = torch::cat({torch::where(state.active.gt(0), state.column, torch::full_like(state.column, -1)),
                          chunk_info.narrow(0, 0, packed)});
  }
  torch::Tensor cos, sin;                                                             // [1, 1, N, D]
  if (!rope_tables) std::tie(cos, sin) = rope.cos_sin(positions);
  state.valid.scatter_(1, state.column.view({r, 1}), true);                           // decode rows' new token
  // Each chunk sees columns [0, start + j] from its token j: [1, 1, length, start + length] bool. A first
  // chunk (start 0) is a prefill over its own columns: causal, so sdpa may take its flash kernels and the
  // eager tiles skip the columns after their last row; every chunk's eager softmax runs in the prefill's
  // kernel where it applies.
  const bool fused_softmax = fused_active(weights_.embed, rope);
  std::vector<AttnMask> chunk_masks;
  for (const ChunkSpan& c : chunks) {
    torch::Tensor cols = torch::arange(c.start + c.length, i64).view({1, -1});        // [1, start + length]
    torch::Tensor last = torch::arange(c.start, c.start + c.length, i64).view({-1, 1});  // [length, 1]
    AttnMask m;
    m.allowed = (cols <= last).view({1, 1, c.length, c.start + c.length});
    m.causal = c.start == 0;
    m.padded = c.start != 0;
    m.lower_right = true;
    m.fused = fused_softmax;
    chunk_masks.push_back(m);
  }

  auto attend = [&](std::int64_t i, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
    torch::Tensor keys = cache.keys(i), values = cache.values(i);                    // [R, Hkv, T, D]
    // Decode rows first: every row's token goes to its column (an inactive chunk row's lands on the column
    // its chunk overwrites just below), then one query per row over the cache.
    torch::Tensor qd = q.narrow(2, 0, r).transpose(0, 2);                             // [R, Hq, 1, D]
    cache.write_column(i, state.column, k.narrow(2, 0, r).transpose(0, 2), v.narrow(2, 0, r).transpose(0, 2));
    torch::Tensor a = torch::empty_like(q);                                           // [1, Hq, N, D]
    a.narrow(2, 0, r).copy_(
        fused::decode_attention(qd.squeeze(2).contiguous(), keys, values, state.valid).transpose(0, 1).unsqueeze(0));
    std::int64_t o = r;
    for (std::size_t j = 0; j < chunks.size(); ++j) {
      const ChunkSpan& c = chunks[j];
      torch::Tensor row_k = keys.narrow(0, c.row, 1), row_v = values.narrow(0, c.row, 1);  // [1, Hkv, T, D]
      row_k.narrow(2, c.start, c.length).copy_(k.narrow(2, o, c.length));
      row_v.narrow(2, c.start, c.length).copy_(v.narrow(2, o, c.length));
      const std::int64_t seen = c.start + c.length;
      a.narrow(2, o, c.length)
          .copy_(attention(attn_, q.narrow(2, o, c.length), row_k.narrow(2, 0, seen), row_v.narrow(2, 0, seen),
                           chunk_masks[j]));                                         // [1, Hq, length, D]
      o += c.length;
    }
    return a;
  };
  // Direct: q [1, Hq, N, D] (token-major memory), k / v already in the cache → [1, N, Hq·D].
  auto attend_direct = [&](std::int64_t i, const torch::Tensor& q) {
    torch::Tensor keys = cache.keys(i), values = cache.values(i);                    // [R, Hkv, T, D]
    torch::Tensor qt = q.select(0, 0).transpose(0, 1);                               // [N, Hq, D]
    torch::Tensor a = torch::empty({n, q.size(1), q.size(3)}, q.options());          // [N, Hq, D]
    torch::Tensor qd = qt.narrow(0, 0, r);                                           // [R, Hq, D]
    a.narrow(0, 0, r).copy_(fused::decode_attention(qd.contiguous(), keys, values, state.valid));
    std::int64_t o = r;
    for (std::size_t j = 0; j < chunks.size(); ++j) {
      const ChunkSpan& c = chunks[j];
      const std::int64_t seen = c.start + c.length;
      torch::Tensor res = attention(attn_, q.narrow(2, o, c.length), keys.narrow(0, c.row, 1).narrow(2, 0, seen),
                                    values.narrow(0, c.row, 1).narrow(2, 0, seen), chunk_masks[j]);  // [1, Hq, length, D]
      a.narrow(0, o, c.length).copy_(res.select(0, 0).transpose(0, 1));
      o += c.length;
    }
    return a.view({1, n, a.size(1) * a.size(2)});
  };
  // The layers as decode_step_fused runs them (residual stream apart, add + norm fused; the plain ops where
  // the kernels do not apply), over the N packed tokens.
  const auto hq = config_.num_heads, hkv = config_.num_kv_heads, d = config_.head_dim, layers = config_.num_layers;
  torch::Tensor residual = torch::embedding(weights_.embed, ids.view({1, n}));       // [1, N, H]
  torch::Tensor h = fused::rms_norm(residual, weights_.layers[0].input_norm, config_.rms_norm_eps);  // [1, N, H]
  for (std::int64_t i = 0; i < layers; ++i) {
    const LayerWeights& w = weights_.layers[i];
    torch::Tensor q, k, v;  // [1, Hq, N, D], [1, Hkv, N, D], [1, Hkv, N, D]
    torch::Tensor a;        // [1, N, Hq D]
    if (direct) {
      torch::Tensor qkv = linear(h, w.qkv, w.qkv_scale, {}, paths_);                  // [1, N, (Hq + 2 Hkv) D]
      fused::PrefillQkvDest dest;
      dest.k = cache.keys(i);
      dest.v = cache.values(i);
      dest.rows = kv_rows;
      dest.columns = kv_cols;
      dest.seq_major_q = true;
      q = fused::rope_split_qkv(qkv, rope.cos_table(), rope.sin_table(), positions, hq, hkv, w.qkv_bias, dest).q;
      a = attend_direct(i, q);
    } else if (rope_tables) {
      torch::Tensor qkv = linear(h, w.qkv, w.qkv_scale, {}, paths_);                  // [1, N, (Hq + 2 Hkv) D]
      fused::PrefillQkv p =
          fused::rope_split_qkv(qkv, rope.cos_table(), rope.sin_table(), positions, hq, hkv, w.qkv_bias);  // + bias
      q = p.q, k = p.k, v = p.v;
    } else {
      torch::Tensor qkv = linear(h, w.qkv, w.qkv_scale, w.qkv_bias, paths_);         // [1, N, (Hq + 2 Hkv) D]
      auto parts = qkv.split({hq * d, hkv * d, hkv * d}, -1);
      q = apply_rope(parts[0].view({1, n, hq, d}).transpose(1, 2), cos, sin);
      k = apply_rope(parts[1].view({1, n, hkv, d}).transpose(1, 2), cos, sin);
      v = parts[2].view({1, n, hkv, d}).transpose(1, 2);
    }
    if (!direct) a = attend(i, q, k, v).transpose(1, 2).reshape({1, n, hq * d});
    torch::Tensor o = row_parallel(a, w.o, w.o_scale, w.o_bias);                            // [1, N, H]
    fused::add_rms_norm_(o, residual, w.post_norm, config_.rms_norm_eps);                   // residual += o; norm
    torch::Tensor m = fused::silu_mul(linear(o, w.gate_up, w.gate_up_scale, {}, paths_));   // [1, N, I]
    torch::Tensor down = row_parallel(m, w.down, w.down_scale);                             // [1, N, H]
    const torch::Tensor& next_norm = i + 1 < layers ? weights_.layers[i + 1].input_norm : weights_.final_norm;
    fused::add_rms_norm_(down, residual, next_norm, config_.rms_norm_eps);                  // residual += down; norm
    h = down;
  }

  state.positions.add_(state.active);
  state.column.add_(state.active);
  for (const ChunkSpan& c : chunks) {
    state.valid.narrow(0, c.row, 1).narrow(1, c.start, c.length).fill_(true);
    state.column.narrow(0, c.row, 1).fill_(c.start + c.length);
    state.positions.narrow(0, c.row, 1).fill_(c.start + c.length);
    state.active.narrow(0, c.row, 1).fill_(c.last ? 1 : 0);
  }
  torch::Tensor index = torch::tensor(last_token, torch::kInt64).to(ids.device());  // [R]
  return head(h.select(0, 0).index_select(0, index));  // [R, V] (h is normed)
}

}  // namespace llmbench
