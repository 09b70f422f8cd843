#pragma once
#include <cstdint>
#include <string>

#include <torch/types.h>

#include "llmbench/model/model_config.h"

namespace llmbench {

// Shapes that decide memory and traffic, taken from the model config.
struct ModelShape {
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t layers = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t vocab = 0;
  bool tied_embeddings = false;
  bool qkv_bias = false;
};

// The shape of a config.
ModelShape shape_of(const ModelConfig& config);

struct ModelSize {
  std::int64_t params = 0;            // every parameter
  std::int64_t embedding_params = 0;  // the token-embedding table (read by index, not streamed)
  std::int64_t matmul_params = 0;     // qkv, o, gate_up, down of every layer + an untied lm_head (what --weights quantizes)
  std::int64_t matmul_rows = 0;       // their output channels (one float32 scale each when quantized)
};
ModelSize model_size(const ModelShape& s);

// Bytes per element of the matmul weights for --weights: 0 for "bf16" (the model dtype), 1 for int8/fp8.
int matmul_elem_bytes(const std::string& weights);
// Bytes of all weights (a tied head once): the matmul weights at matmul_elem_bytes plus a float32 scale
// per row when quantized (matmul_elem_bytes > 0), the rest at elem_bytes.
std::uint64_t weight_bytes(const ModelShape& s, std::int64_t elem_bytes, std::int64_t matmul_elem_bytes = 0);

// Bytes per element of the KV cache for --kv-dtype: 0 for "bf16" (the model dtype), 1 for fp8.
int kv_elem_bytes(const std::string& kv_dtype);
// 2 (K and V) x layers x batch x kv_heads x positions x head_dim x element size (kv_elem_bytes when > 0,
// else elem_bytes); an fp8 cache (kv_elem_bytes 1) adds its float32 scales, 2 x layers x batch x kv_heads.
std::uint64_t kv_cache_bytes(const ModelShape& s, std::int64_t batch, std::int64_t positions, std::int64_t elem_bytes,
                             std::int64_t kv_elem_bytes = 0);

// Upper estimate for one point: weights + KV cache + prefill activations (eager attention scores in fp32,
// MLP intermediates, last-position logits in fp32).
struct MemoryEstimate {
  std::uint64_t weights = 0;
  std::uint64_t kv_cache = 0;
  std::uint64_t activations = 0;
  std::uint64_t total() const { return weights + kv_cache + activations; }
};
// Quantized weights (matmul_elem_bytes > 0) add the prefill's dequantized block of a quantized weight; an
// fp8 KV cache (kv_elem_bytes 1) is counted at 1 byte per element plus scales, and adds one layer's float32
// k/v copy of the prefill's quantization and one layer's dequantized K and V of the plain decode path.
MemoryEstimate estimate_memory(const ModelShape& s, std::int64_t batch, std::int64_t prompt_len,
                               std::int64_t max_new_tokens, std::int64_t elem_bytes,
                               std::int64_t matmul_elem_bytes = 0, std::int64_t kv_elem_bytes = 0);

// Bytes the device can still give: cudaMemGetInfo free (+ what the caching allocator holds unused) on GPU,
// MemAvailable on CPU.
std::uint64_t available_bytes(const torch::Device& device);
// Throws OutOfMemoryError("<what> needs ~X GiB, Y GiB available") when `needed` exceeds what is available.
void check_fits(const torch::Device& device, std::uint64_t needed, const std::string& what);

// Peak statistics of the CUDA caching allocator since reset_peak_memory (0 on CPU). It also resets the host's
// peak resident set size (VmHWM) to the current one (Linux: "5" into /proc/self/clear_refs), so that
// peak_rss_bytes() is the peak since then, not since the process started; where that file cannot be written
// the host peak stays the process's.
void reset_peak_memory(const torch::Device& device);
std::uint64_t peak_allocated_bytes(const torch::Device& device);
// Bytes the CUDA caching allocator has handed out now (0 on CPU).
std::uint64_t allocated_bytes(const torch::Device& device);
std::uint64_t peak_reserved_bytes(const torch::Device& device);
// total - free from cudaMemGetInfo (0 on CPU).
std::uint64_t device_in_use_bytes(const torch::Device& device);
// Releases cached blocks back to the driver (after a failed point).
void release_cached_memory(const torch::Device& device);
// Host peak resident set size (VmHWM) since the last reset_peak_memory (see there).
std::uint64_t peak_rss_bytes();

std::string format_gib(std::uint64_t bytes);

}  // namespace llmbench
