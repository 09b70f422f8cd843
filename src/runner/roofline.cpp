#include "llmbench/runner/roofline.h"

namespace llmbench {

double decode_bytes_per_step(const ModelShape& s, int batch, int prompt_len, int max_new_tokens, int elem_bytes) {
  ModelSize m = model_size(s);
  double weights = static_cast<double>(m.params - m.embedding_params) * elem_bytes;
  if (s.tied_embeddings) weights += static_cast<double>(m.embedding_params) * elem_bytes;  // read as lm_head
  double mean_context = prompt_len + max_new_tokens / 2.0;
  double kv = 2.0 * s.layers * batch * s.kv_heads * s.head_dim * elem_bytes * mean_context;
  return weights + kv;
}

double prefill_flops(const ModelShape& s, int batch, int prompt_len) {
  ModelShape layers_only = s;
  layers_only.tied_embeddings = true;  // count no lm_head in the per-token part
  ModelSize m = model_size(layers_only);
  double per_token = 2.0 * static_cast<double>(m.params - m.embedding_params);
  double tokens = static_cast<double>(batch) * prompt_len;
  double lm_head = 2.0 * s.vocab * s.hidden * batch;
  double attention = 4.0 * s.layers * batch * s.heads * static_cast<double>(prompt_len) * prompt_len * s.head_dim;
  return per_token * tokens + lm_head + attention;
}

std::optional<double> mbu(double bytes_per_step, double tpot_ms, const std::optional<Ceilings>& c) {
  if (!c || c->copy_gb_s <= 0 || tpot_ms <= 0) return std::nullopt;
  return bytes_per_step / (tpot_ms * 1e-3) / (c->copy_gb_s * 1e9);
}

std::optional<double> mfu(double flops, double prefill_ms, const std::optional<Ceilings>& c) {
  if (!c || c->matmul_tflop_s <= 0 || prefill_ms <= 0) return std::nullopt;
  return flops / (prefill_ms * 1e-3) / (c->matmul_tflop_s * 1e12);
}

}  // namespace llmbench
