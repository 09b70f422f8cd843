// The fp8 KV cache (--kv-dtype fp8, docs/quantization.md) on the GPU: the cache's storage and scales,
// the fused kernels (rope_qkv writing e4m3, decode attention reading it) against the torch encoding and
// the dequantized cache, and whole models on every decode path (plain, fused, CUDA graph of each) against
// the bf16 cache. Skips without CUDA or without FP8 (sm_89+, libtorch >= 2.1).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/model/attention.h"
#include "llmbench/model/decode_graph.h"
#include "llmbench/model/fused_ops.h"
#include "llmbench/model/kv_cache.h"
#include "llmbench/model/model.h"
#include "llmbench/model/rope.h"
#include "gpu_test_util.h"

using namespace llmbench;

namespace {

bool kv_fp8_here() {
  if (!torch::cuda::is_available()) return false;
  try {
    check_kv_fp8_supported(torch::Device(torch::kCUDA, 0));
    return true;
  } catch (const UsageError&) {
    return false;
  }
}

#define REQUIRE_KV_FP8() \
  if (!kv_fp8_here()) GTEST_SKIP() << "needs CUDA with FP8 (sm_89+) and libtorch >= 2.1"

// max |a − b| / max |b|, both as float32 on the CPU.
torch::Tensor bytes_of(const torch::Tensor& t) { return t.view(torch::kUInt8); }

const auto kCuda = torch::TensorOptions().device(torch::kCUDA);

// e4m3 round to nearest: |x − deq(q(x))| ≤ 2^-4 |x| in the normal range, ≤ 2^-10 · scale in the
// subnormals; a dequantized read in bf16 adds one more rounding, 2^-8 of the value read.
void expect_within_e4m3(const torch::Tensor& read, const torch::Tensor& x, const torch::Tensor& scale,
                        const std::string& what) {
  torch::Tensor r = read.to(torch::kFloat32), xf = x.to(torch::kFloat32);                  // [B, H, S, D]
  torch::Tensor s = scale.view({scale.size(0), scale.size(1), 1, 1});
  torch::Tensor bound = xf.abs() * std::ldexp(1.0, -4) + s * std::ldexp(1.0, -10) + r.abs() * std::ldexp(1.0, -8);
  EXPECT_TRUE(((r - xf).abs() <= bound * (1 + 1e-5)).all().item<bool>())
      << what << ": max error " << (r - xf).abs().max().item<float>();
}

}  // namespace

// Storage, scales, reads, a decode write, row copy, views and reset of a cache on the GPU.
TEST(KvFp8Gpu, CacheStoresE4m3WithPerHeadScales) {
  REQUIRE_KV_FP8();
  torch::manual_seed(11);
  auto m = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias", "bfloat16", "cuda", "eager", 0});
  const ModelConfig& c = m->config();
  const std::int64_t b = 2, t = 8, s = 5, h = c.num_kv_heads, d = c.head_dim, l = c.num_layers;
  KvCache plain(c, b, t, torch::kBFloat16, torch::Device(torch::kCUDA), KvFormat::plain);
  KvCache cache(c, b, t, torch::kBFloat16, torch::Device(torch::kCUDA), KvFormat::fp8);
  EXPECT_TRUE(cache.fp8());
  EXPECT_EQ(cache.keys(0).element_size(), 1);
  EXPECT_EQ(cache.bytes(), plain.bytes() / 2 + l * 2 * b * h * 4);  // half the storage + float32 scales
  EXPECT_TRUE(cache.key_scales(0).eq(1.0f).all().item<bool>());

  torch::Tensor mag = torch::tensor({0.02f, 3.0f, 40.0f, 1.0f}).narrow(0, 0, b * h).view({b, h, 1, 1}).to(torch::kCUDA);
  torch::Tensor k = (torch::randn({b, h, s, d}, kCuda) * mag).to(torch::kBFloat16);  // [B, H, S, D] bf16
  torch::Tensor v = (torch::randn({b, h, s, d}, kCuda) * mag.flip(0)).to(torch::kBFloat16);
  cache.write_prefix(1, k, v);
  EXPECT_TRUE(torch::equal(cache.key_scales(1), kv_scale_for(k)));
  EXPECT_TRUE(torch::equal(cache.value_scales(1), kv_scale_for(v)));
  EXPECT_TRUE(cache.key_scales(0).eq(1.0f).all().item<bool>());  // other layers untouched
  ASSERT_EQ(cache.read_keys(1).scalar_type(), torch::kBFloat16);
  expect_within_e4m3(cache.read_keys(1).narrow(2, 0, s), k, cache.key_scales(1), "prefix keys");
  expect_within_e4m3(cache.read_values(1).narrow(2, 0, s), v, cache.value_scales(1), "prefix values");
  EXPECT_TRUE(bytes_of(cache.keys(1).narrow(2, s, t - s)).eq(0).all().item<bool>());
  // The stored bytes are quantize_kv's.
  EXPECT_TRUE(torch::equal(bytes_of(cache.keys(1).narrow(2, 0, s)), bytes_of(quantize_kv(k, cache.key_scales(1)))));

  // A decode write at column 5 uses the prefill's scales (and saturates beyond 448 · scale).
  torch::Tensor k1 = (torch::randn({b, h, 1, d}, kCuda) * mag).to(torch::kBFloat16);
  torch::Tensor v1 = (torch::randn({b, h, 1, d}, kCuda) * mag.flip(0)).to(torch::kBFloat16);
  cache.write_column(1, torch::tensor({s}, torch::kInt64).to(torch::kCUDA), k1, v1);
  expect_within_e4m3(cache.read_keys(1).narrow(2, s, 1), k1, cache.key_scales(1), "decode key");
  expect_within_e4m3(cache.read_values(1).narrow(2, s, 1), v1, cache.value_scales(1), "decode value");

  // Row copy carries bytes and scales; a view shares both.
  cache.copy_row(0, 1, s + 1);
  EXPECT_TRUE(torch::equal(bytes_of(cache.keys(1)[1].narrow(1, 0, s + 1)), bytes_of(cache.keys(1)[0].narrow(1, 0, s + 1))));
  EXPECT_TRUE(torch::equal(cache.value_scales(1)[1], cache.value_scales(1)[0]));
  KvCache row = cache.view(1, 1, t);
  EXPECT_TRUE(row.fp8());
  EXPECT_EQ(row.key_scales(1).sizes(), (std::vector<std::int64_t>{1, h}));
  EXPECT_TRUE(torch::equal(row.key_scales(1)[0], cache.key_scales(1)[1]));
  EXPECT_EQ(row.keys(1).data_ptr(), cache.keys(1)[1].data_ptr());

  cache.reset();
  EXPECT_TRUE(bytes_of(cache.keys(1)).eq(0).all().item<bool>());
  EXPECT_TRUE(cache.key_scales(1).eq(1.0f).all().item<bool>());
}

// The rope_qkv kernel writes k (rotated, rounded to bf16) and v as quantize_kv encodes them, bit for bit,
// in the written column only; q is the plain rope's.
TEST(KvFp8Gpu, RopeQkvKernelWritesQuantizeKvBytes) {
  REQUIRE_KV_FP8();
  torch::manual_seed(12);
  const std::int64_t b = 3, hq = 28, hkv = 4, d = 128, t = 40, n = (hq + 2 * hkv) * d;
  RopeConfig rc;
  rc.theta = 1e6;
  torch::Tensor inv = rope_inv_freq(rc, d);                                                       // [D/2]
  torch::Tensor ang = torch::arange(t, torch::kInt64).to(torch::kFloat32).unsqueeze(1) * inv.unsqueeze(0);  // [T, D/2]
  torch::Tensor emb = torch::cat({ang, ang}, -1);                                                 // [T, D]
  torch::Tensor cos_t = emb.cos().to(torch::kCUDA, torch::kBFloat16), sin_t = emb.sin().to(torch::kCUDA, torch::kBFloat16);
  torch::Tensor qkv = (torch::randn({b, 1, n}, kCuda) * 3).to(torch::kBFloat16);                  // [B, 1, N]
  torch::Tensor positions = torch::tensor({7, 0, 39}, torch::kInt64).to(torch::kCUDA);            // [B]
  torch::Tensor column = torch::tensor({21, 3, 39}, torch::kInt64).to(torch::kCUDA);              // [B] per row
  torch::Tensor ks = (torch::rand({b, hkv}, kCuda) * 0.05 + 0.001), vs = (torch::rand({b, hkv}, kCuda) * 0.05 + 0.001);
  torch::Tensor zeros = torch::zeros({b, hkv, t, d}, kCuda);
  torch::Tensor keys = quantize_kv(zeros, torch::ones({b, hkv}, kCuda));    // [B, Hkv, T, D] e4m3, all +0
  torch::Tensor values = quantize_kv(zeros, torch::ones({b, hkv}, kCuda));
  torch::Tensor q = fused::rope_qkv_cache(qkv, {}, cos_t, sin_t, positions, column, keys, values, hq, hkv, ks, vs);

  // Reference: the plain rope on the same bf16 inputs, then quantize_kv.
  auto parts = qkv.split({hq * d, hkv * d, hkv * d}, -1);
  torch::Tensor cos = cos_t.index_select(0, positions).view({b, 1, 1, d}), sin = sin_t.index_select(0, positions).view({b, 1, 1, d});
  torch::Tensor want_q = apply_rope(parts[0].view({b, 1, hq, d}).transpose(1, 2), cos, sin).view({b, hq, d});
  torch::Tensor want_k = quantize_kv(apply_rope(parts[1].view({b, 1, hkv, d}).transpose(1, 2), cos, sin), ks);  // [B, Hkv, 1, D]
  torch::Tensor want_v = quantize_kv(parts[2].view({b, 1, hkv, d}).transpose(1, 2), vs);
  EXPECT_TRUE(torch::equal(q, want_q));
  for (std::int64_t r = 0; r < b; ++r) {
    SCOPED_TRACE(r);
    const std::int64_t col = column[r].item<std::int64_t>();
    EXPECT_TRUE(torch::equal(bytes_of(keys[r].narrow(1, col, 1)), bytes_of(want_k[r])));
    EXPECT_TRUE(torch::equal(bytes_of(values[r].narrow(1, col, 1)), bytes_of(want_v[r])));
    // Nothing else written.
    EXPECT_EQ(bytes_of(keys[r]).ne(0).sum().item<std::int64_t>(), bytes_of(want_k[r]).ne(0).sum().item<std::int64_t>());
  }
}

// The decode attention kernel on an fp8 cache against the plain path on it: eager attention over
// dequantize_kv(…, bf16) (what the plain decode step runs), on random N(0, 1) data as FusedOps'
// DecodeAttentionMatchesEager*. The kernel rounds each dequantized k and v to bf16 as the plain path does,
// so the two differ by float summation order only (as there: an occasional score or prob one bf16 step
// apart): the same per-element bound as there (1/64 relative + 2e-3) and a mean error under 4e-4. With
// one valid column the output is that column's v: bit-equal.
TEST(KvFp8Gpu, DecodeAttentionKernelMatchesThePlainPath) {
  REQUIRE_KV_FP8();
  torch::manual_seed(13);
  const std::int64_t d = 128;
  for (auto [b, hq, hkv, t, end] : std::vector<std::array<std::int64_t, 5>>{{4, 28, 4, 576, 540}, {1, 28, 4, 9000, 8993},
                                                                             {2, 32, 8, 300, 1}}) {
    SCOPED_TRACE(cat("B=", b, " Hq=", hq, " Hkv=", hkv, " T=", t, " valid ", end));
    torch::Tensor q = torch::randn({b, hq, d}, kCuda).to(torch::kBFloat16);               // [B, Hq, D]
    torch::Tensor k = torch::randn({b, hkv, t, d}, kCuda).to(torch::kBFloat16);           // [B, Hkv, T, D]
    torch::Tensor v = torch::randn({b, hkv, t, d}, kCuda).to(torch::kBFloat16);
    torch::Tensor ks = kv_scale_for(k), vs = kv_scale_for(v);                              // [B, Hkv] float32
    torch::Tensor k8 = quantize_kv(k, ks), v8 = quantize_kv(v, vs);                        // [B, Hkv, T, D] e4m3
    torch::Tensor valid = (torch::arange(t, kCuda.dtype(torch::kInt64)) < end).view({1, t}).expand({b, t}).contiguous();
    torch::Tensor got = fused::decode_attention(q, k8, v8, valid, ks, vs);                 // [B, Hq, D] bf16
    torch::Tensor mask = valid.view({b, 1, 1, t});
    torch::Tensor plain = attention(AttnImpl::eager, q.unsqueeze(2), dequantize_kv(k8, ks, torch::kBFloat16),
                                    dequantize_kv(v8, vs, torch::kBFloat16), mask)
                              .squeeze(2);                                                 // [B, Hq, D] bf16
    ASSERT_EQ(got.sizes(), plain.sizes());
    torch::Tensor g = got.to(torch::kFloat64).cpu(), w = plain.to(torch::kFloat64).cpu();
    torch::Tensor err = (g - w).abs();
    EXPECT_LE((err - (2e-3 + w.abs() / 64)).max().item<double>(), 0.0) << "max abs error " << err.max().item<double>();
    EXPECT_LT(err.mean().item<double>(), 4e-4);
    if (end == 1) {
      EXPECT_TRUE(torch::equal(got, plain));
    }
    // And the fp8 cache approximates the bf16 one (garbage scales or bytes give O(1)): k and v carry
    // 2^-4/√3 ≈ 3.6 % relative RMS, moving scores of std 1 by ~0.04 and the output by a few %: 0.35 of
    // the largest output is loose on purpose.
    torch::Tensor exact = attention(AttnImpl::eager, q.to(torch::kFloat32).unsqueeze(2), k.to(torch::kFloat32),
                                    v.to(torch::kFloat32), mask)
                              .squeeze(2);
    EXPECT_LT(rel_diff(got, exact), 0.35);
  }
}

// LLMBENCH_ATTN_EAGER_LOADS=1 on an fp8 cache (the loop kernel, batch 64 × 1,024 with each row's written column,
// as the server's step): bit-equal to the default kernel (GpuDecodeAttention.EagerLoadsChangeNoBit for bf16).
TEST(KvFp8Gpu, DecodeAttentionEagerLoadsChangeNoBit) {
  REQUIRE_KV_FP8();
  torch::manual_seed(17);
  const std::int64_t b = 64, hq = 28, hkv = 4, t = 1024, d = 128;
  torch::Tensor q = torch::randn({b, hq, d}, kCuda).to(torch::kBFloat16);       // [B, Hq, D]
  torch::Tensor k = torch::randn({b, hkv, t, d}, kCuda).to(torch::kBFloat16);   // [B, Hkv, T, D]
  torch::Tensor v = torch::randn({b, hkv, t, d}, kCuda).to(torch::kBFloat16);
  torch::Tensor ks = kv_scale_for(k), vs = kv_scale_for(v);                      // [B, Hkv] float32
  torch::Tensor k8 = quantize_kv(k, ks), v8 = quantize_kv(v, vs);                // [B, Hkv, T, D] e4m3
  torch::Tensor ends = 640 - torch::arange(b, kCuda.dtype(torch::kInt64)) * 37 % 129;             // [B]
  torch::Tensor valid = torch::arange(t, kCuda.dtype(torch::kInt64)).view({1, t}) < ends.view({b, 1});  // [B, T]
  torch::Tensor column = ends - 1;                                               // [B] int64
  ::setenv("LLMBENCH_ATTN_EAGER_LOADS", "0", 1);
  torch::Tensor plain = fused::decode_attention(q, k8, v8, valid, ks, vs, column);  // [B, Hq, D] bf16
  ::setenv("LLMBENCH_ATTN_EAGER_LOADS", "1", 1);
  torch::Tensor eager = fused::decode_attention(q, k8, v8, valid, ks, vs, column);
  ::unsetenv("LLMBENCH_ATTN_EAGER_LOADS");
  EXPECT_TRUE(torch::equal(plain, eager));
}

// Tolerances of the model test, from the roundings (L = 2 layers in the fixtures, u8 = 2^-4 e4m3's unit
// roundoff, u = 2^-8 bf16's):
// - fp8 vs bf16 cache: every K and V element read back carries a relative error uniform within half an
//   e4m3 step, RMS σ8 = 2^-4/√3 ≈ 3.6e-2 (the per-head scale keeps them out of the subnormals but for
//   the smallest). A score Σ q·k and a ·V sum are random-sign sums of such terms: relative RMS σ8 again.
//   Through L layers in quadrature: σ8·√L ≈ 5.1e-2 at most (the attention is only part of the residual
//   stream: the real figure is lower); the max over B·V logits against the max logit within 4σ: 0.20.
// - fused vs plain on the same fp8 cache: both round each dequantized k and v to bf16 before the math
//   (the kernel as KvCache::read_keys does), so only DecodePaths' bf16 summation orders remain: 2e-2.
// - a CUDA graph replays its path's kernels: 1e-6 (as DecodePaths).
const double kFp8VsBf16Bound = 4 * std::ldexp(1.0, -4) / std::sqrt(3.0) * std::sqrt(2.0);
const double kFusedVsPlainBound = 2e-2;

// Whole models: the bf16-cache plain path's greedy tokens teacher-force every fp8 path; each path's
// logits stay within kFp8VsBf16Bound of the bf16 cache's and pick the same greedy token wherever the bf16
// top-2 margin exceeds twice that error (a nearer tie may flip within the bound); fused and
// plain agree within kFusedVsPlainBound; graphs replay their eager path.
TEST(KvFp8Gpu, DecodePathsMatchTheBf16Cache) {
  REQUIRE_KV_FP8();
  for (const char* name : {"qwen2_bias", "llama3_tied", "llama_bf16"}) {
    SCOPED_TRACE(name);
    auto m = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/" + name, "bfloat16", "cuda", "eager", 0});
    torch::Tensor ids = torch::tensor({17, 45, 203, 9, 88, 150, 31, 250, 4, 66, 123, 77, 5, 199}, torch::kInt64)
                            .view({2, 7}).to(torch::kCUDA);  // [2, 7]
    const int steps = 12;
    auto run = [&](DecodeGraph* graph, const std::vector<torch::Tensor>& feed) {
      std::vector<torch::Tensor> out;
      m->reset_cache();
      out.push_back(m->prefill(ids).cpu());
      for (const auto& tok : feed) out.push_back((graph ? graph->step(tok) : m->decode_step(tok)).cpu().clone());
      return out;
    };
    // Reference: bf16 cache, plain path.
    m->set_kv_format(KvFormat::plain);
    m->allocate_cache(2, 7 + steps + 1);
    m->set_fused(false);
    std::vector<torch::Tensor> feed;
    {
      m->reset_cache();
      torch::Tensor tok = m->prefill(ids).argmax(-1);
      for (int i = 0; i < steps; ++i) {
        feed.push_back(tok.clone());
        tok = m->decode_step(tok).argmax(-1);
      }
    }
    const auto ref = run(nullptr, feed);

    m->set_kv_format(KvFormat::fp8);
    m->allocate_cache(2, 7 + steps + 1);
    ASSERT_TRUE(m->cache().fp8());
    const auto plain = run(nullptr, feed);
    DecodeGraph plain_graph(*m);
    const auto plain_replay = run(&plain_graph, feed);
    m->set_fused(true);
    ASSERT_TRUE(m->fused_active());
    const auto fused = run(nullptr, feed);
    DecodeGraph fused_graph(*m);
    const auto fused_replay = run(&fused_graph, feed);
    for (size_t i = 0; i < ref.size(); ++i) {
      SCOPED_TRACE(cat("position ", i));
      EXPECT_LT(rel_diff(plain[i], ref[i]), kFp8VsBf16Bound);
      EXPECT_LT(rel_diff(fused[i], ref[i]), kFp8VsBf16Bound);
      EXPECT_LT(rel_diff(fused[i], plain[i]), kFusedVsPlainBound);
      EXPECT_LT(rel_diff(plain_replay[i], plain[i]), 1e-6);
      EXPECT_LT(rel_diff(fused_replay[i], fused[i]), 1e-6);
      const torch::Tensor want = ref[i].argmax(-1);                                  // [B]
      torch::Tensor top2 = std::get<0>(ref[i].topk(2, -1));                          // [B, 2]
      torch::Tensor margin = top2.select(1, 0) - top2.select(1, 1);                  // [B]
      const double allowed = kFp8VsBf16Bound * ref[i].abs().max().item<double>();   // absolute logit error
      torch::Tensor decided = margin > 2 * allowed;                                  // [B]: not a near-tie
      for (const auto* got : {&plain[i], &fused[i], &plain_replay[i], &fused_replay[i]})
        EXPECT_TRUE(torch::equal(got->argmax(-1).masked_select(decided), want.masked_select(decided)))
            << "greedy tokens differ where the bf16 top-2 margin (" << margin << ") exceeds 2 × " << allowed;
    }
    // The prefill reads no cache: its logits are the bf16 cache's exactly.
    EXPECT_TRUE(torch::equal(plain[0], ref[0]));
    // Chunked prefill (the serving engine's mixed step) has no whole prompt to take scales from: an error.
    m->reset_cache();
    EXPECT_THROW(m->mixed_slots(2, 7 + steps + 1, {1, 2, 3}, {ChunkSpan{0, 0, 1, true}}), Error);
  }
}
