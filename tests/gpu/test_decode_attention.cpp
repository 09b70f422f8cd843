// The fused decode-attention kernel over long caches and large batches (issue 15: torch fallback past
// 1024 columns), against the eager formula it replaces, in Qwen2.5-7B (28/4 heads) and Llama-3-8B
// (32/8) shapes, bf16, D = 128.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <tuple>
#include <string>
#include <vector>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "../core/remove_tree.h"
#include "llmbench/base/error.h"
#include "llmbench/base/fs.h"
#ifdef LLMBENCH_WITH_CUDA
#include "llmbench/cuda/kernels.h"
#endif
#include "llmbench/model/attention.h"
#include "llmbench/model/fused_ops.h"
#include "llmbench/model/model.h"
#include "llmbench/model/presets.h"
#include "gpu_test_util.h"

namespace llmbench {
namespace {

// valid [B, T]: row b holds tokens in [pads[b], ends[b]).
torch::Tensor rows_valid(const std::vector<std::int64_t>& pads, const std::vector<std::int64_t>& ends, std::int64_t t) {
  torch::Tensor cols = torch::arange(t, torch::kInt64).unsqueeze(0);  // [1, T]
  torch::Tensor start = torch::tensor(pads, torch::kInt64).unsqueeze(1), end = torch::tensor(ends, torch::kInt64).unsqueeze(1);
  return (cols >= start).logical_and(cols < end).to(torch::kCUDA);  // [B, T] bool
}

// LLMBENCH_DECODE_ATTENTION for the scope: "split" or "mma" forces that kernel, "" the planner's choice.
class ScopedKernel {
 public:
  explicit ScopedKernel(const std::string& kernel) { ::setenv("LLMBENCH_DECODE_ATTENTION", kernel.c_str(), 1); }
  ~ScopedKernel() { ::unsetenv("LLMBENCH_DECODE_ATTENTION"); }
  ScopedKernel(const ScopedKernel&) = delete;
  ScopedKernel& operator=(const ScopedKernel&) = delete;
};

// Why the mma kernel does not run on this GPU ("" when it does: compute capability 9.0+, clusters).
std::string mma_unavailable() {
  static const std::string why = [] {
    ScopedKernel scoped("mma");
    try {
      fused::decode_attention(randn_bf16({1, 8, kHeadDim}), randn_bf16({1, 8, 16, kHeadDim}), randn_bf16({1, 8, 16, kHeadDim}),
                              torch::ones({1, 16}, torch::kBool).to(torch::kCUDA));
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }();
  return why;
}

// The kernels this GPU runs: split everywhere, mma where it is available.
std::vector<std::string> kernels() {
  std::vector<std::string> out{"split"};
  if (mma_unavailable().empty()) out.push_back("mma");
  return out;
}

// Fused vs the eager formula (decoder's attention(), S = 1): float summation order only. Every kernel.
void check(std::int64_t hq, std::int64_t hkv, const torch::Tensor& valid, const std::string& what,
           torch::ScalarType dtype = torch::kBFloat16, std::int64_t d = kHeadDim) {
  const auto b = valid.size(0), t = valid.size(1);
  torch::Tensor q = randn_bf16({b, hq, d}).to(dtype);                                          // [B, Hq, D]
  torch::Tensor keys = randn_bf16({b, hkv, t, d}).to(dtype), values = randn_bf16({b, hkv, t, d}).to(dtype);  // [B, Hkv, T, D]
  torch::Tensor want = attention(AttnImpl::eager, q.unsqueeze(2), keys, values, valid.view({b, 1, 1, t})).squeeze(2);
  for (const std::string& kernel : kernels()) {
    ScopedKernel scoped(kernel);
    const std::string where = what + " [" + kernel + "]";
    torch::Tensor got = fused::decode_attention(q, keys, values, valid);  // [B, Hq, D]
    ASSERT_EQ(got.sizes(), want.sizes()) << where;
    torch::Tensor err = (got.to(torch::kFloat32) - want.to(torch::kFloat32)).abs();
    torch::Tensor excess = err - (2e-3 + want.to(torch::kFloat32).abs() / 64);
    EXPECT_LE(excess.max().item<double>(), 0.0) << where << ": max abs error " << err.max().item<double>();
    EXPECT_LT(err.mean().item<double>(), 2e-4) << where;
    EXPECT_GT(got.eq(want).to(torch::kFloat32).mean().item<double>(), 0.5) << where << ": most outputs bit-equal";
    EXPECT_TRUE(torch::equal(got, fused::decode_attention(q, keys, values, valid))) << where << ": deterministic";
  }
}

TEST(GpuDecodeAttention, Batch16At4096Columns) {
  REQUIRE_CUDA();
  torch::manual_seed(11);
  const std::int64_t t = 4096;
  std::vector<std::int64_t> pads(16), ends(16);
  for (int i = 0; i < 16; ++i) {
    pads[i] = (i * 37) % 300;     // left padding
    ends[i] = t - (i * 53) % 900;  // rows at different decode positions
  }
  check(28, 4, rows_valid(pads, ends, t), "Qwen B=16 T=4096");
  check(32, 8, rows_valid(pads, ends, t), "Llama B=16 T=4096");
}

// The bound by the written column (LLMBENCH_ATTN_BOUND, on by default): given each row's written column,
// the mma kernel reads no tile past it. Where the contract holds (no valid column after it) the bits equal the
// unbounded kernel's, which the tests above hold to the eager formula: batch 64 × 1,024 columns with 512–640
// valid (the server's bucket; loop kernel), 16 × 2,048 ragged (loop, 2 splits), 4 × 2,048 (push kernel, 8
// splits, later splits past the column do nothing) and 1 × 8,448. Where it is broken on purpose (valid columns
// after the written one), bound on attends exactly the columns up to it and bound off all of them: the bound is
// live. Bad values: UsageError.
TEST(GpuDecodeAttention, BoundByWrittenColumnChangesNoBit) {
  REQUIRE_CUDA();
  if (!mma_unavailable().empty()) GTEST_SKIP() << mma_unavailable();
  torch::manual_seed(21);
  ScopedKernel scoped("mma");
  for (const auto& [b, t, last] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
           {64, 1024, 640}, {16, 2048, 2000}, {4, 2048, 700}, {1, 8448, 5000}}) {
    std::vector<std::int64_t> pads(b), ends(b), written(b);
    for (std::int64_t i = 0; i < b; ++i) {
      pads[i] = (i * 29) % 40;
      ends[i] = last - (i * 37) % 129;
      written[i] = ends[i] - 1;  // the newest token's column: the last valid one
    }
    const torch::Tensor valid = rows_valid(pads, ends, t);                        // [B, T] bool
    const torch::Tensor column = torch::tensor(written, torch::kInt64).to(torch::kCUDA);  // [B] int64
    torch::Tensor q = randn_bf16({b, 28, kHeadDim});                                          // [B, Hq, D]
    torch::Tensor keys = randn_bf16({b, 4, t, kHeadDim}), values = randn_bf16({b, 4, t, kHeadDim});      // [B, Hkv, T, D]
    const torch::Tensor plain = fused::decode_attention(q, keys, values, valid);   // [B, Hq, D], no column given
    const std::string what = cat("B=", b, " T=", t);
    for (const char* bound : {"1", "0"}) {
      ::setenv("LLMBENCH_ATTN_BOUND", bound, 1);
      EXPECT_TRUE(torch::equal(plain, fused::decode_attention(q, keys, values, valid, {}, {}, column)))
          << what << " bound " << bound;
    }
    ::unsetenv("LLMBENCH_ATTN_BOUND");
    // The contract broken: every column valid. Bound on = the columns up to the written one only.
    const torch::Tensor all = torch::ones({b, t}, torch::kBool).to(torch::kCUDA);  // [B, T]
    const torch::Tensor upto = rows_valid(std::vector<std::int64_t>(b, 0), ends, t);  // [B, T]
    EXPECT_TRUE(torch::equal(fused::decode_attention(q, keys, values, upto),
                             fused::decode_attention(q, keys, values, all, {}, {}, column)))
        << what << ": bound on reads past the written column";
    ::setenv("LLMBENCH_ATTN_BOUND", "0", 1);
    EXPECT_TRUE(torch::equal(fused::decode_attention(q, keys, values, all),
                             fused::decode_attention(q, keys, values, all, {}, {}, column)))
        << what << ": bound off attends every valid column";
    ::unsetenv("LLMBENCH_ATTN_BOUND");
  }
  ::setenv("LLMBENCH_ATTN_BOUND", "2", 1);
  EXPECT_THROW(fused::decode_attention(randn_bf16({64, 28, kHeadDim}), randn_bf16({64, 4, 64, kHeadDim}), randn_bf16({64, 4, 64, kHeadDim}),
                                       torch::ones({64, 64}, torch::kBool).to(torch::kCUDA)),
               UsageError);
  ::unsetenv("LLMBENCH_ATTN_BOUND");
}

// LLMBENCH_ATTN_EAGER_LOADS=1 (the loop kernel's K and V reads issued before the flags and probs that decide
// what they are used for): the same MMAs on the same operands, so the bits equal the default kernel's, which the
// tests around this one hold to the eager formula. The loop kernel's shapes: batch 64 × 1,024 with the written
// column (the server's step), 64 × 576 without, 16 × 2,048 (2 splits), 1 × 8,448 (5 splits), fp16 with D = 64,
// Llama-3-8B's 8 heads per block; the push kernel (4 × 2,048), which the switch leaves alone. Left padding and
// columns past the end hold NaN: masked columns still reach no output. Bad values: UsageError.
TEST(GpuDecodeAttention, EagerLoadsChangeNoBit) {
  REQUIRE_CUDA();
  if (!mma_unavailable().empty()) GTEST_SKIP() << mma_unavailable();
  torch::manual_seed(23);
  ScopedKernel scoped("mma");
  struct Case {
    std::int64_t b, hq, hkv, t, last, d;
    torch::ScalarType dtype;
    bool column;
  };
  for (const Case& c : std::vector<Case>{{64, 28, 4, 1024, 640, kHeadDim, torch::kBFloat16, true},
                                         {64, 28, 4, 576, 576, kHeadDim, torch::kBFloat16, false},
                                         {16, 28, 4, 2048, 2000, kHeadDim, torch::kBFloat16, true},
                                         {1, 28, 4, 8448, 5000, kHeadDim, torch::kBFloat16, false},
                                         {8, 16, 4, 700, 690, 64, torch::kHalf, false},
                                         {16, 32, 8, 600, 600, kHeadDim, torch::kBFloat16, true},
                                         {4, 28, 4, 2048, 700, kHeadDim, torch::kBFloat16, true}}) {
    const std::string what = cat("B=", c.b, " Hq=", c.hq, " Hkv=", c.hkv, " T=", c.t, " D=", c.d);
    std::vector<std::int64_t> pads(c.b), ends(c.b), written(c.b);
    for (std::int64_t i = 0; i < c.b; ++i) {
      pads[i] = c.column ? 0 : (i * 29) % 40;  // the server's rows have no left padding
      ends[i] = std::max<std::int64_t>(1, c.last - (i * 37) % 129);
      written[i] = ends[i] - 1;
    }
    const torch::Tensor valid = rows_valid(pads, ends, c.t);  // [B, T] bool
    torch::Tensor q = randn_bf16({c.b, c.hq, c.d}).to(c.dtype);    // [B, Hq, D]
    torch::Tensor keys = randn_bf16({c.b, c.hkv, c.t, c.d}).to(c.dtype), values = randn_bf16({c.b, c.hkv, c.t, c.d}).to(c.dtype);
    // NaN wherever a row has no valid column (padding, past the end): [B, 1, T, 1] over [B, Hkv, T, D].
    const torch::Tensor hole = valid.logical_not().view({c.b, 1, c.t, 1});
    keys.masked_fill_(hole, std::numeric_limits<float>::quiet_NaN());
    values.masked_fill_(hole, std::numeric_limits<float>::quiet_NaN());
    torch::Tensor column;
    if (c.column) column = torch::tensor(written, torch::kInt64).to(torch::kCUDA);  // [B] int64
    ::setenv("LLMBENCH_ATTN_EAGER_LOADS", "0", 1);
    const torch::Tensor plain = fused::decode_attention(q, keys, values, valid, {}, {}, column);  // [B, Hq, D]
    ::setenv("LLMBENCH_ATTN_EAGER_LOADS", "1", 1);
    const torch::Tensor eager = fused::decode_attention(q, keys, values, valid, {}, {}, column);
    ::unsetenv("LLMBENCH_ATTN_EAGER_LOADS");
    EXPECT_FALSE(plain.isnan().any().item<bool>()) << what;
    EXPECT_TRUE(torch::equal(plain, eager)) << what << ": max difference "
                                            << (plain.to(torch::kFloat32) - eager.to(torch::kFloat32)).abs().max().item<double>();
  }
  ::setenv("LLMBENCH_ATTN_EAGER_LOADS", "yes", 1);
  EXPECT_THROW(fused::decode_attention(randn_bf16({64, 28, kHeadDim}), randn_bf16({64, 4, 64, kHeadDim}), randn_bf16({64, 4, 64, kHeadDim}),
                                       torch::ones({64, 64}, torch::kBool).to(torch::kCUDA)),
               UsageError);
  ::unsetenv("LLMBENCH_ATTN_EAGER_LOADS");
}

TEST(GpuDecodeAttention, LongAndOddCaches) {
  REQUIRE_CUDA();
  torch::manual_seed(12);
  for (std::int64_t t : {1025, 2048, 2113, 8448}) {
    check(28, 4, rows_valid({0, 5}, {t, t - 3}, t), "B=2 T=" + std::to_string(t));
    check(28, 4, rows_valid({0}, {1}, t), "one valid column T=" + std::to_string(t));
  }
  // Every column valid but the last, batch 16 at 2048 (the benchmark's shape).
  check(28, 4, rows_valid(std::vector<std::int64_t>(16, 0), std::vector<std::int64_t>(16, 2047), 2048), "B=16 T=2048");
  // Group sizes 1 and 2 (heads per kv head) and a random mask with a fully masked row.
  torch::Tensor holes = torch::rand({3, 3000}, torch::kCUDA) < 0.4;  // [B, T]
  holes[2].fill_(false);
  check(8, 8, holes, "MHA random holes");
  check(8, 4, holes, "G=2 random holes");
}

// Unwritten cache columns may hold anything (NaN bits): masked columns must not reach the output.
TEST(GpuDecodeAttention, MaskedColumnsIgnoreGarbage) {
  REQUIRE_CUDA();
  torch::manual_seed(13);
  const std::int64_t b = 2, t = 2100;
  torch::Tensor q = randn_bf16({b, 28, kHeadDim}), keys = randn_bf16({b, 4, t, kHeadDim}), values = randn_bf16({b, 4, t, kHeadDim});
  torch::Tensor valid = rows_valid({0, 10}, {1500, 1200}, t);
  std::vector<torch::Tensor> clean;
  for (const std::string& kernel : kernels()) {
    ScopedKernel scoped(kernel);
    clean.push_back(fused::decode_attention(q, keys, values, valid));
  }
  keys.narrow(2, 1500, t - 1500).fill_(std::numeric_limits<float>::quiet_NaN());
  values.narrow(2, 1500, t - 1500).fill_(std::numeric_limits<float>::quiet_NaN());
  keys[1].narrow(1, 0, 10).fill_(std::numeric_limits<float>::quiet_NaN());  // row 1's left padding too
  values[1].narrow(1, 0, 10).fill_(std::numeric_limits<float>::quiet_NaN());
  for (std::size_t i = 0; i < kernels().size(); ++i) {
    ScopedKernel scoped(kernels()[i]);
    EXPECT_TRUE(torch::equal(fused::decode_attention(q, keys, values, valid), clean[i])) << kernels()[i];
  }
}

// The mma kernel's own cases: fp16, head_dim 64, a cache far longer than its valid columns (the
// server's column buckets: tiles without a valid column are skipped), one split per row (batch 64),
// and Llama-3-8B's 8 heads per block; each against the eager formula, with the split kernel too.
TEST(GpuDecodeAttention, MmaKernelShapes) {
  REQUIRE_CUDA();
  if (!mma_unavailable().empty()) GTEST_SKIP() << mma_unavailable();
  torch::manual_seed(15);
  check(28, 4, rows_valid({3}, {577}, 576 + 1), "fp16 B=1 T=577", torch::kHalf);
  check(16, 4, rows_valid({0, 7}, {700, 650}, 700), "D=64 B=2 T=700", torch::kBFloat16, 64);
  check(28, 4, rows_valid({0, 0, 100, 0}, {600, 17, 640, 1}, 2048), "B=4 T=2048, few valid columns");
  check(28, 4, rows_valid(std::vector<std::int64_t>(64, 0), std::vector<std::int64_t>(64, 576), 576), "B=64 T=576");
  check(32, 8, rows_valid({0}, {1}, 16), "Llama B=1 T=16, one valid column");
  check(28, 4, rows_valid({0}, {9000}, 16384), "B=1 T=16384 (8 splits of 2048)");
}

// The planner: mma where it applies (a cluster of at most 8 splits of at most 2048 columns), split
// otherwise; forcing mma where it cannot run is a clear error; a bad LLMBENCH_DECODE_ATTENTION too.
TEST(GpuDecodeAttention, PlannerPicksTheKernel) {
  REQUIRE_CUDA();
  if (!mma_unavailable().empty()) GTEST_SKIP() << mma_unavailable();
  torch::manual_seed(16);
  const torch::Tensor q = randn_bf16({1, 28, kHeadDim}), keys = randn_bf16({1, 4, 20000, kHeadDim});  // [1, Hkv, T, D]
  const torch::Tensor valid = rows_valid({0}, {20000}, 20000);
  torch::Tensor want = attention(AttnImpl::eager, q.unsqueeze(2), keys, keys, valid.view({1, 1, 1, 20000})).squeeze(2);
  // 20000 columns need 10 splits of 2048: automatic falls back to split, forced mma refuses.
  torch::Tensor got = fused::decode_attention(q, keys, keys, valid);
  EXPECT_LT((got.to(torch::kFloat32) - want.to(torch::kFloat32)).abs().mean().item<double>(), 2e-4);
  {
    ScopedKernel scoped("mma");
    EXPECT_THROW(fused::decode_attention(q, keys, keys, valid), Error);
    EXPECT_THROW(fused::decode_attention(q.to(torch::kFloat32), keys.to(torch::kFloat32), keys.to(torch::kFloat32), valid),
                 Error);
  }
  {
    ScopedKernel scoped("fastest");
    EXPECT_THROW(fused::decode_attention(q, keys, keys, valid), Error);
  }
}

#ifdef LLMBENCH_WITH_CUDA
// One wave of clusters: where the 2-blocks-per-SM split count would put more clusters in the grid than
// the device holds at once, the planner takes fewer splits (LLMBENCH_ATTN_WAVE=0 keeps the old count),
// and the outputs of both plans match the eager formula. Qwen2.5-7B batch 16 and Llama-3-8B batch 4
// over the 576 columns of prompt 512 + 64 new.
TEST(GpuDecodeAttention, PlannerKeepsEveryClusterResident) {
  REQUIRE_CUDA();
  if (!mma_unavailable().empty()) GTEST_SKIP() << mma_unavailable();
  torch::manual_seed(17);
  const int sms = cuda::sm_count();
  struct Case {
    int batch, hq, hkv;
  };
  for (const Case c : {Case{16, 28, 4}, Case{4, 32, 8}, Case{64, 28, 4}}) {
    const std::string what = "B=" + std::to_string(c.batch) + " Hq=" + std::to_string(c.hq);
    const std::int64_t units = std::int64_t{c.batch} * c.hkv;  // clusters in the grid (group ≤ 8)
    const cuda::DecodeAttnPlan p = cuda::plan_decode_attention(cuda::DType::bf16, c.batch, c.hq, c.hkv, kHeadDim, 576, sms);
    ::setenv("LLMBENCH_ATTN_WAVE", "0", 1);
    const cuda::DecodeAttnPlan old = cuda::plan_decode_attention(cuda::DType::bf16, c.batch, c.hq, c.hkv, kHeadDim, 576, sms);
    check(c.hq, c.hkv, rows_valid(std::vector<std::int64_t>(c.batch, 0), std::vector<std::int64_t>(c.batch, 576), 576),
          what + " two-per-SM plan");
    ::unsetenv("LLMBENCH_ATTN_WAVE");
    ASSERT_EQ(p.kernel, cuda::DecodeAttnKernel::mma) << what;
    ASSERT_EQ(old.kernel, cuda::DecodeAttnKernel::mma) << what;
    const std::int64_t s = std::min<std::int64_t>(8, std::max<std::int64_t>(1, 2 * sms / units));
    const std::int64_t chunk = ((576 + s - 1) / s + 15) / 16 * 16;  // 16-column tiles
    EXPECT_EQ(old.splits, (576 + chunk - 1) / chunk) << what << ": two blocks per SM";
    EXPECT_LE(p.splits, old.splits) << what;
    const int resident = cuda::decode_attention_resident_clusters(cuda::DType::bf16, kHeadDim, p);
    const int resident_old = cuda::decode_attention_resident_clusters(cuda::DType::bf16, kHeadDim, old);
    EXPECT_GT(resident, 0) << what;
    if (units <= resident_old) {
      EXPECT_EQ(p.splits, old.splits) << what << ": the old plan fits in one wave";
    } else if (p.splits > 1) {
      EXPECT_LE(units, resident) << what << ": " << p.splits << " splits";
    }
    std::printf("[ wave     ] %s: %lld clusters; %d splits (%d resident) → %d splits (%d resident)\n", what.c_str(),
                static_cast<long long>(units), old.splits, resident_old, p.splits, resident);
    check(c.hq, c.hkv, rows_valid(std::vector<std::int64_t>(c.batch, 0), std::vector<std::int64_t>(c.batch, 576), 576),
          what + " one-wave plan");
  }
}

#endif  // LLMBENCH_WITH_CUDA

// The whole decode step past the old 1024-column limit: Qwen2.5-7B widths with 2 layers, a left-padded
// batch of 2, a 1500-token prompt, fused decode (kernel attention) against the plain path, teacher-forced.
TEST(GpuDecodeAttention, FusedDecodeStepMatchesPlainPastTheOldLimit) {
  REQUIRE_CUDA();
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("llmbench_fused_long_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  nlohmann::json config = find_preset("qwen2.5-7b")->config;
  config["num_hidden_layers"] = 2;
  write_file_atomic(dir + "/config.json", config.dump());  // no safetensors: seeded random weights
  auto m = Model::load({dir, "bfloat16", "cuda", "eager", 0});
  testing_util::remove_tree(dir);

  const std::int64_t p = 1500, steps = 4;
  torch::manual_seed(14);
  torch::Tensor ids = torch::randint(3, 150000, {2, p}, torch::kInt64).cuda();  // [2, P]
  torch::Tensor mask = torch::ones({2, p}, torch::kInt64);
  mask[1].narrow(0, 0, 37).zero_();  // row 1 left-padded by 37
  m->allocate_cache(2, p + steps + 1);
  std::vector<torch::Tensor> feed, plain, fused;
  m->set_fused(false);
  m->reset_cache();
  torch::Tensor tok = m->prefill(ids, mask).argmax(-1);
  for (int i = 0; i < steps; ++i) {
    feed.push_back(tok.clone());
    torch::Tensor logits = m->decode_step(tok);  // [2, V]
    plain.push_back(logits.cpu());
    tok = logits.argmax(-1);
  }
  m->set_fused(true);
  ASSERT_TRUE(m->fused_active());
  m->reset_cache();
  m->prefill(ids, mask);
  for (const auto& t : feed) fused.push_back(m->decode_step(t).cpu());
  for (int i = 0; i < steps; ++i) {
    const double scale = plain[i].abs().max().item<double>();
    EXPECT_LT((fused[i] - plain[i]).abs().max().item<double>(), 2e-2 * scale) << "step " << i;
  }
}

}  // namespace
}  // namespace llmbench
