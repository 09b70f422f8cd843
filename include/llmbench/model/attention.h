#pragma once
#include <cstdint>
#include <string>

#include <torch/torch.h>

// Attention over grouped K/V heads (GQA) without materialising repeated K/V: the G query heads that
// share a K/V head are folded into the row dimension of one batched GEMM.
namespace llmbench {

enum class AttnImpl { eager, sdpa };

// "eager" | "sdpa"; sdpa throws UsageError on libtorch < 2.0.
AttnImpl parse_attn(const std::string& name);
const char* to_string(AttnImpl impl);

// A mask and what the caller knows about it on the host (no device read is needed to use the facts).
struct AttnMask {
  torch::Tensor allowed;          // bool [B, 1, S, T] (true: may attend)
  bool causal = false;            // S == T and row i sees no column > i (a prefill over its own columns)
  bool padded = true;             // false: allowed is exactly the causal triangle (every row of every batch)
  std::int64_t ragged_rows = 0;   // causal: rows [0, ragged_rows) may see no column at all in some batch
                                  // row (left padding); every later row sees at least one column
  bool fused = false;             // eager: scale, mask and softmax of each tile in one CUDA kernel
                                  // (fused::prefill_softmax_; same numbers up to float summation order)
  bool lower_right = false;       // allowed is exactly "row i sees columns [0, T − S + i]" in every batch row
                                  // (a prompt chunk after its earlier columns): sdpa may then run the flash
                                  // kernel's own causal mask, aligned to the last column, instead of reading
                                  // allowed (LLMBENCH_CHUNK_FLASH=0: the mask, for A/B runs)
};

// A prefill's mask over its own columns from attention_mask [B, P] (1: token, 0: pad): causal AND the
// token's column; the facts come from one small device read, unless the caller knows the mask is all ones
// (unpadded): then nothing is read back (no host sync, so a CUDA graph can capture it).
AttnMask prefill_mask(const torch::Tensor& attention_mask, bool unpadded = false);

// [B, Hkv, G·S, D] with any strides → [B, Hq, S, D]: the G query heads of a K/V head unfolded again.
torch::Tensor merge_groups(const torch::Tensor& out, std::int64_t hq, std::int64_t s);

// Elements of one eager query tile's scores [B, Hq, rows, T] (64 Mi: 256 MiB as float32).
constexpr std::int64_t kEagerTileScores = std::int64_t{1} << 26;

// Query rows per eager tile so that B·Hq·rows·T stays within `budget` elements: a multiple of 64 when
// that is at least 64, at least 1, at most S.
std::int64_t eager_tile_rows(std::int64_t b, std::int64_t hq, std::int64_t s, std::int64_t t,
                             std::int64_t budget = kEagerTileScores);

// q [B, Hq, S, D], k/v [B, Hkv, T, D] → [B, Hq, S, D].
// eager: (Q·Kᵀ)·1/√D, masked to the dtype's lowest value (a fully masked row stays finite, as in HF),
// softmax in float32, rounded to the dtype, ·V; computed per tile of `tile_rows` query rows (0: from
// kEagerTileScores) so the scores never exceed a tile. Each tile is the same formula on a slice of the
// rows, so the result is the untiled one (bit for bit on CPU; on CUDA up to the summation order of the
// kernels chosen for a tile's shape). For a causal mask, a tile whose rows all see at least one column
// reads only the columns up to its last row (rounded up to 64): the columns after it are masked, weigh
// exp(lowest − max) = 0 and leave every sum unchanged.
// sdpa: torch's scaled_dot_product_attention; an unpadded causal prefill passes is_causal and no mask
// (flash / cuDNN kernels; GQA through enable_gqa on torch ≥ 2.5), anything else the same additive mask
// as eager (lowest value on the masked columns).
torch::Tensor attention(AttnImpl impl, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const AttnMask& mask, std::int64_t tile_rows = 0);

// q [B, Hq, S, D] over k / v [B, Hkv, T, D] (S ≤ T, D contiguous, any other strides) with the causal mask
// aligned to the last column (row i sees columns [0, T − S + i]) on torch's flash kernel → [B, Hq, S, D];
// undefined where that kernel does not apply (CPU, libtorch < 2, not bf16/fp16, D not a multiple of 8 up to
// 256, a GPU before sm_80) or LLMBENCH_CHUNK_FLASH=0. attention(sdpa, …) takes it for a lower_right mask with
// fewer queries than keys (with as many, the causal path: cuDNN where it is on, else flash).
torch::Tensor sdpa_flash_lower_right(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);

// Whether torch's scaled_dot_product_attention may pick cuDNN's kernels, process-wide (torch's own switch,
// on by default). cuDNN is the fastest backend for a shape it has seen (8,192-token prefill: 22 ms for 28
// layers against 43 for torch's flash kernel), but it builds a plan for every new shape: ≈ 47 ms on the
// first call of a new causal length or batch, ≈ 40–60 ms for a new masked one, against ≈ 0.4 ms for
// flash (H200, torch 2.11, scripts/bench/sdpa_new_shapes.py, docs/performance.md). The serving engine,
// whose prompt lengths, chunk lengths and pass sizes change from call to call, turns it off
// (EngineOptions::sdpa_cudnn). False where this libtorch has no such switch (before 2.4).
bool set_sdpa_cudnn(bool enabled);

// A mask with no structure known (decode over the cache): mask bool [B, 1, S, T].
torch::Tensor attention(AttnImpl impl, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& mask);

}  // namespace llmbench
