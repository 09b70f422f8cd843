#include "llmbench/bench/memory.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "llmbench/base/error.h"
#include "llmbench/model/attention.h"
#include "llmbench/model/linear.h"
#include <torch/version.h>

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#endif

namespace llmbench {

ModelShape shape_of(const ModelConfig& c) {
  ModelShape s;
  s.hidden = c.hidden_size;
  s.intermediate = c.intermediate_size;
  s.layers = c.num_layers;
  s.heads = c.num_heads;
  s.kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.vocab = c.vocab_size;
  s.tied_embeddings = c.tie_word_embeddings;
  s.qkv_bias = c.qkv_bias;
  return s;
}

namespace {

std::uint64_t proc_kb(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoull(line.substr(key.size() + 1)) * 1024ULL;
  }
  return 0;
}

#ifdef LLMBENCH_WITH_CUDA
const c10::cuda::CUDACachingAllocator::DeviceStats stats_of(const torch::Device& d) {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(d.has_index() ? d.index() : 0);
}
#endif

}  // namespace

ModelSize model_size(const ModelShape& s) {
  const std::int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  std::int64_t attn = s.hidden * q + 2 * s.hidden * kv + q * s.hidden + (s.qkv_bias ? q + 2 * kv : 0);
  std::int64_t mlp = 3 * s.hidden * s.intermediate;
  std::int64_t per_layer = attn + mlp + 2 * s.hidden;
  ModelSize m;
  // What --weights quantizes: the four matmuls of every layer and an untied lm_head.
  const std::int64_t head = s.tied_embeddings ? 0 : s.vocab;
  m.matmul_params = s.layers * (s.hidden * q + 2 * s.hidden * kv + q * s.hidden + mlp) + head * s.hidden;
  m.matmul_rows = s.layers * (q + 2 * kv + s.hidden + 2 * s.intermediate + s.hidden) + head;
  m.embedding_params = s.vocab * s.hidden;
  m.params = m.embedding_params + s.layers * per_layer + s.hidden + (s.tied_embeddings ? 0 : s.vocab * s.hidden);
  return m;
}

int matmul_elem_bytes(const std::string& weights) { return weights == "int8" || weights == "fp8" ? 1 : 0; }

std::uint64_t weight_bytes(const ModelShape& s, std::int64_t elem_bytes, std::int64_t matmul_elem_bytes) {
  const ModelSize m = model_size(s);
  if (matmul_elem_bytes <= 0) return static_cast<std::uint64_t>(m.params) * elem_bytes;
  return static_cast<std::uint64_t>(m.params - m.matmul_params) * elem_bytes +
         static_cast<std::uint64_t>(m.matmul_params) * matmul_elem_bytes + static_cast<std::uint64_t>(m.matmul_rows) * 4;
}

int kv_elem_bytes(const std::string& kv_dtype) { return kv_dtype == "fp8" ? 1 : 0; }

std::uint64_t kv_cache_bytes(const ModelShape& s, std::int64_t batch, std::int64_t positions, std::int64_t elem_bytes,
                             std::int64_t kv_elem_bytes) {
  const std::uint64_t heads = 2ULL * s.layers * batch * s.kv_heads;  // (layer, K/V, row, kv head)
  if (kv_elem_bytes <= 0) return heads * positions * s.head_dim * elem_bytes;
  return heads * positions * s.head_dim * kv_elem_bytes + (kv_elem_bytes == 1 ? heads * 4 : 0);
}

MemoryEstimate estimate_memory(const ModelShape& s, std::int64_t batch, std::int64_t prompt_len,
                               std::int64_t max_new_tokens, std::int64_t elem_bytes, std::int64_t matmul_elem_bytes,
                               std::int64_t kv_elem_bytes) {
  MemoryEstimate e;
  e.weights = weight_bytes(s, elem_bytes, matmul_elem_bytes);
  e.kv_cache = kv_cache_bytes(s, batch, prompt_len + max_new_tokens, elem_bytes, kv_elem_bytes);
  const std::uint64_t tokens = static_cast<std::uint64_t>(batch) * prompt_len;
  // Eager attention materialises one query tile of [B, H, rows, P] scores at a time (attention.h): in the
  // dtype twice (masked and as probs) and in fp32 (softmax).
  const std::uint64_t score_elems = std::min<std::uint64_t>(
      static_cast<std::uint64_t>(batch) * s.heads * prompt_len * prompt_len,
      std::max<std::uint64_t>(kEagerTileScores, static_cast<std::uint64_t>(batch) * s.heads * prompt_len));
  const std::uint64_t scores = score_elems * (4 + 2 * elem_bytes);
  // Hidden states, q/k/v, attention output and three MLP intermediates of one layer at a time (x2 slack).
  const std::uint64_t layer_acts =
      2 * tokens * elem_bytes * (4 * s.hidden + 2 * s.kv_heads * s.head_dim + 3 * s.intermediate);
  const std::uint64_t logits = static_cast<std::uint64_t>(batch) * s.vocab * (4 + elem_bytes);
  // Dequantize-then-GEMM materialises one block of a quantized weight's rows in the model dtype at a time
  // (linear.h: at most kDequantBlockElems, at least one row of the widest K), or the whole weight when smaller.
  const std::uint64_t largest = std::max<std::uint64_t>(2ULL * s.intermediate * s.hidden,
                                                        s.tied_embeddings ? 0 : static_cast<std::uint64_t>(s.vocab) * s.hidden);
  const std::uint64_t block = static_cast<std::uint64_t>(kDequantBlockElems) + std::max(s.hidden, s.intermediate);
  const std::uint64_t dequantized = matmul_elem_bytes > 0 ? std::min(largest, block) * elem_bytes : 0;
  // fp8 KV: the prefill quantizes one layer's k (then v) through a float32 copy and its quotient; the plain
  // decode path reads one layer's K and V dequantized to the model dtype.
  const std::uint64_t kv_head_elems = static_cast<std::uint64_t>(batch) * s.kv_heads * s.head_dim;
  const std::uint64_t kv_fp8 =
      kv_elem_bytes == 1 ? kv_head_elems * (2 * 4 * prompt_len + 2 * elem_bytes * (prompt_len + max_new_tokens)) : 0;
  e.activations = scores + layer_acts + logits + dequantized + kv_fp8;
  return e;
}

std::uint64_t available_bytes(const torch::Device& device) {
#ifdef LLMBENCH_WITH_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDAGuard guard(device.has_index() ? device.index() : 0);
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
    std::uint64_t cached_unused = 0;
    try {  // the caching allocator refuses stats queries before its first allocation
      auto st = stats_of(device);
      cached_unused = st.reserved_bytes[0].current - st.allocated_bytes[0].current;
    } catch (const c10::Error&) {
    }
    return free + cached_unused;
  }
#endif
  return proc_kb("/proc/meminfo", "MemAvailable");
}

void check_fits(const torch::Device& device, std::uint64_t needed, const std::string& what) {
  std::uint64_t avail = available_bytes(device);
  if (avail > 0 && needed > avail) {
    throw OutOfMemoryError(cat("out of memory: ", what, " needs ~", format_gib(needed), ", ", format_gib(avail),
                               " available on ", device.str()));
  }
}

void reset_peak_memory(const torch::Device& device) {
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM := VmRSS (Linux 4.0+); a failed write leaves it as it was
#ifdef LLMBENCH_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.has_index() ? device.index() : 0);
#endif
}

std::uint64_t peak_allocated_bytes(const torch::Device& device) {
#ifdef LLMBENCH_WITH_CUDA
  if (device.is_cuda()) return stats_of(device).allocated_bytes[0].peak;
#endif
  return 0;
}

std::uint64_t allocated_bytes(const torch::Device& device) {
#ifdef LLMBENCH_WITH_CUDA
  if (device.is_cuda()) return stats_of(device).allocated_bytes[0].current;
#endif
  return 0;
}

std::uint64_t peak_reserved_bytes(const torch::Device& device) {
#ifdef LLMBENCH_WITH_CUDA
  if (device.is_cuda()) return stats_of(device).reserved_bytes[0].peak;
#endif
  return 0;
}

std::uint64_t device_in_use_bytes(const torch::Device& device) {
#ifdef LLMBENCH_WITH_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDAGuard guard(device.has_index() ? device.index() : 0);
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) return total - free;
  }
#endif
  return 0;
}

void release_cached_memory(const torch::Device& device) {
#ifdef LLMBENCH_WITH_CUDA
  if (!device.is_cuda()) return;
#if TORCH_VERSION_MAJOR >= 2
  // cuBLAS keeps a workspace per (handle, stream) in the caching allocator — one more for the stream a
  // CUDA graph was captured on — that would stay allocated and count in every later point's peak.
  at::cuda::clearCublasWorkspaces();
#endif
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

std::uint64_t peak_rss_bytes() { return proc_kb("/proc/self/status", "VmHWM"); }

std::string format_gib(std::uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << bytes / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return os.str();
}

}  // namespace llmbench
