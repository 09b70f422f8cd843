// The fused decode ops (CUDA kernels) against the plain torch path they replace, on random bf16 data
// in Qwen2.5-7B / Llama-3-8B shapes. The references are the decoder's own plain functions
// (llmbench::rms_norm, apply_rope, attention(eager)), not the fallbacks inside fused_ops.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/model/attention.h"
#include "llmbench/model/decoder.h"
#include "llmbench/model/fused_ops.h"
#include "llmbench/model/fused_prefill.h"
#include "llmbench/model/model_config.h"
#include "llmbench/model/rope.h"
#include "gpu_test_util.h"

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

using namespace llmbench;

namespace {

constexpr double kEps = 1e-6;

torch::TensorOptions cuda_bf16() { return torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA); }

// Every element within atol + rtol·|want|; reports the worst offender.
void expect_close(const torch::Tensor& got, const torch::Tensor& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  torch::Tensor g = got.to(torch::kFloat64).cpu(), w = want.to(torch::kFloat64).cpu();
  torch::Tensor err = (g - w).abs();
  torch::Tensor excess = err - (atol + rtol * w.abs());
  const auto worst = excess.flatten().argmax().item<std::int64_t>();
  EXPECT_LE(excess.flatten()[worst].item<double>(), 0.0)
      << what << ": element " << worst << " got " << g.flatten()[worst].item<double>() << " want "
      << w.flatten()[worst].item<double>() << " (max abs error " << err.max().item<double>() << ")";
}

// Fraction of elements that agree bit for bit: the rounding order matches torch's.
double frac_equal(const torch::Tensor& got, const torch::Tensor& want) {
  return got.eq(want).to(torch::kFloat64).mean().item<double>();
}

// bf16 keeps 8 significant bits: two roundings that differ by one step are 2 × 2⁻⁸ apart at most.
constexpr double kBf16Rtol = 1.0 / 64;

// cos/sin tables [T, D] bf16 as Rope builds them (theta 1e6, Qwen2.5).
std::pair<torch::Tensor, torch::Tensor> rope_tables(std::int64_t t) {
  RopeConfig rc;
  rc.theta = 1e6;
  torch::Tensor inv = rope_inv_freq(rc, kHeadDim);                                                  // [D/2]
  torch::Tensor ang = torch::arange(t, torch::kInt64).to(torch::kFloat32).unsqueeze(1) * inv.unsqueeze(0);  // [T, D/2]
  torch::Tensor emb = torch::cat({ang, ang}, -1);                                              // [T, D]
  return {emb.cos().to(torch::kCUDA, torch::kBFloat16), emb.sin().to(torch::kCUDA, torch::kBFloat16)};
}

// The plain decoder's rope + cache write for one token: returns q [B, Hq, D]; writes keys/values.
torch::Tensor plain_rope_qkv(const torch::Tensor& qkv, const torch::Tensor& bias, const torch::Tensor& cos_t,
                             const torch::Tensor& sin_t, const torch::Tensor& positions, const torch::Tensor& column,
                             torch::Tensor& keys, torch::Tensor& values, std::int64_t hq, std::int64_t hkv) {
  const auto b = qkv.size(0);
  torch::Tensor x = bias.defined() ? qkv + bias : qkv;                                  // [B, 1, N]
  auto parts = x.split({hq * kHeadDim, hkv * kHeadDim, hkv * kHeadDim}, -1);
  torch::Tensor q = parts[0].view({b, 1, hq, kHeadDim}).transpose(1, 2);                     // [B, Hq, 1, D]
  torch::Tensor k = parts[1].view({b, 1, hkv, kHeadDim}).transpose(1, 2);                    // [B, Hkv, 1, D]
  torch::Tensor v = parts[2].view({b, 1, hkv, kHeadDim}).transpose(1, 2);                    // [B, Hkv, 1, D]
  torch::Tensor cos = cos_t.index_select(0, positions).view({b, 1, 1, kHeadDim});            // [B, 1, 1, D]
  torch::Tensor sin = sin_t.index_select(0, positions).view({b, 1, 1, kHeadDim});
  keys.index_copy_(2, column, apply_rope(k, cos, sin));
  values.index_copy_(2, column, v);
  return apply_rope(q, cos, sin).view({b, hq, kHeadDim});
}

torch::Tensor plain_attention(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& values,
                              const torch::Tensor& valid) {
  const auto b = q.size(0), t = keys.size(2);
  return attention(AttnImpl::eager, q.unsqueeze(2), keys, values, valid.view({b, 1, 1, t})).squeeze(2);
}

// valid [B, T] bool: row b holds tokens in [pad_b, end) (left padding, then the unwritten tail).
torch::Tensor left_padded(const std::vector<std::int64_t>& pads, std::int64_t end, std::int64_t t) {
  torch::Tensor cols = torch::arange(t, torch::kInt64).unsqueeze(0);                        // [1, T]
  torch::Tensor start = torch::tensor(pads, torch::kInt64).unsqueeze(1);                    // [B, 1]
  return (cols >= start).logical_and(cols < end).to(torch::kCUDA);
}

}  // namespace

TEST(FusedOps, RmsNormMatchesPlain) {
  REQUIRE_CUDA();
  torch::manual_seed(1);
  // 3584/4096/8192 (70B): the vector path; 100: the scalar path (not a multiple of 8). 1000 rows: the
  // warp-per-row kernel of prefills (256 rows and more).
  for (std::int64_t h : {3584, 4096, 8192, 100}) {
    // 300 / 600 / 1000 / 2100 / 4100 / 8200 rows: 8 / 8 / 8 / 4 / 2 / 1 warps per row (session 23's kernel,
    // session 24's rule).
    for (std::int64_t n : {1, 4, 37, 300, 600, 1000, 2100, 4100, 8200}) {
      torch::Tensor x = randn_bf16({n, 1, h}, 3.0);                                    // [N, 1, H]
      torch::Tensor w = (1.0 + 0.1 * torch::randn({h}, torch::kCUDA)).to(torch::kBFloat16);  // [H]
      torch::Tensor want = llmbench::rms_norm(x, w, kEps);
      torch::Tensor got = fused::rms_norm(x, w, kEps);
      const std::string what = "H=" + std::to_string(h) + " N=" + std::to_string(n);
      expect_close(got, want, kBf16Rtol, 1e-6, what);
      EXPECT_GT(frac_equal(got, want), 0.98) << what;
    }
  }
}

TEST(FusedOps, AddRmsNormUpdatesResidualAndNormalises) {
  REQUIRE_CUDA();
  torch::manual_seed(2);
  for (std::int64_t h : {3584, 4096, 8192, 100}) {
    for (std::int64_t n : {1, 4, 300, 1000, 2100}) {
      torch::Tensor x = randn_bf16({n, 1, h});          // [N, 1, H] a sublayer's output
      torch::Tensor residual = randn_bf16({n, 1, h}, 4.0);  // [N, 1, H] the residual stream
      torch::Tensor w = (1.0 + 0.1 * torch::randn({h}, torch::kCUDA)).to(torch::kBFloat16);
      torch::Tensor want_res = residual + x;       // the decoder's `x + dense(...)`
      torch::Tensor want = llmbench::rms_norm(want_res, w, kEps);
      torch::Tensor got = x.clone(), got_res = residual.clone();
      fused::add_rms_norm_(got, got_res, w, kEps);
      const std::string what = "H=" + std::to_string(h) + " N=" + std::to_string(n);
      EXPECT_TRUE(torch::equal(got_res, want_res)) << what << ": the residual add must round like torch";
      expect_close(got, want, kBf16Rtol, 1e-6, what);
      EXPECT_GT(frac_equal(got, want), 0.98) << what;
    }
  }
}

// The norm that sums a split-K GEMM's float partials itself (the decode step's o and down projections,
// LLMBENCH_SPLITK_FUSE): against the plain ops on the CPU (the float sum in split order, rounded once, the
// bf16 residual add, the norm), for 1–8 splits and decode row counts.
TEST(FusedOps, AddRmsNormPartialsMatchesThePlainOps) {
  REQUIRE_CUDA();
  torch::manual_seed(12);
  for (std::int64_t h : {3584, 4096, 64}) {
    for (std::int64_t n : {1, 4, 16}) {
      for (std::int64_t s : {1, 2, 3, 8}) {
        const std::string what = cat("H=", h, " N=", n, " S=", s);
        torch::Tensor partials = torch::randn({s, n, 1, h}, torch::kCUDA);  // [S, N, 1, H] float32
        torch::Tensor residual = randn_bf16({n, 1, h}, 4.0);                    // [N, 1, H] bf16
        torch::Tensor w = (1.0 + 0.1 * torch::randn({h}, torch::kCUDA)).to(torch::kBFloat16);  // [H]
        torch::Tensor want_res = residual.cpu(), got_res = residual.clone();
        torch::Tensor want = fused::add_rms_norm_partials(partials.cpu(), want_res, w.cpu(), kEps);  // the plain ops
        torch::Tensor got = fused::add_rms_norm_partials(partials, got_res, w, kEps);
        ASSERT_EQ(got.sizes(), residual.sizes()) << what;
        EXPECT_TRUE(torch::equal(got_res.cpu(), want_res)) << what << ": the sum and the residual add must round as the plain ops";
        expect_close(got, want.to(torch::kCUDA), kBf16Rtol, 1e-6, what);
        EXPECT_GT(frac_equal(got, want.to(torch::kCUDA)), 0.98) << what;
      }
    }
  }
  torch::Tensor residual = randn_bf16({4, 1, 64});
  torch::Tensor w = torch::ones({64}, residual.options());
  EXPECT_THROW(fused::add_rms_norm_partials(torch::zeros({2, 4, 1, 32}, torch::kCUDA), residual, w, kEps), Error);
  EXPECT_THROW(fused::add_rms_norm_partials(torch::zeros({2, 4, 1, 64}, residual.options()), residual, w, kEps), Error);
}

TEST(FusedOps, SiluMulMatchesPlain) {
  REQUIRE_CUDA();
  torch::manual_seed(3);
  // 18944: Qwen2.5-7B, 14336: Llama-3-8B, 18: the scalar path.
  for (std::int64_t i : {18944, 14336, 18}) {
    for (std::int64_t n : {1, 4}) {
      torch::Tensor gu = randn_bf16({n, 1, 2 * i}, 2.0);  // [N, 1, 2I]
      auto parts = gu.chunk(2, -1);
      torch::Tensor want = torch::silu(parts[0]) * parts[1];  // the decoder's SwiGLU
      torch::Tensor got = fused::silu_mul(gu);
      const std::string what = "I=" + std::to_string(i) + " N=" + std::to_string(n);
      ASSERT_EQ(got.sizes(), want.sizes()) << what;
      expect_close(got, want, kBf16Rtol, 1e-6, what);
      EXPECT_GT(frac_equal(got, want), 0.99) << what;
    }
  }
}

TEST(FusedOps, RopeQkvCacheMatchesPlain) {
  REQUIRE_CUDA();
  torch::manual_seed(4);
  const std::int64_t b = 4, hq = 28, hkv = 4, t = 700, n = (hq + 2 * hkv) * kHeadDim;
  auto [cos_t, sin_t] = rope_tables(t);
  torch::Tensor positions = torch::tensor({530, 17, 699, 0}, torch::kInt64).to(torch::kCUDA);  // [B]
  torch::Tensor column = torch::tensor({612}, torch::kInt64).to(torch::kCUDA);                 // [1]
  for (bool with_bias : {false, true}) {
    torch::Tensor qkv = randn_bf16({b, 1, n}, 2.0);                       // [B, 1, N]
    torch::Tensor bias = with_bias ? randn_bf16({n}) : torch::Tensor();   // [N]
    torch::Tensor cache = randn_bf16({3, 2, b, hkv, t, kHeadDim});              // [L, 2, B, Hkv, T, D]: the real layout
    torch::Tensor want_cache = cache.clone();
    torch::Tensor wk = want_cache[1][0], wv = want_cache[1][1];
    torch::Tensor want_q = plain_rope_qkv(qkv, bias, cos_t, sin_t, positions, column, wk, wv, hq, hkv);
    torch::Tensor keys = cache[1][0], values = cache[1][1];         // [B, Hkv, T, D] views
    torch::Tensor q = fused::rope_qkv_cache(qkv, bias, cos_t, sin_t, positions, column, keys, values, hq, hkv);
    const std::string what = with_bias ? "with bias" : "no bias";
    ASSERT_EQ(q.sizes(), want_q.sizes());
    EXPECT_TRUE(torch::equal(q, want_q)) << what << ": q differs (max " << (q - want_q).abs().max().item<float>() << ")";
    EXPECT_TRUE(torch::equal(cache, want_cache)) << what << ": the cache differs (written column or elsewhere)";
  }
}

// The prefill kernel is the plain split + transpose + apply_rope, bit for bit, for several tokens per
// row at their own positions (left-padded rows: pads at position 1, as prefill_hidden gives them).
TEST(FusedOps, RopeSplitQkvMatchesPlainBitForBit) {
  REQUIRE_CUDA();
  torch::manual_seed(11);
  const std::int64_t b = 3, s = 37, hq = 28, hkv = 4, t = 4096, n = (hq + 2 * hkv) * kHeadDim;
  auto [cos_t, sin_t] = rope_tables(t);
  torch::Tensor mask = torch::ones({b, s}, torch::kInt64);
  mask[1].narrow(0, 0, 5).zero_();
  mask[2].narrow(0, 0, 36).zero_();
  torch::Tensor positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1);
  positions[0].add_(4000);                                                  // row 0 near the table's end
  positions = positions.to(torch::kCUDA);                                    // [B, S]
  torch::Tensor qkv = randn_bf16({b, s, n}, 3.0);                                 // [B, S, N]
  auto parts = qkv.split({hq * kHeadDim, hkv * kHeadDim, hkv * kHeadDim}, -1);
  torch::Tensor cos = cos_t.index_select(0, positions.reshape({-1})).view({b, 1, s, kHeadDim});  // [B, 1, S, D]
  torch::Tensor sin = sin_t.index_select(0, positions.reshape({-1})).view({b, 1, s, kHeadDim});
  torch::Tensor want_q = apply_rope(parts[0].view({b, s, hq, kHeadDim}).transpose(1, 2), cos, sin);   // [B, Hq, S, D]
  torch::Tensor want_k = apply_rope(parts[1].view({b, s, hkv, kHeadDim}).transpose(1, 2), cos, sin);  // [B, Hkv, S, D]
  torch::Tensor want_v = parts[2].view({b, s, hkv, kHeadDim}).transpose(1, 2);                        // [B, Hkv, S, D]
  fused::PrefillQkv got = fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq, hkv);
  ASSERT_EQ(got.q.sizes(), want_q.sizes());
  ASSERT_EQ(got.k.sizes(), want_k.sizes());
  ASSERT_EQ(got.v.sizes(), want_v.sizes());
  EXPECT_TRUE(got.q.is_contiguous() && got.k.is_contiguous() && got.v.is_contiguous());
  EXPECT_TRUE(torch::equal(got.q, want_q)) << "q: max " << (got.q - want_q).abs().max().item<float>();
  EXPECT_TRUE(torch::equal(got.k, want_k)) << "k: max " << (got.k - want_k).abs().max().item<float>();
  EXPECT_TRUE(torch::equal(got.v, want_v)) << "v differs";
  EXPECT_THROW(fused::rope_split_qkv(qkv, cos_t, sin_t, positions.narrow(1, 0, s - 1), hq, hkv), Error);
  EXPECT_THROW(fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq + 1, hkv), Error);

  // With Qwen's qkv bias: the kernel adds it (rounded like torch's `qkv + bias`) before RoPE.
  torch::Tensor bias = randn_bf16({n}, 0.5);                                      // [N]
  auto biased = (qkv + bias).split({hq * kHeadDim, hkv * kHeadDim, hkv * kHeadDim}, -1);
  fused::PrefillQkv got_b = fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq, hkv, bias);
  EXPECT_TRUE(torch::equal(got_b.q, apply_rope(biased[0].view({b, s, hq, kHeadDim}).transpose(1, 2), cos, sin)));
  EXPECT_TRUE(torch::equal(got_b.k, apply_rope(biased[1].view({b, s, hkv, kHeadDim}).transpose(1, 2), cos, sin)));
  EXPECT_TRUE(torch::equal(got_b.v, biased[2].view({b, s, hkv, kHeadDim}).transpose(1, 2)));
  EXPECT_THROW(fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq, hkv, bias.narrow(0, 0, n - 1)), Error);
  // The scalar kernel before session 23's 16-byte one (LLMBENCH_PREFILL_KERNELS=0): the same bits.
  ::setenv("LLMBENCH_PREFILL_KERNELS", "0", 1);
  fused::PrefillQkv scalar = fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq, hkv, bias);
  ::unsetenv("LLMBENCH_PREFILL_KERNELS");
  EXPECT_TRUE(torch::equal(scalar.q, got_b.q) && torch::equal(scalar.k, got_b.k) && torch::equal(scalar.v, got_b.v));

  // Into given places (fused::PrefillQkvDest): k and v into the first S columns of a cache-shaped tensor
  // (the columns after them untouched), q seq-major; the same bits as the contiguous outputs.
  const std::int64_t t_max = 64;
  torch::Tensor cache = torch::full({2, b, hkv, t_max, kHeadDim}, 7.0, qkv.options());  // [K/V, B, Hkv, T, D]
  fused::PrefillQkvDest dest;
  dest.k = cache[0].narrow(2, 0, s);
  dest.v = cache[1].narrow(2, 0, s);
  dest.seq_major_q = true;
  fused::PrefillQkv placed = fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq, hkv, bias, dest);
  EXPECT_TRUE(placed.k.is_same(dest.k) && placed.v.is_same(dest.v));
  EXPECT_TRUE(placed.q.transpose(1, 2).is_contiguous()) << "q is not laid out [B, S, Hq, D]";
  EXPECT_TRUE(torch::equal(placed.q, got_b.q));
  EXPECT_TRUE(torch::equal(cache[0].narrow(2, 0, s), got_b.k));
  EXPECT_TRUE(torch::equal(cache[1].narrow(2, 0, s), got_b.v));
  EXPECT_TRUE((cache.narrow(4, 0, kHeadDim).narrow(3, s, t_max - s) == 7.0).all().item<bool>()) << "wrote past column S";

  // Per-token places (chunked prefill's packed tokens): token i's k / v at row rows[i], column columns[i] of
  // whole caches, nothing where that is outside them (a decode row that is not running has column −1), q as
  // before; the 16-byte kernel and the scalar one. The same bits as the contiguous outputs.
  const std::int64_t rc = 4, tc = 80;
  std::vector<std::int64_t> rows(b * s), cols(b * s);
  for (std::int64_t i = 0; i < b * s; ++i) rows[i] = (i * 3) % rc, cols[i] = i / rc + 40;
  rows[5] = -1, cols[7] = -1, cols[9] = tc, rows[11] = rc;  // four tokens write nothing
  torch::Tensor want_caches = torch::full({2, rc, hkv, tc, kHeadDim}, 7.0, qkv.options());  // [K/V, R, Hkv, T, D]
  const torch::Tensor tok_k = got_b.k.permute({0, 2, 1, 3}).reshape({b * s, hkv, kHeadDim});   // [B·S, Hkv, D]
  const torch::Tensor tok_v = got_b.v.permute({0, 2, 1, 3}).reshape({b * s, hkv, kHeadDim});
  for (std::int64_t i = 0; i < b * s; ++i) {
    if (rows[i] < 0 || rows[i] >= rc || cols[i] < 0 || cols[i] >= tc) continue;
    want_caches[0][rows[i]].select(1, cols[i]).copy_(tok_k[i]);
    want_caches[1][rows[i]].select(1, cols[i]).copy_(tok_v[i]);
  }
  for (const char* kernels : {"1", "0"}) {
    SCOPED_TRACE(std::string("LLMBENCH_PREFILL_KERNELS=") + kernels);
    ::setenv("LLMBENCH_PREFILL_KERNELS", kernels, 1);
    torch::Tensor caches = torch::full({2, rc, hkv, tc, kHeadDim}, 7.0, qkv.options());
    fused::PrefillQkvDest places;
    places.k = caches[0];
    places.v = caches[1];
    places.rows = torch::tensor(rows, torch::kInt64).to(torch::kCUDA);
    places.columns = torch::tensor(cols, torch::kInt64).to(torch::kCUDA);
    places.seq_major_q = true;
    fused::PrefillQkv scattered = fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq, hkv, bias, places);
    ::unsetenv("LLMBENCH_PREFILL_KERNELS");
    EXPECT_TRUE(torch::equal(scattered.q, got_b.q));
    EXPECT_FALSE(scattered.k.defined() || scattered.v.defined());
    EXPECT_TRUE(torch::equal(caches, want_caches))
        << "places differ: " << caches.ne(want_caches).sum().item<std::int64_t>() << " elements";
    fused::PrefillQkvDest short_rows = places;
    short_rows.rows = places.rows.narrow(0, 0, b * s - 1);
    EXPECT_THROW(fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq, hkv, bias, short_rows), Error);
    fused::PrefillQkvDest no_columns = places;
    no_columns.columns = torch::Tensor();
    EXPECT_THROW(fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq, hkv, bias, no_columns), Error);
  }

  fused::PrefillQkvDest half;
  half.k = dest.k;
  EXPECT_THROW(fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq, hkv, bias, half), Error);
  fused::PrefillQkvDest wrong;
  wrong.k = cache[0].narrow(2, 0, s - 1);
  wrong.v = cache[1].narrow(2, 0, s - 1);
  EXPECT_THROW(fused::rope_split_qkv(qkv, cos_t, sin_t, positions, hq, hkv, bias, wrong), Error);
}

// The attention output's transpose before o_proj (fused::merge_heads): the kernel's copy against torch's
// transpose + reshape, bit for bit, from a contiguous [B, H, S, D], a strided one (S narrowed from a longer
// tensor) and with LLMBENCH_PREFILL_KERNELS=0; a layout already [B, S, H, D] in memory stays a view.
TEST(FusedOps, MergeHeadsMatchesTheTransposeCopy) {
  REQUIRE_CUDA();
  torch::manual_seed(21);
  torch::Tensor whole = randn_bf16({3, 28, 70, kHeadDim});                                  // [B, H, S', D]
  for (const torch::Tensor& a : {whole, whole.narrow(2, 5, 61)}) {
    const torch::Tensor want = a.transpose(1, 2).reshape({a.size(0), a.size(2), a.size(1) * kHeadDim});
    const torch::Tensor got = fused::merge_heads(a);                             // [B, S, H·D]
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_TRUE(torch::equal(got, want)) << "S = " << a.size(2);
    ::setenv("LLMBENCH_PREFILL_KERNELS", "0", 1);
    EXPECT_TRUE(torch::equal(fused::merge_heads(a), want));
    ::unsetenv("LLMBENCH_PREFILL_KERNELS");
  }
  torch::Tensor seq_major = randn_bf16({2, 70, 28, kHeadDim}).transpose(1, 2);              // [B, H, S, D] view of [B, S, H, D]
  torch::Tensor view = fused::merge_heads(seq_major);
  EXPECT_EQ(view.data_ptr(), seq_major.data_ptr()) << "no copy where the memory is already [B, S, H·D]";
  EXPECT_THROW(fused::merge_heads(randn_bf16({2, 3, 4})), Error);
}

TEST(FusedOps, RopeQkvCacheColumnOutOfRangeWritesNothing) {
  REQUIRE_CUDA();
  const std::int64_t b = 1, hq = 28, hkv = 4, t = 16;
  auto [cos_t, sin_t] = rope_tables(t);
  torch::Tensor qkv = randn_bf16({b, (hq + 2 * hkv) * kHeadDim});
  torch::Tensor keys = torch::zeros({b, hkv, t, kHeadDim}, cuda_bf16()), values = torch::zeros({b, hkv, t, kHeadDim}, cuda_bf16());
  torch::Tensor positions = torch::zeros({b}, torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA));
  torch::Tensor column = torch::full({1}, t, torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA));
  fused::rope_qkv_cache(qkv, {}, cos_t, sin_t, positions, column, keys, values, hq, hkv);
  EXPECT_EQ(keys.abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(values.abs().sum().item<float>(), 0.0f);
}

// The slot engine's layout: every row writes its own column (one out of the cache: no write there).
TEST(FusedOps, RopeQkvCachePerRowColumnsMatchPlain) {
  REQUIRE_CUDA();
  torch::manual_seed(8);
  const std::int64_t b = 4, hq = 28, hkv = 4, t = 700, n = (hq + 2 * hkv) * kHeadDim;
  auto [cos_t, sin_t] = rope_tables(t);
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA);
  torch::Tensor positions = torch::tensor({530, 3, 699, 12}, i64);  // [B]
  torch::Tensor columns = torch::tensor({612, 3, 699, 700}, i64);   // [B], row 3 outside
  torch::Tensor qkv = randn_bf16({b, 1, n}, 2.0);
  torch::Tensor cache = randn_bf16({2, 2, b, hkv, t, kHeadDim});               // [L, 2, B, Hkv, T, D]
  torch::Tensor want_cache = cache.clone();
  torch::Tensor want_q = torch::empty({b, hq, kHeadDim}, cuda_bf16());
  for (std::int64_t r = 0; r < b; ++r) {  // row by row with the plain function and a one-row column
    torch::Tensor wk = want_cache[1][0].narrow(0, r, 1), wv = want_cache[1][1].narrow(0, r, 1);
    const std::int64_t col = columns[r].item<std::int64_t>();
    torch::Tensor scratch_k = torch::zeros({1, hkv, t + 1, kHeadDim}, cuda_bf16()), scratch_v = scratch_k.clone();
    want_q[r] = plain_rope_qkv(qkv.narrow(0, r, 1), {}, cos_t, sin_t, positions.narrow(0, r, 1), columns.narrow(0, r, 1),
                               scratch_k, scratch_v, hq, hkv)[0];
    if (col < t) {
      wk.narrow(2, col, 1).copy_(scratch_k.narrow(2, col, 1));
      wv.narrow(2, col, 1).copy_(scratch_v.narrow(2, col, 1));
    }
  }
  torch::Tensor keys = cache[1][0], values = cache[1][1];
  torch::Tensor q = fused::rope_qkv_cache(qkv, {}, cos_t, sin_t, positions, columns, keys, values, hq, hkv);
  EXPECT_TRUE(torch::equal(q, want_q)) << "q differs (max " << (q - want_q).abs().max().item<float>() << ")";
  EXPECT_TRUE(torch::equal(cache, want_cache)) << "the cache differs (written columns or elsewhere)";
  EXPECT_THROW(fused::rope_qkv_cache(qkv, {}, cos_t, sin_t, positions, columns.narrow(0, 0, 2), keys, values, hq, hkv),
               Error);
}

namespace {

// Fused vs eager attention on one (shape, mask).
void check_attention(std::int64_t b, std::int64_t hq, std::int64_t hkv, std::int64_t t, const torch::Tensor& valid,
                     const std::string& what) {
  torch::Tensor q = randn_bf16({b, hq, kHeadDim});                   // [B, Hq, D]
  torch::Tensor cache = randn_bf16({2, 2, b, hkv, t, kHeadDim});     // [L, 2, B, Hkv, T, D]
  torch::Tensor keys = cache[1][0], values = cache[1][1];
  torch::Tensor want = plain_attention(q, keys, values, valid);
  torch::Tensor got = fused::decode_attention(q, keys, values, valid);
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  // Outputs are softmax averages of N(0,1) values; differences come from float summation order only
  // (an occasional score or prob one bf16 step apart).
  expect_close(got, want, kBf16Rtol, 2e-3, what);
  const double mean_err = (got.to(torch::kFloat32) - want.to(torch::kFloat32)).abs().mean().item<double>();
  EXPECT_LT(mean_err, 2e-4) << what;
}

}  // namespace

TEST(FusedOps, DecodeAttentionMatchesEagerWithLeftPadding) {
  REQUIRE_CUDA();
  torch::manual_seed(5);
  // Qwen2.5-7B (28/4 heads) and Llama-3-8B (32/8), batch 4, prompt 512 + 64 new tokens.
  for (auto [hq, hkv] : std::vector<std::pair<std::int64_t, std::int64_t>>{{28, 4}, {32, 8}}) {
    const std::int64_t t = 576;
    check_attention(4, hq, hkv, t, left_padded({0, 3, 50, 311}, 540, t), "B=4 Hq=" + std::to_string(hq));
  }
  // Batch 1 over long caches: many splits along T.
  for (std::int64_t t : {600, 9000}) {
    check_attention(1, 28, 4, t, left_padded({0}, t - 7, t), "B=1 T=" + std::to_string(t));
    check_attention(1, 28, 4, t, left_padded({0}, 1, t), "B=1 one valid column T=" + std::to_string(t));
  }
}

TEST(FusedOps, DecodeAttentionMatchesEagerWithRandomMasks) {
  REQUIRE_CUDA();
  torch::manual_seed(6);
  const std::int64_t b = 3, t = 1000;
  torch::Tensor valid = torch::rand({b, t}, torch::kCUDA) < 0.3;  // [B, T] holes everywhere
  valid.index_fill_(1, torch::tensor({999}, torch::kInt64).to(torch::kCUDA), true);
  check_attention(b, 28, 4, t, valid, "random holes");
  // A row with no valid column: eager gives the plain mean of V (all scores equal the lowest value).
  torch::Tensor none = valid.clone();
  none[1].fill_(false);
  check_attention(b, 28, 4, t, none, "fully masked row");
  // uint8 masks are accepted as well as bool.
  torch::Tensor q = randn_bf16({b, 28, kHeadDim}), keys = randn_bf16({b, 4, t, kHeadDim}), values = randn_bf16({b, 4, t, kHeadDim});
  EXPECT_TRUE(torch::equal(fused::decode_attention(q, keys, values, valid.to(torch::kUInt8)),
                           fused::decode_attention(q, keys, values, valid)));
}

// The decode step's order: rope_qkv_cache writes each row's new column, then decode_attention, told that
// column, reads the rest of its first tile before the rope kernel has ended (programmatic dependent
// launch) and that column after. The new columns hold a huge stale value before every step, so any read
// of it shows; both mma kernels (LLMBENCH_ATTN_PUSH=1: the push kernel that reads early, 0: the loop
// kernel) are checked against eager attention on the cache as rope left it.
TEST(FusedOps, DecodeAttentionReadsTheColumnRopeJustWrote) {
  REQUIRE_CUDA();
  torch::manual_seed(12);
  const std::int64_t b = 4, hq = 28, hkv = 4, t = 576, n = (hq + 2 * hkv) * kHeadDim;
  auto [cos_t, sin_t] = rope_tables(t);
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA);
  torch::Tensor columns = torch::tensor({575, 300, 17, 450}, i64);                    // [B]
  torch::Tensor valid = torch::arange(t, i64).view({1, t}) <= columns.view({b, 1});  // [B, T] bool
  torch::Tensor cache = randn_bf16({2, 2, b, hkv, t, kHeadDim});                                 // [L, 2, B, Hkv, T, D]
  torch::Tensor keys = cache[1][0], values = cache[1][1];
  torch::Tensor at = columns.view({b, 1, 1, 1}).expand({b, hkv, 1, kHeadDim});              // [B, Hkv, 1, D]
  for (const char* push : {"1", "0"}) {
    setenv("LLMBENCH_ATTN_PUSH", push, 1);
    for (int step = 0; step < 20 && !HasFailure(); ++step) {
      keys.scatter_(2, at, 1000.0);
      values.scatter_(2, at, 1000.0);
      torch::Tensor qkv = randn_bf16({b, 1, n});  // [B, 1, (Hq + 2 Hkv) D]
      torch::Tensor q = fused::rope_qkv_cache(qkv, {}, cos_t, sin_t, columns, columns, keys, values, hq, hkv);
      torch::Tensor got = fused::decode_attention(q, keys, values, valid, {}, {}, columns);
      expect_close(got, plain_attention(q, keys, values, valid), kBf16Rtol, 2e-3,
                   std::string("LLMBENCH_ATTN_PUSH=") + push + ", step " + std::to_string(step));
    }
  }
  unsetenv("LLMBENCH_ATTN_PUSH");
}

TEST(FusedOps, RejectsBadInputs) {
  REQUIRE_CUDA();
  torch::Tensor x = randn_bf16({2, 64}), w = randn_bf16({64});
  EXPECT_THROW(fused::rms_norm(x, randn_bf16({32}), kEps), Error);
  EXPECT_THROW(fused::rms_norm(x, w.to(torch::kFloat32), kEps), Error);
  EXPECT_THROW(fused::rms_norm(x.t(), randn_bf16({2}), kEps), Error);  // not contiguous
  torch::Tensor q = randn_bf16({1, 28, kHeadDim}), keys = randn_bf16({1, 4, 16, kHeadDim});
  EXPECT_THROW(fused::decode_attention(q, keys, keys, torch::ones({1, 15}, torch::kBool).to(torch::kCUDA)), Error);
  EXPECT_THROW(fused::decode_attention(randn_bf16({1, 30, kHeadDim}), keys, keys, torch::ones({1, 16}, torch::kBool).to(torch::kCUDA)),
               Error);
}

#ifdef LLMBENCH_WITH_CUDA
// Captured once, replayed after the device inputs change: the kernels read positions, column, valid
// and the activations from device memory, never from values frozen at capture.
TEST(FusedOps, CudaGraphReplayFollowsDeviceState) {
  REQUIRE_CUDA();
  torch::manual_seed(7);
  const std::int64_t b = 2, hq = 28, hkv = 4, t = 300, h = 3584, n = (hq + 2 * hkv) * kHeadDim;
  auto [cos_t, sin_t] = rope_tables(t);
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA);
  torch::Tensor qkv = randn_bf16({b, 1, n});
  torch::Tensor positions = torch::zeros({b}, i64), column = torch::zeros({1}, i64);
  torch::Tensor valid = torch::zeros({b, t}, torch::TensorOptions().dtype(torch::kBool).device(torch::kCUDA));
  torch::Tensor cache = randn_bf16({1, 2, b, hkv, t, kHeadDim});
  torch::Tensor keys = cache[0][0], values = cache[0][1];
  torch::Tensor x = randn_bf16({b, 1, h}), residual = randn_bf16({b, 1, h}), w = randn_bf16({h});
  torch::Tensor gu = randn_bf16({b, 1, 2 * 18944});

  at::cuda::CUDAGraph graph;
  torch::Tensor q_out, attn_out, act_out;
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  torch::cuda::synchronize();
  {
    c10::cuda::CUDAStreamGuard guard(side);
    graph.capture_begin();
    q_out = fused::rope_qkv_cache(qkv, {}, cos_t, sin_t, positions, column, keys, values, hq, hkv);
    attn_out = fused::decode_attention(q_out, keys, values, valid);
    fused::add_rms_norm_(x, residual, w, kEps);
    act_out = fused::silu_mul(gu);
    graph.capture_end();
  }
  torch::cuda::synchronize();
  for (std::int64_t step = 0; step < 3; ++step) {
    qkv.copy_(randn_bf16({b, 1, n}));
    gu.copy_(randn_bf16({b, 1, 2 * 18944}));
    x.copy_(randn_bf16({b, 1, h}));
    positions.copy_(torch::tensor({40 + step, 7 + 5 * step}, torch::kInt64));
    column.fill_(100 + step * 60);
    valid.zero_();
    valid.narrow(1, 10 * step, 101 + step * 60 - 10 * step).fill_(true);
    torch::Tensor wk = keys.clone(), wv = values.clone(), wres = residual + x;
    torch::Tensor want_q = plain_rope_qkv(qkv, {}, cos_t, sin_t, positions, column, wk, wv, hq, hkv);
    torch::Tensor want_attn = plain_attention(want_q, wk, wv, valid);
    torch::Tensor want_x = llmbench::rms_norm(wres, w, kEps);
    auto parts = gu.chunk(2, -1);
    torch::Tensor want_act = torch::silu(parts[0]) * parts[1];
    graph.replay();
    torch::cuda::synchronize();
    const std::string what = "replay " + std::to_string(step);
    EXPECT_TRUE(torch::equal(q_out, want_q)) << what;
    EXPECT_TRUE(torch::equal(keys, wk)) << what;
    EXPECT_TRUE(torch::equal(values, wv)) << what;
    expect_close(attn_out, want_attn, kBf16Rtol, 2e-3, what + " attention");
    EXPECT_TRUE(torch::equal(residual, wres)) << what;
    expect_close(x, want_x, kBf16Rtol, 1e-6, what + " norm");
    expect_close(act_out, want_act, kBf16Rtol, 1e-6, what + " silu_mul");
  }
}
#endif
