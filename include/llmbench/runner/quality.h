#pragma once
#include <torch/torch.h>

#include "llmbench/model/model.h"
#include "llmbench/report/results.h"

// The quality cost of quantized weights (docs/quantization.md): the point's model against the reference
// (the same model, unquantized), both teacher-forced on the reference's greedy tokens.
namespace llmbench {

// prompts [B, P] int64 (no padding, any device); the reference generates N = max_new_tokens greedy tokens
// after them (EOS ignored), then both models run the plain prefill pass over prompt + the first N − 1 of
// those tokens and their float32 logits at the N generated positions are compared. Overwrites both
// models' caches (reallocating them for [B, P + N] when needed): reset before the next generate.
// A model with an fp8 KV cache is compared through its decode path instead (the prefill pass never reads
// the cache): both models prefill the prompts and take N − 1 decode steps fed the reference's tokens, and
// the logits of the prefill and of every step are compared (the lm_head in the model dtype on both sides).
// The reference's cache must then be unquantized.
Quality measure_quality(Model& model, Model& reference, const torch::Tensor& prompts, std::int64_t max_new_tokens);

// The figures of Quality for logits [M, V] against reference logits [M, V] (float32, same device).
Quality compare_logits(const torch::Tensor& logits, const torch::Tensor& reference);

}  // namespace llmbench
