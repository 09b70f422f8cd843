#pragma once
#include <string>

#include <torch/torch.h>

#include "llmbench/model/model.h"
#include "llmbench/report/results.h"

// Output verification (README "Verification"): the tokens a timed run generated are checked against the
// reference path — the plain prefill pass (no CUDA graph, no fused kernels) with the lm_head in float32 —
// teacher-forced on those same tokens, so one forward pass covers every generated position.
namespace llmbench {

// The largest gap allowed at any position, a fraction of the reference logit range: bfloat16 and float16
// 0.10 (HF transformers' own bf16 logits, against its float32 model, showed worst gaps of 3.6–5.3 % of the
// range at 7B/8B widths), float32 0.01.
double verification_tolerance(const std::string& dtype);

// prompts [B, P] int64 and generated [B, N] int64 (any device) → the comparison. The model's cache must
// hold P + N − 1 columns; it is overwritten (reset it before the next generate).
Verification verify_greedy(Model& model, const torch::Tensor& prompts, const torch::Tensor& generated,
                           double tolerance);

}  // namespace llmbench
