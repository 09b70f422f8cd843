#include "llmbench/model/attention.h"

#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "llmbench/base/error.h"
#include "llmbench/base/switch.h"
#include "llmbench/model/fused_prefill.h"

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

// enable_gqa in scaled_dot_product_attention: torch ≥ 2.5.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
#define LLMBENCH_SDPA_GQA 1
#endif

namespace llmbench {

AttnImpl parse_attn(const std::string& name) {
  if (name == "eager") return AttnImpl::eager;
  if (name == "sdpa") {
#if TORCH_VERSION_MAJOR >= 2
    return AttnImpl::sdpa;
#else
    throw UsageError(cat("--attn sdpa needs libtorch >= 2.0 (this build has ", TORCH_VERSION, "); use --attn eager"));
#endif
  }
  throw UsageError(cat("unknown attention '", name, "' (expected eager or sdpa)"));
}

const char* to_string(AttnImpl impl) { return impl == AttnImpl::eager ? "eager" : "sdpa"; }

torch::Tensor merge_groups(const torch::Tensor& out, std::int64_t hq, std::int64_t s) {
  // reshape, not view: sdpa's kernels may return a transposed layout ([B, G·S, Hkv, D] in memory).
  return out.reshape({out.size(0), hq, s, out.size(3)});
}

AttnMask prefill_mask(const torch::Tensor& attention_mask, bool unpadded) {
  const auto p = attention_mask.size(1);
  torch::Tensor present = attention_mask.to(torch::kBool);                                      // [B, P]
  torch::Tensor causal = torch::ones({p, p}, present.options()).tril();                         // [P, P]
  AttnMask m;
  if (unpadded) {  // the facts below without reading them back: no sync, so a CUDA graph can capture it
    m.allowed = causal.view({1, 1, p, p}).expand({present.size(0), 1, p, p}).contiguous();     // [B, 1, P, P]
    m.causal = true;
    m.ragged_rows = 0;
    m.padded = false;
    return m;
  }
  m.allowed = causal.view({1, 1, p, p}).logical_and(present.view({-1, 1, 1, p}));               // [B, 1, P, P]
  m.causal = true;
  // The first token of the latest-starting row (P if a row has none): rows before it see no column in
  // that batch row; from it on every row sees one.
  torch::Tensor first = torch::where(present.any(-1), present.to(torch::kInt64).argmax(-1),
                                     torch::full({present.size(0)}, p, present.options().dtype(torch::kInt64)));  // [B]
  torch::Tensor facts = torch::stack({first.max(), present.logical_not().sum()}).cpu();         // [2] int64
  m.ragged_rows = facts[0].item<std::int64_t>();
  m.padded = facts[1].item<std::int64_t>() > 0;
  return m;
}

std::int64_t eager_tile_rows(std::int64_t b, std::int64_t hq, std::int64_t s, std::int64_t t, std::int64_t budget) {
  const std::int64_t per_row = std::max<std::int64_t>(1, b * hq * t);
  std::int64_t rows = std::max<std::int64_t>(1, budget / per_row);
  if (rows >= 64) rows = rows / 64 * 64;
  return std::min(rows, std::max<std::int64_t>(s, 1));
}

namespace {

constexpr std::int64_t kKeyAlign = 64;  // key columns of a causal tile: a multiple of this (or all T)

std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

double lowest_of(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat32: return std::numeric_limits<float>::lowest();
    case torch::kBFloat16: return static_cast<float>(std::numeric_limits<c10::BFloat16>::lowest());
    default: return static_cast<float>(std::numeric_limits<c10::Half>::lowest());
  }
}

// Query rows [s0, s0 + n) against key columns [0, te): [B, Hkv, G·n, D]. The plain eager formula; the
// mask is applied to columns [mask_from, te) only (the caller knows the columns before are allowed to
// every row of the tile), in place: the same values with less traffic.
torch::Tensor eager_tile(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                         const torch::Tensor& allowed, std::int64_t s0, std::int64_t n, std::int64_t te,
                         std::int64_t mask_from, bool fused, bool triangle) {
  const auto b = q.size(0), hq = q.size(1), d = q.size(3), hkv = k.size(1), g = hq / hkv;
  torch::Tensor qt = q.narrow(2, s0, n).reshape({b, hkv, g * n, d});  // [B, Hkv, G·n, D]; head h uses K/V head h / G
  torch::Tensor kt = k.narrow(2, 0, te), vt = v.narrow(2, 0, te);    // [B, Hkv, te, D]
  torch::Tensor scores = torch::matmul(qt, kt.transpose(-1, -2));     // [B, Hkv, G·n, te]
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  if (fused && fused::prefill_softmax_(scores, allowed, n, s0, mask_from, scale, triangle))
    return torch::matmul(scores, vt);  // scores now hold the probs, [B, Hkv, G·n, D]
  scores.mul_(scale);
  torch::Tensor blocked =
      allowed.narrow(2, s0, n).narrow(3, mask_from, te - mask_from).logical_not().unsqueeze(2);  // [B, 1, 1, n, te′]
  scores.view({b, hkv, g, n, te}).narrow(4, mask_from, te - mask_from).masked_fill_(blocked, lowest_of(q.scalar_type()));
  torch::Tensor probs = scores.softmax(-1, torch::kFloat32).to(q.scalar_type());             // [B, Hkv, G·n, te]
  return torch::matmul(probs, vt);                                                            // [B, Hkv, G·n, D]
}

torch::Tensor eager(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const AttnMask& mask,
                    std::int64_t tile_rows) {
  const auto b = q.size(0), hq = q.size(1), s = q.size(2), d = q.size(3), hkv = k.size(1), t = k.size(2);
  const std::int64_t tile = tile_rows > 0 ? std::min(tile_rows, s) : eager_tile_rows(b, hq, s, t);
  // Unpadded causal: every row of a tile starting at s0 sees columns [0, s0); only the rest needs the mask.
  const bool triangle = mask.causal && !mask.padded;
  if (tile >= s) return merge_groups(eager_tile(q, k, v, mask.allowed, 0, s, t, 0, mask.fused, triangle), hq, s);  // one tile
  torch::Tensor out = torch::empty({b, hkv, hq / hkv, s, d}, q.options());  // [B, Hkv, G, S, D]
  for (std::int64_t s0 = 0; s0 < s; s0 += tile) {
    const std::int64_t n = std::min(tile, s - s0);
    // Causal: the columns after the tile's last row are masked for all its rows; a row that sees
    // nothing at all (left padding) averages over every column, so such tiles keep them. Whole
    // kKeyAlign blocks: softmax rows shorter than a vector take a scalar exp on CPU (other last bits).
    const std::int64_t te = mask.causal && s0 >= mask.ragged_rows ? std::min(t, round_up(s0 + n, kKeyAlign)) : t;
    const std::int64_t mask_from = triangle ? s0 : 0;
    out.narrow(3, s0, n).copy_(
        eager_tile(q, k, v, mask.allowed, s0, n, te, mask_from, mask.fused, triangle).view({b, hkv, hq / hkv, n, d}));
  }
  return out.view({b, hq, s, d});
}

#if TORCH_VERSION_MAJOR >= 2
torch::Tensor sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const AttnMask& mask) {
  const auto b = q.size(0), hq = q.size(1), s = q.size(2), d = q.size(3), hkv = k.size(1), t = k.size(2);
  const auto g = hq / hkv;
  if (mask.lower_right && s < t) {  // a chunk after earlier columns (s == t: the causal path below, cuDNN or flash)
    torch::Tensor out = sdpa_flash_lower_right(q, k, v);
    if (out.defined()) return out;
  }
  if (mask.causal && !mask.padded) {
    // No mask tensor: torch may pick its flash / cuDNN kernels (an explicit mask rules them out).
#ifdef LLMBENCH_SDPA_GQA
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true, std::nullopt,
                                            /*enable_gqa=*/g > 1);
#else
    return at::scaled_dot_product_attention(q, g > 1 ? k.repeat_interleave(g, 1) : k,
                                            g > 1 ? v.repeat_interleave(g, 1) : v, {}, 0.0, /*is_causal=*/true);
#endif
  }
  torch::Tensor qg = q.reshape({b, hkv, g * s, d});       // [B, Hkv, G·S, D]
  torch::Tensor allowed = mask.allowed.unsqueeze(2);      // [B, 1, 1, S, T]
  torch::Tensor bias = torch::zeros(allowed.sizes(), q.options()).masked_fill(allowed.logical_not(),
                                                                              lowest_of(q.scalar_type()));
  bias = bias.expand({b, 1, g, s, t}).reshape({b, 1, g * s, t});  // [B, 1, G·S, T]
  return merge_groups(at::scaled_dot_product_attention(qg, k, v, bias), hq, s);
}
#endif

}  // namespace

torch::Tensor attention(AttnImpl impl, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const AttnMask& mask, std::int64_t tile_rows) {
  if (mask.causal && q.size(2) != k.size(2))
    throw Error(cat("attention: a causal mask needs as many keys as queries (", q.size(2), " vs ", k.size(2), ")"));
  if (impl == AttnImpl::eager) return eager(q, k, v, mask, tile_rows);
#if TORCH_VERSION_MAJOR >= 2
  return sdpa(q, k, v, mask);
#else
  throw UsageError("sdpa attention needs libtorch >= 2.0");
#endif
}

// A lower-right causal mask on torch's flash kernel (ATen's _scaled_dot_product_flash_attention, whose
// causal mask, like flash-attention 2's, ends at the last column when there are fewer queries than keys;
// torch's sdpa itself keeps flash out of is_causal with S != T, as it defines is_causal from the first
// column). Query heads in groups over the K/V heads are flash's own; D contiguous, any other strides.
torch::Tensor sdpa_flash_lower_right(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
#if defined(LLMBENCH_WITH_CUDA) && TORCH_VERSION_MAJOR >= 2
  const auto dtype = q.scalar_type();
  const auto d = q.size(3);
  if (!q.is_cuda() || (dtype != torch::kBFloat16 && dtype != torch::kHalf) || d % 8 != 0 || d > 256 ||
      q.stride(3) != 1 || k.stride(3) != 1 || v.stride(3) != 1 || q.size(1) % k.size(1) != 0 ||
      at::cuda::getCurrentDeviceProperties()->major < 8 || env_switch("LLMBENCH_CHUNK_FLASH", {"1", "0"}) != 0)
    return {};
  return std::get<0>(at::_scaled_dot_product_flash_attention(q, k, v, 0.0, /*is_causal=*/true));  // [B, Hq, S, D]
#else
  (void)q, (void)k, (void)v;
  return {};
#endif
}

bool set_sdpa_cudnn(bool enabled) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  at::globalContext().setSDPUseCuDNN(enabled);
  return true;
#else
  (void)enabled;
  return false;
#endif
}

torch::Tensor attention(AttnImpl impl, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& mask) {
  AttnMask m;
  m.allowed = mask;
  return attention(impl, q, k, v, m);
}

}  // namespace llmbench
