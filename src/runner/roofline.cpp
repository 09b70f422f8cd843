#include "llmbench/runner/roofline.h"

namespace llmbench {

double decode_bytes_per_step(const ModelShape& s, int batch, int prompt_len, int max_new_tokens, int elem_bytes,
                             int matmul_elem_bytes, int kv_elem_bytes) {
  ModelSize m = model_size(s);
  double weights = static_cast<double>(weight_bytes(s, elem_bytes, matmul_elem_bytes)) -
                   static_cast<double>(m.embedding_params) * elem_bytes;
  if (s.tied_embeddings) weights += static_cast<double>(m.embedding_params) * elem_bytes;  // read as lm_head
  double mean_context = prompt_len + max_new_tokens / 2.0;
  const int kv_elem = kv_elem_bytes > 0 ? kv_elem_bytes : elem_bytes;
  double kv = 2.0 * s.layers * batch * s.kv_heads * s.head_dim * kv_elem * mean_context;
  return weights + kv;
}

double prefill_flops(const ModelShape& s, int batch, int prompt_len) {
  const double q = static_cast<double>(s.heads * s.head_dim), kv = static_cast<double>(s.kv_heads * s.head_dim);
  const double layer_matmul = s.hidden * q + 2 * s.hidden * kv + q * s.hidden + 3.0 * s.hidden * s.intermediate;
  const double tokens = static_cast<double>(batch) * prompt_len;
  const double lm_head = 2.0 * s.vocab * s.hidden * batch;
  const double attention = 4.0 * s.layers * batch * s.heads * static_cast<double>(prompt_len) * prompt_len * s.head_dim;
  return 2.0 * s.layers * layer_matmul * tokens + lm_head + attention;
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
