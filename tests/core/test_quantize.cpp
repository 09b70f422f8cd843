#include <gtest/gtest.h>

#include <cmath>

#include "llmbench/base/error.h"
#include "llmbench/bench/memory.h"
#include "llmbench/model/linear.h"
#include "llmbench/model/model.h"
#include "llmbench/model/presets.h"
#include "llmbench/model/quantize.h"
#include "llmbench/runner/quality.h"
#include "llmbench/runner/roofline.h"
#include "llmbench/runner/runner.h"

using namespace llmbench;

namespace {

// The documented CPU tolerance of INT8 weights on the tiny model (docs/quantization.md): last-position
// logits within 5 % (relative Frobenius error) of the float32 model's.
constexpr double kInt8LogitsRelErr = 0.05;

double rel_err(const torch::Tensor& a, const torch::Tensor& ref) {
  return ((a - ref).norm() / ref.norm()).item<double>();
}

}  // namespace

// Hand-computed: row 0 max 1 → scale 1/127, −0.3·127 = −38.1 → −38, 0.25·127 = 31.75 → 32; row 1 is all
// zeros → scale 1; row 2 max 2.54 → scale 0.02, 1/0.02 = 50, 0.046/0.02 = 2.3 → 2.
TEST(Quantize, Int8PerRowScalesAndValues) {
  torch::Tensor w = torch::tensor({1.0f, -0.3f, 0.25f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -2.54f, 1.0f, 0.046f, 2.0f}).view({3, 4});
  QuantizedTensor q = quantize(w, WeightFormat::int8);
  ASSERT_EQ(q.q.scalar_type(), torch::kInt8);
  ASSERT_EQ(q.scale.scalar_type(), torch::kFloat32);
  EXPECT_NEAR(q.scale[0].item<float>(), 1.0f / 127, 1e-9);
  EXPECT_EQ(q.scale[1].item<float>(), 1.0f);
  EXPECT_NEAR(q.scale[2].item<float>(), 0.02f, 1e-8);
  torch::Tensor expected = torch::tensor({127, -38, 32, 0, 0, 0, 0, 0, -127, 50, 2, 100}, torch::kInt8).view({3, 4});
  EXPECT_TRUE(torch::equal(q.q, expected)) << q.q;
  // Round trip: q · scale, within half a step of the original.
  torch::Tensor back = dequantize(q.q, q.scale, torch::kFloat32);  // [3, 4]
  EXPECT_TRUE(torch::allclose(back, expected.to(torch::kFloat32) * q.scale.unsqueeze(1)));
  EXPECT_TRUE(((back - w).abs() <= q.scale.unsqueeze(1) / 2 + 1e-7).all().item<bool>());
}

TEST(Quantize, Int8RoundTripOnRandomWeights) {
  torch::manual_seed(3);
  torch::Tensor w = torch::randn({64, 96}) * 0.02;  // [N, K]
  QuantizedTensor q = quantize(w, WeightFormat::int8);
  EXPECT_EQ(q.q.abs().amax(1).min().item<int>(), 127);  // every row uses the full range
  torch::Tensor back = dequantize(q.q, q.scale, torch::kFloat32);
  EXPECT_TRUE(((back - w).abs() <= q.scale.unsqueeze(1) / 2 + 1e-9).all().item<bool>());
  EXPECT_LT(rel_err(back, w), 0.02);
  // bfloat16 output: the same values rounded once.
  EXPECT_TRUE(torch::equal(dequantize(q.q, q.scale, torch::kBFloat16), back.to(torch::kBFloat16)));
  // Blocks of 3 rows (64 is not a multiple of 3) and of 1 row give bit-identical results.
  for (std::int64_t block : {3 * 96, 1}) {
    QuantizedTensor b = quantize(w, WeightFormat::int8, block);
    EXPECT_TRUE(torch::equal(b.q, q.q)) << block;
    EXPECT_TRUE(torch::equal(b.scale, q.scale)) << block;
  }
}

TEST(Quantize, NamesAndBadInput) {
  EXPECT_EQ(parse_weight_format("bf16"), WeightFormat::plain);
  EXPECT_EQ(parse_weight_format("int8"), WeightFormat::int8);
  EXPECT_EQ(parse_weight_format("fp8"), WeightFormat::fp8);
  EXPECT_THROW(parse_weight_format("int4"), UsageError);
  EXPECT_EQ(to_string(WeightFormat::int8), "int8");
  EXPECT_THROW(quantize(torch::ones({4}), WeightFormat::int8), Error);
  EXPECT_THROW(dequantize(torch::ones({2, 2}), torch::ones({2}), torch::kFloat32), Error);  // not quantized
  EXPECT_EQ(parse_fp8_gemm("scaled-mm"), Fp8Gemm::scaled_mm);
  EXPECT_THROW(parse_fp8_gemm("cublas"), UsageError);
}

// fp8 needs a CUDA GPU (sm_89+) and libtorch ≥ 2.1: on the CPU it is a one-line UsageError.
TEST(Quantize, Fp8OnTheCpuIsAUsageError) {
  try {
    Model::load({"tiny", "float32", "cpu", "eager", 0, "fp8"});
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "fp8 weights need a CUDA GPU with FP8 (sm_89+) and libtorch >= 2.1");
  }
}

// plain path of linear(): y = x · dequantize(W)ᵀ + b, against the hand-written product.
TEST(Quantize, LinearOnQuantizedWeights) {
  torch::manual_seed(4);
  torch::Tensor w = torch::randn({6, 8});
  torch::Tensor b = torch::randn({6});
  torch::Tensor x = torch::randn({2, 3, 8});
  QuantizedTensor q = quantize(w, WeightFormat::int8);
  torch::Tensor y = linear(x, q.q, q.scale, b, LinearPaths{});  // [2, 3, 6]
  ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{2, 3, 6}));
  torch::Tensor ref = torch::matmul(x, (q.q.to(torch::kFloat32) * q.scale.unsqueeze(1)).t()) + b;
  EXPECT_TRUE(torch::allclose(y, ref, 1e-5, 1e-5));
  LinearPaths gemv;
  gemv.gemv = true;  // on the CPU the GEMV never applies: the same plain result
  EXPECT_FALSE(gemv_applies(x, q.q, q.scale, b, gemv));
  EXPECT_TRUE(torch::allclose(linear(x, q.q, q.scale, b, gemv), ref, 1e-5, 1e-5));
  // Dequantized a block of rows at a time (at most 1, 2 and 4 of the 6 rows: 6, 3 and 2 blocks), with and
  // without the bias: the same product.
  for (std::int64_t rows : {1, 2, 4}) {
    LinearPaths blocked;
    blocked.dequant_block_elems = rows * 8;
    EXPECT_TRUE(torch::allclose(linear(x, q.q, q.scale, b, blocked), ref, 1e-5, 1e-5)) << rows;
    EXPECT_TRUE(torch::allclose(linear(x, q.q, q.scale, {}, blocked), ref - b, 1e-5, 1e-5)) << rows;
  }
}

// Qwen2.5-7B's bytes by hand. Layers: q, k, v, o = 3584·3584 + 2·3584·512 + 3584·3584 = 29,360,128 and
// gate, up, down = 3·3584·18944 = 203,685,888 matmul weights; × 28 + the untied head 152064·3584 =
// 544,997,376 gives 7,070,285,824 quantized weights (1 byte each) with 28·(4608 + 3584 + 37888 + 3584) +
// 152,064 = 1,542,656 float32 row scales; the rest (embedding 544,997,376, qkv biases 28·4608, norms
// 57·3584) stays bf16: 545,330,688 · 2 bytes. Total 8,167,117,824 bytes = 7,788.8 MiB, the
// `memory.weights_bytes` the H200 reported for --weights int8 (docs/quantization.md).
TEST(Quantize, Qwen7bQuantizedBytesByHand) {
  const ModelShape s = shape_of(resolve_model("qwen2.5-7b").config);
  ASSERT_FALSE(s.tied_embeddings);
  const ModelSize m = model_size(s);
  EXPECT_EQ(m.matmul_params, 7070285824LL);
  EXPECT_EQ(m.matmul_rows, 1542656LL);
  EXPECT_EQ(m.params - m.matmul_params, 545330688LL);
  EXPECT_EQ(weight_bytes(s, 2, 1), 545330688ULL * 2 + 7070285824ULL + 1542656ULL * 4);
  EXPECT_EQ(weight_bytes(s, 2, 1), 8167117824ULL);
  EXPECT_EQ(weight_bytes(s, 2), 7615616512ULL * 2);  // bf16: every parameter at 2 bytes
  // The prefill's dequantized transient in the estimate: one block (≤ 80 Mi weights + a row), not the head.
  const MemoryEstimate q = estimate_memory(s, 1, 512, 64, 2, 1), plain = estimate_memory(s, 1, 512, 64, 2);
  EXPECT_EQ(q.activations - plain.activations, (static_cast<std::uint64_t>(kDequantBlockElems) + 18944) * 2);
}

// An untied lm_head is quantized with the layers (the qwen2_bias fixture: HF weights, untied head): the
// byte count is the estimate's with the head at one byte per weight, the dequantized head is within half a
// step of the float one per row, and the logits (prefill and teacher-forced decode) stay within tolerance.
TEST(Quantize, Int8QuantizesAnUntiedHead) {
  const std::string dir = std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias";
  auto plain = Model::load({dir, "float32", "cpu", "eager", 0});
  auto int8 = Model::load({dir, "float32", "cpu", "eager", 0, "int8"});
  ASSERT_FALSE(plain->config().tie_word_embeddings);
  const ModelShape shape = shape_of(plain->config());
  EXPECT_EQ(static_cast<std::uint64_t>(int8->info().weight_bytes), weight_bytes(shape, 4, 1));
  const ModelSize size = model_size(shape);
  EXPECT_EQ(size.matmul_rows, shape.layers * (2 * shape.hidden + 2 * shape.kv_heads * shape.head_dim +
                                              2 * shape.intermediate + shape.hidden) + shape.vocab);
  const torch::Tensor w = plain->lm_head_float32(), wq = int8->lm_head_float32();  // [V, H] float32
  const torch::Tensor step = w.abs().amax(1, /*keepdim=*/true) / 127;               // [V, 1] the int8 step
  EXPECT_FALSE(torch::equal(wq, w));
  EXPECT_TRUE(((wq - w).abs() <= step / 2 + 1e-7).all().item<bool>());

  torch::Tensor ids = torch::tensor({5, 17, 99, 3, 42, 7, 150, 11, 64, 2}, torch::kInt64).view({2, 5});  // [2, 5]
  plain->allocate_cache(2, 9);
  int8->allocate_cache(2, 9);
  torch::Tensor lp = plain->prefill(ids), lq = int8->prefill(ids);  // [2, V]
  EXPECT_LT(rel_err(lq, lp), kInt8LogitsRelErr);
  torch::Tensor tok = lp.argmax(-1);
  for (int i = 0; i < 3; ++i) {
    torch::Tensor dp = plain->decode_step(tok), dq = int8->decode_step(tok);
    EXPECT_LT(rel_err(dq, dp), kInt8LogitsRelErr);
    tok = dp.argmax(-1);
  }
}

// The INT8 tiny model against the float32 one: only qkv/o/gate_up/down are quantized (the rest, the tied
// lm_head included, is bit-identical), the byte count is the estimate's, and the logits stay within the
// documented tolerance.
TEST(Quantize, Int8ModelAgainstTheFloatModel) {
  auto plain = Model::load({"tiny", "float32", "cpu", "eager", 7});
  auto int8 = Model::load({"tiny", "float32", "cpu", "eager", 7, "int8"});
  EXPECT_EQ(int8->info().quant, "int8");
  EXPECT_EQ(plain->info().quant, "bf16");
  EXPECT_TRUE(torch::equal(int8->lm_head_float32(), plain->lm_head_float32()));  // tied: the embedding
  const ModelShape shape = shape_of(plain->config());
  EXPECT_EQ(static_cast<std::uint64_t>(plain->info().weight_bytes), weight_bytes(shape, 4));
  EXPECT_EQ(static_cast<std::uint64_t>(int8->info().weight_bytes), weight_bytes(shape, 4, 1));
  EXPECT_LT(int8->info().weight_bytes, plain->info().weight_bytes * 0.6);

  torch::Tensor ids = torch::tensor({5, 17, 99, 3, 42, 7, 250, 11, 64, 2}, torch::kInt64).view({2, 5});  // [2, 5]
  plain->allocate_cache(2, 9);
  int8->allocate_cache(2, 9);
  plain->reset_cache();
  int8->reset_cache();
  torch::Tensor lp = plain->prefill(ids), lq = int8->prefill(ids);  // [2, V]
  EXPECT_LT(rel_err(lq, lp), kInt8LogitsRelErr);
  EXPECT_GT(rel_err(lq, lp), 0.0);  // the quantization did something
  torch::Tensor tok = lp.argmax(-1);
  for (int i = 0; i < 3; ++i) {  // teacher-forced decode steps stay close too
    torch::Tensor dp = plain->decode_step(tok), dq = int8->decode_step(tok);
    EXPECT_LT(rel_err(dq, dp), kInt8LogitsRelErr);
    tok = dp.argmax(-1);
  }
}

// KL(p_ref ‖ p): ref logits [1, 1] → p_ref = (1/2, 1/2); logits [1 + ln 3, 1] → p = (3/4, 1/4);
// KL = ½ ln(2/3) + ½ ln 2 = ½ ln(4/3). Relative error ln 3 / √2; argmax 0 for both.
TEST(Quality, CompareLogitsByHand) {
  torch::Tensor ref = torch::tensor({1.0f, 1.0f, 0.0f, 2.0f}).view({2, 2});
  torch::Tensor q = torch::tensor({1.0f + std::log(3.0f), 1.0f, 0.0f, 2.0f}).view({2, 2});
  Quality r = compare_logits(q, ref);
  EXPECT_EQ(r.positions, 2);
  EXPECT_NEAR(r.kl_divergence_mean, 0.5 * std::log(4.0 / 3.0) / 2, 1e-6);
  EXPECT_NEAR(r.logits_rel_err, std::log(3.0) / std::sqrt(6.0), 1e-6);  // ‖(ln 3, 0, 0, 0)‖ / ‖(1, 1, 0, 2)‖
  EXPECT_DOUBLE_EQ(r.top1_agreement, 1.0);
  Quality same = compare_logits(ref, ref);
  EXPECT_EQ(same.logits_rel_err, 0);
  EXPECT_NEAR(same.kl_divergence_mean, 0, 1e-9);
  torch::Tensor flipped = torch::tensor({0.0f, 1.0f, 0.0f, 2.0f}).view({2, 2});  // row 0's argmax moves
  EXPECT_DOUBLE_EQ(compare_logits(flipped, ref).top1_agreement, 0.5);
}

// A run sweeping --weights bf16,int8: the int8 point carries quality figures against the float32 model,
// the bf16 point none; the weight bytes and the roofline's bytes per step are the quantized ones.
TEST(Quality, RunRecordsQualityOnQuantizedPoints) {
  RunOptions o;
  o.model = "tiny";
  o.device = "cpu";
  o.dtype = {"float32"};
  o.weights = {"bf16", "int8"};
  o.batch = {2};
  o.prompt_len = {8};
  o.max_new_tokens = {4};
  o.warmup = 0;
  o.runs = 1;
  o.trim = 0;
  RunHooks hooks;
  hooks.measure_ceilings = false;
  Results r = run_benchmark(o, hooks);
  ASSERT_EQ(r.points.size(), 2u);
  const PointResult &plain = r.points[0], &int8 = r.points[1];
  ASSERT_EQ(plain.status, "ok") << plain.error;
  ASSERT_EQ(int8.status, "ok") << int8.error;
  EXPECT_EQ(plain.params.weights, "bf16");
  EXPECT_EQ(int8.params.weights, "int8");
  EXPECT_FALSE(plain.quality);
  ASSERT_TRUE(int8.quality);
  const Quality& q = *int8.quality;
  EXPECT_EQ(q.reference, "float32");
  EXPECT_EQ(q.positions, 2 * 4);
  EXPECT_GE(q.top1_agreement, 0.0);
  EXPECT_LE(q.top1_agreement, 1.0);
  EXPECT_GE(q.top1_agreement, 0.5);  // int8 on tiny: nearly every argmax survives
  EXPECT_GT(q.logits_rel_err, 0.0);
  EXPECT_LT(q.logits_rel_err, kInt8LogitsRelErr);
  EXPECT_GE(q.kl_divergence_mean, 0.0);
  EXPECT_LT(q.kl_divergence_mean, 0.05);
  ASSERT_TRUE(int8.verification);
  EXPECT_TRUE(int8.verification->ok);
  EXPECT_LT(int8.memory.weights_bytes, plain.memory.weights_bytes);
  const ModelShape shape = shape_of(resolve_model("tiny").config);
  EXPECT_EQ(int8.memory.weights_bytes, weight_bytes(shape, 4, 1));
  EXPECT_DOUBLE_EQ(int8.roofline.decode_bytes_per_step, decode_bytes_per_step(shape, 2, 8, 4, 4, 1));
  EXPECT_LT(int8.roofline.decode_bytes_per_step, plain.roofline.decode_bytes_per_step);
  // JSON round trip keeps the figures.
  Results back = results_from_json(to_json(r));
  ASSERT_TRUE(back.points[1].quality);
  EXPECT_DOUBLE_EQ(back.points[1].quality->top1_agreement, q.top1_agreement);
  EXPECT_EQ(back.points[1].params.weights, "int8");
  EXPECT_FALSE(back.points[0].quality);
}

TEST(Quality, BadWeightsOptionsAreUsageErrors) {
  RunOptions o;
  o.weights = {"int4"};
  EXPECT_THROW(validate(o), UsageError);
  o.weights = {"int8"};
  o.fp8_gemm = "cublas";
  EXPECT_THROW(validate(o), UsageError);
}
