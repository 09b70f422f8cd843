#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "llmbench/dist/shard.h"
#include "llmbench/model/model_config.h"

// The decoder's tensors in our layout: q/k/v and gate/up fused at load so each is one GEMM.
namespace llmbench {

struct LayerWeights {
  torch::Tensor input_norm;  // [H]
  torch::Tensor qkv;         // [(Hq + 2 Hkv) D, H]  rows: q, then k, then v
  torch::Tensor qkv_bias;    // [(Hq + 2 Hkv) D] or undefined
  torch::Tensor o;           // [H, Hq D]
  torch::Tensor o_bias;      // [H] or undefined
  torch::Tensor post_norm;   // [H]
  torch::Tensor gate_up;     // [2 I, H]  rows: gate, then up
  torch::Tensor down;        // [H, I]
  // Quantized weights (llmbench/model/quantize.h): qkv, o, gate_up and down then hold int8 or
  // float8_e4m3fn and these their per-output-channel scales; undefined for model-dtype weights.
  torch::Tensor qkv_scale, o_scale, gate_up_scale, down_scale;  // [rows of the weight] float32
};

struct Weights {
  torch::Tensor embed;       // [V, H]
  std::vector<LayerWeights> layers;
  torch::Tensor final_norm;  // [H]
  torch::Tensor lm_head;     // [V, H]; the same tensor as embed when tied
  // An untied lm_head is quantized with the layers (int8/float8 [V, H]); this is then its per-row scale.
  torch::Tensor lm_head_scale;  // [V] float32, or undefined (model dtype)

  // Bytes of all distinct tensors on the device (a tied head counts once).
  std::int64_t bytes() const;
};

struct WeightsLoadStats {
  double load_ms = 0;           // mmap, validate, convert, copy to the device (synchronised)
  std::int64_t file_bytes = 0;  // tensor bytes read from the checkpoint
};

// Loads a safetensors checkpoint directory with HF Llama/Qwen2 names, converting each tensor once to
// `dtype` on `device`. Throws Error naming a missing tensor, or (tensor, expected, got) for a shape that
// disagrees with `config`; extra tensors are a log::warn. With a split `shard` (tensor parallelism) only
// this rank's slices of the mapped tensors are copied (dist/shard.h says which); `config` is the full model's.
Weights load_weights(const ModelConfig& config, const std::string& dir, torch::Dtype dtype,
                     torch::Device device, WeightsLoadStats* stats = nullptr, const dist::Shard& shard = {});

// Seeded random weights in the exact shapes, norms 1. CUDA: torch's normal(0, 0.02) drawn on the device;
// CPU: fill_random (std 0.02, bounded bell curve, multi-threaded, the same values for any thread count).
// Shows progress on stderr when drawing takes more than a second (LoadProgress).
// With a split `shard`, each tensor is drawn whole (the same draws in the same order as one rank) and this
// rank keeps its slice, so the ranks together hold exactly the weights of one rank with the same seed.
Weights random_weights(const ModelConfig& config, torch::Dtype dtype, torch::Device device, std::uint64_t seed,
                       const dist::Shard& shard = {});

}  // namespace llmbench
