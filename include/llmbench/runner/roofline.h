#pragma once
#include <optional>

#include "llmbench/base/env.h"
#include "llmbench/bench/memory.h"

namespace llmbench {

// Bytes one decode step must read: every weight except the embedding table (looked up by index), plus
// the KV cache at the mean context P + N/2. matmul_elem_bytes > 0: the quantized matmul weights (bench/
// memory.h weight_bytes: 1 byte per element plus a float32 scale per row); kv_elem_bytes > 0: the KV
// cache's element size (1: fp8, whose scales are too few to count).
double decode_bytes_per_step(const ModelShape& s, int batch, int prompt_len, int max_new_tokens, int elem_bytes,
                             int matmul_elem_bytes = 0, int kv_elem_bytes = 0);

// FLOPs of the prefill: 2 per matmul weight per prompt token for the layers (norms and biases ignored), the lm_head on the last position only,
// and eager attention's two [P x P] products per head (the full square, as eager computes it).
double prefill_flops(const ModelShape& s, int batch, int prompt_len);

// MBU = bytes / TPOT / copy bandwidth; MFU = FLOPs / prefill time / matmul rate. Empty without ceilings.
std::optional<double> mbu(double bytes_per_step, double tpot_ms, const std::optional<Ceilings>& c);
std::optional<double> mfu(double flops, double prefill_ms, const std::optional<Ceilings>& c);

}  // namespace llmbench
