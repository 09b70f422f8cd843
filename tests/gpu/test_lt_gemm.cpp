// The cuBLASLt GEMM with a per-shape algorithm (llmbench/cuda/lt_gemm.h; linear()'s path for up to 256 rows):
// the same products as torch's GEMM up to summation order, for decode and prefill shapes, with and without
// a bias, in fp16 and bf16; a shape is timed once and its choice kept; inside a CUDA graph capture it runs
// the heuristic's first algorithm and the replay matches the eager call; linear() takes it up to 256 rows by
// default (LLMBENCH_GEMM unset or lt), not with LLMBENCH_GEMM=torch.
// CUDA builds only (the CPU build has no cuBLASLt path to test).
#include <gtest/gtest.h>
#include <torch/torch.h>

#ifdef LLMBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/cuda/lt_gemm.h"
#include "llmbench/model/linear.h"
#include "llmbench/model/model.h"
#include "gpu_test_util.h"

using namespace llmbench;

namespace {

// max |a − b| / max |b|, as float32 on the CPU.
struct GemmEnv {  // LLMBENCH_GEMM for one scope
  explicit GemmEnv(const char* v) { setenv("LLMBENCH_GEMM", v, 1); }
  ~GemmEnv() { unsetenv("LLMBENCH_GEMM"); }
};

cuda::LtGemmArgs args_of(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias,
                         const torch::Tensor& y) {
  cuda::LtGemmArgs a;
  a.dtype = x.scalar_type() == torch::kBFloat16 ? cuda::DType::bf16 : cuda::DType::f16;
  a.x = x.data_ptr();
  a.x_stride = x.stride(0);
  a.w = w.data_ptr();
  a.bias = bias.defined() ? bias.data_ptr() : nullptr;
  a.y = y.data_ptr();
  a.m = x.size(0);
  a.n = w.size(0);
  a.k = x.size(1);
  return a;
}

// y = x · Wᵀ (+ bias) through lt_gemm on the current stream; x [M, K] contiguous.
torch::Tensor lt_again(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  torch::Tensor y = torch::empty({x.size(0), w.size(0)}, x.options());  // [M, N]
  if (!cuda::lt_gemm(args_of(x, w, bias, y), at::cuda::getCurrentCUDAStream().stream()))
    throw Error("lt_gemm declined");
  return y;
}

}  // namespace

// lt_gemm against torch's GEMM (linear() with LLMBENCH_GEMM=torch) and a float32 reference: decode rows
// (W under the timing threshold: the first algorithm, untimed; through linear()) and a prefill block
// (≥ 256 rows: timed; called directly, linear() keeps torch's GEMM there), bias or not.
TEST(LtGemm, LinearMatchesTorchsGemm) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  torch::manual_seed(3);
  for (auto dtype : {torch::kBFloat16, torch::kFloat16}) {
    const auto opt = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
    for (std::int64_t m : {2, 4, 16, 64, 300}) {
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(cat(dtype == torch::kBFloat16 ? "bf16" : "fp16", " M=", m, with_bias ? " bias" : ""));
        torch::Tensor x = torch::randn({m, 512}, opt);            // [M, K]
        torch::Tensor w = torch::randn({768, 512}, opt) * 0.05;   // [N, K]
        torch::Tensor b = with_bias ? torch::randn({768}, opt) : torch::Tensor();  // [N]
        torch::Tensor ref = torch::matmul(x.to(torch::kFloat32), w.to(torch::kFloat32).t());  // [M, N]
        if (with_bias) ref += b.to(torch::kFloat32);
        torch::Tensor plain;
        {
          GemmEnv env("torch");
          plain = linear(x, w, {}, b, {});
        }
        torch::Tensor lt = torch::empty({m, 768}, opt);  // [M, N]
        {
          GemmEnv env("lt");
          cuda::LtGemmArgs a = args_of(x, w, b, lt);
          ASSERT_TRUE(cuda::lt_gemm(a, at::cuda::getCurrentCUDAStream().stream()));
          const auto choice = cuda::lt_choice(a);
          ASSERT_TRUE(choice.has_value());
          EXPECT_GE(choice->candidates, 1);
          if (m >= cuda::kLtTuneMinRows && choice->candidates > 1) {  // timed: both figures are real
            EXPECT_GT(choice->first_us, 0.0);
            EXPECT_GT(choice->chosen_us, 0.0);
            EXPECT_LE(choice->chosen_us, choice->first_us);
          }
          EXPECT_TRUE(torch::equal(lt_again(x, w, b), lt));  // the kept choice: the same bits again
          if (m <= 256) {  // linear(): the bias-free GEMM, then the bias added (as the fused decode step does)
            torch::Tensor want = lt_again(x, w, {});
            if (with_bias) want.add_(b);
            EXPECT_TRUE(torch::equal(linear(x, w, {}, b, {}), want));
          }
        }
        EXPECT_EQ(lt.sizes(), plain.sizes());
        EXPECT_LT(rel_diff(lt, ref), dtype == torch::kBFloat16 ? 1e-2 : 2e-3);
        EXPECT_LT(rel_diff(lt, plain), dtype == torch::kBFloat16 ? 1e-2 : 2e-3);
      }
    }
  }
}

// A [B, S, K] input (a prefill's hidden states) and a row-strided view go through the same path.
TEST(LtGemm, TakesBatchedAndStridedInputs) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  const auto opt = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  torch::Tensor w = torch::randn({256, 128}, opt) * 0.05;  // [N, K]
  torch::Tensor x3 = torch::randn({3, 80, 128}, opt);     // [B, S, K]: 240 rows
  torch::Tensor wide = torch::randn({40, 192}, opt);      // rows 192 apart; the first 128 columns are x
  GemmEnv env("lt");
  for (const torch::Tensor& x : {x3, wide.narrow(1, 0, 128)}) {
    torch::Tensor ref = torch::matmul(x.to(torch::kFloat32), w.to(torch::kFloat32).t());
    torch::Tensor y = linear(x, w, {}, {}, {});
    EXPECT_EQ(y.sizes(), ref.sizes());
    EXPECT_LT(rel_diff(y, ref), 1e-2);
  }
}

// More than 64 rows share their power-of-two bucket's choice: 300 rows time it, 400 rows reuse it (lt_gemm
// itself: linear() sends no more than 256 rows).
TEST(LtGemm, RowBucketsShareAChoice) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  const auto opt = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  torch::Tensor w = torch::randn({1024, 256}, opt) * 0.05;  // [N, K]
  GemmEnv env("lt");
  std::optional<cuda::LtChoice> first;
  for (std::int64_t m : {300, 400}) {
    SCOPED_TRACE(m);
    torch::Tensor x = torch::randn({m, 256}, opt);  // [M, K]
    torch::Tensor y = lt_again(x, w, {});
    EXPECT_LT(rel_diff(y, torch::matmul(x.to(torch::kFloat32), w.to(torch::kFloat32).t())), 1e-2);
    const auto choice = cuda::lt_choice(args_of(x, w, {}, y));
    ASSERT_TRUE(choice.has_value());
    if (!first) first = choice;
    EXPECT_EQ(choice->index, first->index);
    EXPECT_EQ(choice->chosen_us, first->chosen_us);  // the same record: 400 rows timed nothing
  }
}

// Inside a CUDA graph capture a new shape runs the heuristic's first algorithm (nothing is timed or kept);
// the replay computes what an eager call of that algorithm computes.
TEST(LtGemm, CapturesInACudaGraph) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  const auto opt = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  torch::Tensor w = torch::randn({640, 384}, opt) * 0.05;  // [N, K]: a shape no other test uses
  torch::Tensor x = torch::randn({8, 384}, opt);           // [M, K]
  torch::Tensor y = torch::empty({8, 640}, opt);
  GemmEnv env("lt");
  linear(torch::randn({2, 64}, opt), torch::randn({32, 64}, opt), {}, {}, {});  // the device's workspace, outside the capture
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, 0);
  at::cuda::CUDAGraph graph;
  {
    c10::cuda::CUDAStreamGuard guard(side);
    graph.capture_begin();
    ASSERT_TRUE(cuda::lt_gemm(args_of(x, w, {}, y), side.stream()));
    graph.capture_end();
  }
  EXPECT_FALSE(cuda::lt_choice(args_of(x, w, {}, y)).has_value());  // not kept: it was never timed
  x.copy_(torch::randn({8, 384}, opt));
  graph.replay();
  torch::cuda::synchronize();
  const torch::Tensor replayed = y.clone();
  y.zero_();
  ASSERT_TRUE(cuda::lt_gemm(args_of(x, w, {}, y), at::cuda::getCurrentCUDAStream().stream()));  // eager: W small, M small → the first algorithm, kept
  torch::cuda::synchronize();
  EXPECT_TRUE(torch::equal(replayed, y));
  EXPECT_LT(rel_diff(y, torch::matmul(x.to(torch::kFloat32), w.to(torch::kFloat32).t())), 1e-2);
}

// LLMBENCH_GEMM unset (the default) or lt: up to 256 rows the bits of an lt_gemm call, torch's GEMM bit for bit
// above that (an untimed row bucket); torch: torch's GEMM; a bad value is a usage error.
TEST(LtGemm, LinearTakesItUpTo256Rows) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  const auto opt = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  torch::Tensor w = torch::randn({136, 264}, opt);  // [N, K]: a shape no other test uses
  for (std::int64_t m : {4, 256, 257}) {
    SCOPED_TRACE(m);
    torch::Tensor x = torch::randn({m, 264}, opt);  // [M, K]
    const torch::Tensor want = torch::nn::functional::linear(x, w);
    const torch::Tensor got = linear(x, w, {}, {}, {});  // on by default
    {
      GemmEnv env("lt");
      EXPECT_TRUE(torch::equal(linear(x, w, {}, {}, {}), got));
    }
    if (m <= 256) {
      EXPECT_TRUE(cuda::lt_choice(args_of(x, w, {}, got)).has_value());  // the call went through lt_gemm
      EXPECT_TRUE(torch::equal(got, lt_again(x, w, {})));
      EXPECT_LT(rel_diff(got, want), 1e-2);
    } else {
      EXPECT_TRUE(torch::equal(got, want));
    }
    GemmEnv env("torch");
    EXPECT_TRUE(torch::equal(linear(x, w, {}, {}, {}), want));
  }
  GemmEnv env("fast");
  EXPECT_THROW(linear(torch::randn({4, 264}, opt), w, {}, {}, {}), UsageError);
}

// Over 256 rows linear() keeps torch's GEMM until tune_lt_gemm has timed the row bucket; then it runs the
// bucket's choice. Model::tune_gemms times every layer matrix at the given rows; both are no-ops with
// LLMBENCH_GEMM=torch.
TEST(LtGemm, PrefillRowsOnlyAfterTuning) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  const auto opt = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  torch::Tensor w = torch::randn({520, 272}, opt) * 0.05;  // [N, K]: a shape no other test uses
  torch::Tensor x = torch::randn({300, 272}, opt);         // [M, K]: row bucket 512
  torch::Tensor y = torch::empty({300, 520}, opt);         // [M, N] for the lookups
  const torch::Tensor want = torch::nn::functional::linear(x, w);
  {
    GemmEnv off("torch");
    tune_lt_gemm(w, 512);  // nothing timed
    EXPECT_FALSE(cuda::lt_choice(args_of(x, w, {}, y)).has_value());
  }
  GemmEnv env("lt");
  EXPECT_TRUE(torch::equal(linear(x, w, {}, {}, {}), want));  // not timed yet: torch's GEMM
  EXPECT_FALSE(cuda::lt_choice(args_of(x, w, {}, y)).has_value());
  tune_lt_gemm(w, 512);
  ASSERT_TRUE(cuda::lt_choice(args_of(x, w, {}, y)).has_value());
  const torch::Tensor got = linear(x, w, {}, {}, {});
  EXPECT_TRUE(torch::equal(got, lt_again(x, w, {})));
  EXPECT_LT(rel_diff(got, want), 1e-2);

  auto m = Model::load({std::string(LLMBENCH_TEST_DATA) + "/models/qwen2_bias", "bfloat16", "cuda", "eager", 0});
  const ModelConfig& c = m->config();
  const std::int64_t h = c.hidden_size, qkv = (c.num_heads + 2 * c.num_kv_heads) * c.head_dim;
  // 4096 rows: a bucket that no other test's prefill reaches (run's tuning in VerifyGpu.* times its prompts)
  torch::Tensor hx = torch::empty({4096, h}, opt), hy = torch::empty({4096, qkv}, opt);
  torch::Tensor wq = torch::empty({qkv, h}, opt);  // pointers are not part of the lookup
  EXPECT_FALSE(cuda::lt_choice(args_of(hx, wq, {}, hy)).has_value());
  EXPECT_GT(m->tune_gemms({4096}), 0.0);
  EXPECT_TRUE(cuda::lt_choice(args_of(hx, wq, {}, hy)).has_value());
  tune_lt_gemm(torch::zeros({64, 256}, opt.dtype(torch::kInt8)), 512);  // quantized weights: left alone
}

// The split-K partials that the decode step's add + RMSNorm reduces (LLMBENCH_SPLITK_FUSE): each partial is
// its K slice's product and they sum to the whole product; a split that does not divide K into multiples
// of 8 is declined; linear_partials gives them only where asked for (a forced split count or auto), and
// lt_split_k reports cuBLASLt's own split for a shape once it has chosen. Printed for the model shapes:
// what auto does on this GPU.
TEST(LtGemm, PartialsSumToTheProduct) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA not available";
  torch::manual_seed(21);
  const auto opt = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  const auto stream = at::cuda::getCurrentCUDAStream().stream();
  for (std::int64_t m : {1, 4, 16, 64}) {
    for (int s : {2, 3, 4, 8}) {
      SCOPED_TRACE(cat("M=", m, " S=", s));
      const std::int64_t k = 8 * s * 9, n = 200;
      torch::Tensor x = torch::randn({m, k}, opt), w = torch::randn({n, k}, opt) * 0.05;  // [M, K], [N, K]
      torch::Tensor partials = torch::empty({s, m, n}, opt.dtype(torch::kFloat32));     // [S, M, N]
      ASSERT_TRUE(cuda::lt_gemm_partials(args_of(x, w, {}, partials), s, partials.data_ptr<float>(), stream));
      const std::int64_t ks = k / s;
      for (int j = 0; j < s; ++j) {
        torch::Tensor ref = torch::matmul(x.narrow(1, j * ks, ks).to(torch::kFloat32),
                                          w.narrow(1, j * ks, ks).to(torch::kFloat32).t());  // [M, N]
        EXPECT_LT(rel_diff(partials[j], ref), 1e-4) << "split " << j;
      }
      torch::Tensor ref = torch::matmul(x.to(torch::kFloat32), w.to(torch::kFloat32).t());
      EXPECT_LT(rel_diff(partials.sum(0), ref), 1e-4);
      // A slice of K / S that is not a multiple of 8 elements: declined.
      torch::Tensor odd = torch::randn({m, k + 8}, opt), w_odd = torch::randn({n, k + 8}, opt);
      torch::Tensor p_odd = torch::empty({s, m, n}, opt.dtype(torch::kFloat32));
      if ((k + 8) % (8 * s) != 0) {
        EXPECT_FALSE(cuda::lt_gemm_partials(args_of(odd, w_odd, {}, p_odd), s, p_odd.data_ptr<float>(), stream));
      }
    }
  }
  // linear_partials: off with 0; a forced split count; a bad value.
  torch::Tensor x = torch::randn({4, 512}, opt), w = torch::randn({264, 512}, opt) * 0.05;  // [M, K], [N, K]
  setenv("LLMBENCH_SPLITK_FUSE", "0", 1);
  EXPECT_FALSE(linear_partials(x, w, {}, {}, {}).defined());
  setenv("LLMBENCH_SPLITK_FUSE", "4", 1);
  torch::Tensor p = linear_partials(x, w, {}, {}, {});
  ASSERT_TRUE(p.defined());
  EXPECT_EQ(p.sizes(), (std::vector<std::int64_t>{4, 4, 264}));
  EXPECT_LT(rel_diff(p.sum(0), torch::matmul(x.to(torch::kFloat32), w.to(torch::kFloat32).t())), 1e-4);
  EXPECT_FALSE(linear_partials(torch::randn({65, 512}, opt), w, {}, {}, {}).defined());  // more rows than a decode batch
  setenv("LLMBENCH_SPLITK_FUSE", "1", 1);
  EXPECT_THROW(linear_partials(x, w, {}, {}, {}), UsageError);
  // auto (the default): up to 8 rows, cuBLASLt's own split where it splits (the model's decode shapes),
  // rounded down to a count that cuts K into whole vectors; nothing where it does not split or at more rows.
  unsetenv("LLMBENCH_SPLITK_FUSE");
  struct Shape { const char* name; std::int64_t n, k; };
  for (const Shape& sh : {Shape{"qwen2.5-7b o", 3584, 3584}, Shape{"qwen2.5-7b down", 3584, 18944},
                          Shape{"llama-3-8b o", 4096, 4096}, Shape{"llama-3-8b down", 4096, 14336}}) {
    torch::Tensor wb = torch::randn({sh.n, sh.k}, opt) * 0.02;  // [N, K]
    for (std::int64_t m : {2, 4, 8, 16, 64}) {
      torch::Tensor xb = torch::randn({m, sh.k}, opt);  // [M, K]
      torch::Tensor pb = linear_partials(xb, wb, {}, {}, {});
      torch::Tensor y = torch::empty({m, sh.n}, opt);
      const int split = cuda::lt_split_k(args_of(xb, wb, {}, y));
      std::printf("[ splitk   ] %s M=%ld: cuBLASLt splits K in %d; partials: %ld\n", sh.name, static_cast<long>(m),
                  split, pb.defined() ? static_cast<long>(pb.size(0)) : 0L);
      if (m > 8) {  // auto leaves these to cuBLASLt's own reduction: nothing chosen through linear_partials
        EXPECT_FALSE(pb.defined());
        continue;
      }
      EXPECT_GE(split, 1);  // chosen by linear_partials' first call
      int usable = split;
      while (usable >= 2 && sh.k % (8 * usable) != 0) --usable;
      EXPECT_EQ(pb.defined(), usable >= 2);
      if (pb.defined()) {
        EXPECT_EQ(pb.size(0), usable);
        EXPECT_LT(rel_diff(pb.sum(0), torch::matmul(xb.to(torch::kFloat32), wb.to(torch::kFloat32).t())), 1e-3);
      }
    }
  }
  unsetenv("LLMBENCH_SPLITK_FUSE");
}

#endif  // LLMBENCH_WITH_CUDA
