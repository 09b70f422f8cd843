// The fp8 KV cache (--kv-dtype fp8, docs/quantization.md) on the CPU: names, the one-line errors off a
// GPU with FP8, the byte counts of the memory estimate and the roofline, and the encoding itself
// (quantize_kv / dequantize_kv / kv_scale_for) against a hand-written e4m3 decoder. The encoding tests
// need a libtorch with float8_e4m3fn (>= 2.1, CPU kernels included): libtorch 1.13 has none, and there
// they skip (the cache itself is CUDA-only: its GPU tests are tests/gpu/test_kv_fp8.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "llmbench/base/error.h"
#include "llmbench/bench/memory.h"
#include "llmbench/model/kv_cache.h"
#include "llmbench/model/model.h"
#include "llmbench/model/presets.h"
#include "llmbench/model/quantize.h"
#include "llmbench/runner/roofline.h"
#include "llmbench/runner/runner.h"

using namespace llmbench;

namespace {

const char* const kKvFp8Error =
    "--kv-dtype fp8 needs a CUDA GPU with FP8 (sm_89+) and libtorch >= 2.1 (float8_e4m3fn); --kv-dtype bf16 runs anywhere";

// float8 e4m3fn bits → value, written from the format's definition (OCP FP8: 1 sign, 4 exponent bits
// biased by 7, 3 mantissa bits; exponent 0 is subnormal, S.1111.111 is NaN, no infinities).
double e4m3_value(std::uint8_t bits) {
  const int sign = bits >> 7, exp = (bits >> 3) & 0xF, man = bits & 0x7;
  if (exp == 0xF && man == 0x7) return std::nan("");
  const double mag = exp == 0 ? std::ldexp(man / 8.0, -6) : std::ldexp(1.0 + man / 8.0, exp - 7);
  return sign ? -mag : mag;
}

#define SKIP_WITHOUT_TORCH_FP8()                                                                   \
  if (!torch_has_fp8()) GTEST_SKIP() << "this libtorch (" << TORCH_VERSION << ") has no float8_e4m3fn: " \
                                        "the fp8 KV encoding needs libtorch >= 2.1"

}  // namespace

TEST(KvFp8, NamesAndBadValues) {
  EXPECT_EQ(parse_kv_format("bf16"), KvFormat::plain);
  EXPECT_EQ(parse_kv_format("fp8"), KvFormat::fp8);
  EXPECT_THROW(parse_kv_format("int8"), UsageError);
  EXPECT_THROW(parse_kv_format("float8"), UsageError);
  EXPECT_EQ(to_string(KvFormat::plain), "bf16");
  EXPECT_EQ(to_string(KvFormat::fp8), "fp8");
  RunOptions o;
  o.kv_dtype = {"int4"};
  EXPECT_THROW(validate(o), UsageError);
  o.kv_dtype = {};
  EXPECT_THROW(validate(o), UsageError);
  o.kv_dtype = {"bf16", "fp8"};
  validate(o);
  // The kv_dtype axis multiplies the points and lands in their params.
  const auto points = expand(o);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].kv_dtype, "bf16");
  EXPECT_EQ(points[1].kv_dtype, "fp8");
}

// An fp8 cache on the CPU is the one-line UsageError at every door: the check, the model, the cache, the run.
TEST(KvFp8, OnTheCpuIsAOneLineUsageError) {
  auto expect_error = [](auto&& f, const char* what) {
    SCOPED_TRACE(what);
    try {
      f();
      ADD_FAILURE() << "expected UsageError";
    } catch (const UsageError& e) {
      EXPECT_STREQ(e.what(), kKvFp8Error);
    }
  };
  expect_error([] { check_kv_fp8_supported(torch::Device(torch::kCPU)); }, "check");
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  expect_error([&] { m->set_kv_format(KvFormat::fp8); }, "Model::set_kv_format");
  EXPECT_EQ(m->kv_format(), KvFormat::plain);  // unchanged: the model still runs with its plain cache
  expect_error([&] { KvCache(m->config(), 1, 8, torch::kFloat32, torch::Device(torch::kCPU), KvFormat::fp8); },
               "KvCache");
  RunOptions o;
  o.model = "tiny";
  o.device = "cpu";
  o.dtype = {"float32"};
  o.kv_dtype = {"fp8"};
  o.batch = {1};
  o.prompt_len = {4};
  o.max_new_tokens = {2};
  o.warmup = 0;
  o.runs = 1;
  o.trim = 0;
  RunHooks hooks;
  hooks.measure_ceilings = false;
  expect_error([&] { run_benchmark(o, hooks); }, "run_benchmark");
}

// The plain cache on the CPU still works with the format named explicitly.
TEST(KvFp8, PlainFormatRunsOnTheCpu) {
  auto m = Model::load({"tiny", "float32", "cpu", "eager", 0});
  m->set_kv_format(KvFormat::plain);
  const auto c = m->config();
  const std::int64_t bytes = m->allocate_cache(2, 8);
  EXPECT_EQ(bytes, 2 * c.num_layers * 2 * c.num_kv_heads * 8 * c.head_dim * 4);
  EXPECT_EQ(m->cache().format(), KvFormat::plain);
  EXPECT_FALSE(m->cache().key_scales(0).defined());
}

// Byte counts by hand: Qwen2.5-7B (28 layers, 4 kv heads, head_dim 128), batch 1, 8192 positions.
TEST(KvFp8, MemoryEstimateAndRooflineHalveTheCache) {
  EXPECT_EQ(kv_elem_bytes("bf16"), 0);
  EXPECT_EQ(kv_elem_bytes("fp8"), 1);
  const ModelShape s = shape_of(resolve_model("qwen2.5-7b").config);
  ASSERT_EQ(s.layers, 28);
  ASSERT_EQ(s.kv_heads, 4);
  ASSERT_EQ(s.head_dim, 128);
  const std::uint64_t bf16 = 2ULL * 28 * 1 * 4 * 8192 * 128 * 2;  // 448 MiB
  EXPECT_EQ(kv_cache_bytes(s, 1, 8192, 2), bf16);
  EXPECT_EQ(kv_cache_bytes(s, 1, 8192, 2, 1), bf16 / 2 + 2ULL * 28 * 1 * 4 * 4);  // + float32 scales
  // The estimate: the cache halves; the fp8 transients are one layer's float32 k/v and dequantized K/V.
  const MemoryEstimate plain = estimate_memory(s, 1, 8000, 192, 2);
  const MemoryEstimate fp8 = estimate_memory(s, 1, 8000, 192, 2, 0, 1);
  EXPECT_EQ(plain.kv_cache, bf16);
  EXPECT_EQ(fp8.kv_cache, bf16 / 2 + 2ULL * 28 * 4 * 4);
  EXPECT_EQ(fp8.weights, plain.weights);
  EXPECT_EQ(fp8.activations - plain.activations, 4ULL * 128 * (2 * 4 * 8000 + 2 * 2 * 8192));
  EXPECT_LT(fp8.total(), plain.total());
  // Roofline: the KV part of a decode step's bytes halves, the weights stay.
  const double kv_bf16 = 2.0 * 28 * 4 * 4 * 128 * 2 * (512 + 32);  // batch 4, mean context 512 + 64/2
  const double plain_step = decode_bytes_per_step(s, 4, 512, 64, 2);
  const double fp8_step = decode_bytes_per_step(s, 4, 512, 64, 2, 0, 1);
  EXPECT_DOUBLE_EQ(plain_step - fp8_step, kv_bf16 / 2);
  EXPECT_DOUBLE_EQ(decode_bytes_per_step(s, 4, 512, 64, 2, 1, 1) - decode_bytes_per_step(s, 4, 512, 64, 2, 1),
                   -kv_bf16 / 2);
}

// kv_scale_for: amax over (S, D) of each (row, head) · 2 / 448; an all-zero head gets 1.
TEST(KvFp8, ScaleIsThePromptsAmaxWithHeadroom) {
  torch::Tensor x = torch::zeros({2, 2, 3, 4});  // [B, H, S, D]
  x[0][0][1][2] = -3.5f;
  x[0][0][2][0] = 1.0f;
  x[0][1][0][0] = 448.0f;
  x[1][0][2][3] = 0.25f;  // row 1 head 1 stays zero
  torch::Tensor s = kv_scale_for(x);
  ASSERT_EQ(s.sizes(), (std::vector<std::int64_t>{2, 2}));
  ASSERT_EQ(s.scalar_type(), torch::kFloat32);
  EXPECT_FLOAT_EQ(s[0][0].item<float>(), 3.5f * 2 / 448);
  EXPECT_FLOAT_EQ(s[0][1].item<float>(), 2.0f);
  EXPECT_FLOAT_EQ(s[1][0].item<float>(), 0.25f * 2 / 448);
  EXPECT_EQ(s[1][1].item<float>(), 1.0f);
  EXPECT_EQ(kFp8KvHeadroom, 2.0);
}

// Values e4m3 holds exactly come back exactly; beyond ±448 · scale they saturate; the bits are the
// format's (checked with the hand-written decoder).
TEST(KvFp8, QuantizeIsExactOnE4m3ValuesAndSaturates) {
  SKIP_WITHOUT_TORCH_FP8();
  torch::Tensor x = torch::tensor({0.5f, -1.75f, 3.25f, 448.0f, -0.015625f, 0.001953125f, 1000.0f, -1e6f})
                        .view({1, 1, 2, 4});  // [1, 1, 2, 4]; 2^-6 (smallest normal), 2^-9 (smallest subnormal)
  torch::Tensor one = torch::ones({1, 1});
  torch::Tensor q = quantize_kv(x, one);
  ASSERT_EQ(q.element_size(), 1);
  torch::Tensor bits = q.view(torch::kUInt8).flatten().contiguous();
  const float want[] = {0.5f, -1.75f, 3.25f, 448.0f, -0.015625f, 0.001953125f, 448.0f, -448.0f};
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(e4m3_value(bits[i].item<std::uint8_t>()), want[i]);
  }
  EXPECT_EQ(bits[3].item<std::uint8_t>(), 0x7E);  // 448 = 1.75 · 2^8: S.1111.110
  torch::Tensor back = dequantize_kv(q, one, torch::kFloat32).flatten();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(back[i].item<float>(), want[i]);
  // A scale divides on the way in and multiplies on the way out: x = 3.25 · 0.75 comes back exactly.
  torch::Tensor s = torch::full({1, 1}, 0.75f);
  EXPECT_EQ(dequantize_kv(quantize_kv(torch::full({1, 1, 1, 1}, 3.25f * 0.75f), s), s, torch::kFloat32).item<float>(),
            3.25f * 0.75f);
}

// Random k/v [B, H, S, D] with each head's own magnitude: with the prompt's scale every value lands in
// e4m3's normal range or its subnormals, so |x − deq(q(x))| ≤ 2^-4 |x| (half of the 2^-3 relative spacing)
// + 2^-10 · scale (half the subnormal spacing 2^-9), and each head's largest value is 224 · scale
// (headroom 2: half of 448). The decoded values are the hand decoder's times the scale.
TEST(KvFp8, RoundTripErrorIsWithinE4m3Rounding) {
  SKIP_WITHOUT_TORCH_FP8();
  torch::manual_seed(3);
  torch::Tensor mag = torch::tensor({0.01f, 1.0f, 30.0f, 500.0f, 2.0f, 0.5f}).view({2, 3, 1, 1});  // [B, H, 1, 1]
  torch::Tensor x = torch::randn({2, 3, 5, 16}) * mag;  // [B, H, S, D] float32
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    SCOPED_TRACE(dtype == torch::kFloat32 ? "float32" : "bfloat16");
    torch::Tensor xd = x.to(dtype);
    torch::Tensor scale = kv_scale_for(xd);                       // [B, H] float32
    torch::Tensor q = quantize_kv(xd, scale);                     // [B, H, S, D] e4m3
    torch::Tensor back = dequantize_kv(q, scale, torch::kFloat32);  // [B, H, S, D] float32
    torch::Tensor xf = xd.to(torch::kFloat32);
    torch::Tensor bound = xf.abs() * std::ldexp(1.0, -4) + scale.view({2, 3, 1, 1}) * std::ldexp(1.0, -10);
    EXPECT_TRUE(((back - xf).abs() <= bound * (1 + 1e-6)).all().item<bool>());
    // Each head's amax maps to 224 = 448 / headroom, which e4m3 holds only to its spacing (16 there).
    torch::Tensor top = (q.to(torch::kFloat32).abs().amax({2, 3}));  // [B, H]
    EXPECT_TRUE((top >= 208).logical_and(top <= 240).all().item<bool>()) << top;
    // The decoded value is the bits' value times the head's scale, rounded once to the dtype.
    torch::Tensor bits = q.view(torch::kUInt8).contiguous();
    torch::Tensor deq = dequantize_kv(q, scale, dtype).to(torch::kFloat32);
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t h = 0; h < 3; ++h)
        for (std::int64_t i = 0; i < 5 * 16; i += 7) {
          const std::int64_t s = i / 16, d = i % 16;
          const double v = e4m3_value(bits[b][h][s][d].item<std::uint8_t>()) * scale[b][h].item<float>();
          const float want = torch::tensor(static_cast<float>(v)).to(dtype).item<float>();
          EXPECT_EQ(deq[b][h][s][d].item<float>(), want);
        }
  }
}
