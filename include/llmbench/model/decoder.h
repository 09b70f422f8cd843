#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include <torch/torch.h>

#include "llmbench/model/attention.h"
#include "llmbench/model/kv_cache.h"
#include "llmbench/model/linear.h"
#include "llmbench/model/model_config.h"
#include "llmbench/model/rope.h"
#include "llmbench/model/weights.h"

// The Llama/Qwen2 decoder: Embedding → N × (RMSNorm → attention → residual → RMSNorm → SwiGLU →
// residual) → RMSNorm → lm_head. prefill() and decode_step() are separate so the speed work can
// capture decode_step() in a CUDA graph: its shapes depend only on (B, T_max), it reads its positions
// from device tensors and it never syncs with the host.
namespace llmbench {

// Per-run state on the device, updated in place by prefill/decode_step. Each row has its own cache column
// (the slot engine's rows hold requests of different lengths); the offline batch has them all equal.
// Inactive rows (free slots inside a decode bucket) stay at column 0, position 0: they compute garbage
// that nobody reads and never advance, so they cannot run off the cache.
struct DecodeState {
  torch::Tensor positions;  // [B] int64: the position id the next token of each row gets
  torch::Tensor column;     // [B] int64: the cache column the next token of each row is written to
  torch::Tensor active;     // [B] int64: 1 running, 0 free; a decode step advances column/positions by it
  torch::Tensor valid;      // [B, T_max] bool: cache columns holding real (non-pad) tokens

  // Rows [row, row + rows) and columns [0, columns): views of the same storage.
  DecodeState view(std::int64_t row, std::int64_t rows, std::int64_t columns) const;
};

// One prompt chunk of a mixed step (chunked prefill): `length` prompt tokens of cache row `row` written to
// columns [start, start + length); `last` when they complete the prompt (the row decodes from the next step).
struct ChunkSpan {
  std::int64_t row = 0;
  std::int64_t start = 0;
  std::int64_t length = 0;
  bool last = false;
};

class Decoder {
 public:
  Decoder(const ModelConfig& config, const Weights& weights, AttnImpl attn)
      : config_(config), weights_(weights), attn_(attn) {}

  // ids [B, P] int64, attention_mask [B, P] (1: token, 0: left pad; undefined: all ones, which then needs no
  // read-back of the mask's facts, so the prefill has no host sync) → last-position logits [B, V] float32.
  // Position ids follow HF: cumsum(mask) − 1, pads get 1. Writes cache columns [0, P), marks every row
  // active; each row's next column is one past its last real token (P here).
  torch::Tensor prefill(const torch::Tensor& ids, const torch::Tensor& attention_mask, const Rope& rope,
                        KvCache& cache, DecodeState& state) const;

  // The same pass without the lm_head: hidden states of every position before the final norm, [B, P, H].
  // The mask may also be right-padded (1 then 0 per row): the real tokens never attend to the pads (causal),
  // so each row computes what it would alone, and its next column is its length.
  torch::Tensor prefill_hidden(const torch::Tensor& ids, const torch::Tensor& attention_mask, const Rope& rope,
                               KvCache& cache, DecodeState& state) const;
  // hidden [..., H] → the final RMSNorm of it (model dtype), what the lm_head reads.
  torch::Tensor final_norm(const torch::Tensor& hidden) const;
  // Pre-norm hidden states [B, H] → logits [B, V] float32 (final norm + lm_head).
  torch::Tensor logits(const torch::Tensor& last_hidden) const;

  // tokens [B] int64 → logits [B, V] float32; writes each row's cache column state.column[b] (which must
  // be < cache.max_len() for active rows), then advances the active rows.
  torch::Tensor decode_step(const torch::Tensor& tokens, const Rope& rope, KvCache& cache, DecodeState& state) const;

  // Chunked prefill mixed into a decode step, one forward over R + Σ length tokens. ids [R + Σ length] int64:
  // the R decode inputs of rows [0, R) (the cache and state views' rows), then each chunk's prompt tokens in
  // the order of `chunks`. Active rows decode as decode_step does; a chunk's row (inactive until its last
  // chunk) gets its tokens written to columns [start, start + length) and attends causally over columns
  // [0, start + length); its column and position become start + length, and it turns active with its last
  // chunk. The matmuls run once over all tokens. → logits [R, V] float32: an active row's next-token logits,
  // a chunk row's logits after its chunk's last token (garbage for other inactive rows).
  // Needs start + length ≤ the cache view's columns and every row's column < them.
  // A model-dtype cache only: an fp8 cache (whose scales come from a whole prompt) throws Error.
  torch::Tensor mixed_step(const torch::Tensor& ids, const std::vector<ChunkSpan>& chunks, const Rope& rope,
                           KvCache& cache, DecodeState& state) const;

  void set_attn(AttnImpl attn) { attn_ = attn; }
  // Fused CUDA kernels in decode_step (add+RMSNorm, RoPE+KV write, SiLU·mul, decode attention) where
  // they apply (CUDA tensors, table RoPE), whichever prefill attention was chosen; the plain ops otherwise.
  void set_fused(bool fused) { fused_ = fused; }
  // True when decode_step takes the fused path for tensors like `x`.
  bool fused_active(const torch::Tensor& x, const Rope& rope) const;
  // How the qkv, o, gate_up and down matmuls run (llmbench/model/linear.h): GEMV kernel, fp8 GEMM.
  void set_linear_paths(const LinearPaths& paths) { paths_ = paths; }
  const LinearPaths& linear_paths() const { return paths_; }
  // Tensor parallelism (dist/shard.h): sums a row-parallel projection's partial output over the ranks,
  // in place, after o_proj and after down_proj; their biases are added once, after it. Unset: one rank.
  void set_all_reduce(std::function<void(torch::Tensor&)> reduce) { all_reduce_ = std::move(reduce); }

 private:
  // x [B, S, H] through layer `i`; attend(i, q [B, Hq, S, D], k, v [B, Hkv, S, D]) stores this layer's
  // k/v in the cache and returns the attention output [B, Hq, S, D].
  template <class Attend>
  torch::Tensor layer(std::int64_t i, const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                      Attend&& attend) const;
  // Normed hidden states h [R, H] → logits [R, V] float32 through the lm_head (quantized or not).
  torch::Tensor head(const torch::Tensor& h) const;
  // x [..., K / tp] · w [H, K / tp]ᵀ (quantized: · scale) summed over the ranks (+ b [H]) → [..., H].
  torch::Tensor row_parallel(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                             const torch::Tensor& b = {}) const;
  // row_parallel, then residual [..., H] += the product and → rms_norm(residual) · norm [H] (the decode step).
  torch::Tensor project_add_norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& scale,
                                 const torch::Tensor& bias, torch::Tensor& residual, const torch::Tensor& norm) const;
  torch::Tensor decode_step_fused(const torch::Tensor& tokens, const Rope& rope, KvCache& cache, DecodeState& state) const;
  // Every layer over x [B, P, H] (prefill) with the fused kernels; positions [B, P] int64. → [B, P, H].
  // RoPE writes k and v straight into `cache` when it can hold them as they are (a model-dtype cache of B
  // rows), and q seq-major for an unpadded causal sdpa prefill (fused::PrefillQkvDest).
  template <class Attend>
  torch::Tensor prefill_layers_fused(const torch::Tensor& x, const torch::Tensor& positions, const Rope& rope,
                                     KvCache& cache, const AttnMask& mask, Attend&& attend) const;

  const ModelConfig& config_;
  const Weights& weights_;
  AttnImpl attn_;
  bool fused_ = false;
  LinearPaths paths_;
  std::function<void(torch::Tensor&)> all_reduce_;
};

// HF's RMSNorm: normalise in float32, cast back, then scale.
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

}  // namespace llmbench
