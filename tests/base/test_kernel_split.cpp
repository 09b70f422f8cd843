// The torch-free half of `llmbench profile`: kernel names shortened, activities grouped per step, the table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "llmbench/base/error.h"
#include "llmbench/report/kernel_split.h"

namespace llmbench {
namespace {

TEST(KernelSplit, ShortNamesDropReturnTypesArgumentsAndNamespaces) {
  EXPECT_EQ(short_kernel_name("void llmbench::cuda::(anonymous namespace)::decode_scores_kernel<__nv_bfloat16, 8>"
                              "(llmbench::cuda::DecodeAttnArgs, float*)"),
            "decode_scores_kernel");
  EXPECT_EQ(short_kernel_name("void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, "
                              "false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 "
                              "const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >(float, float)"),
            "gemv2T_kernel_val");
  // A return type that itself holds parentheses and a generic kernel name.
  EXPECT_EQ(short_kernel_name("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, __nv_bfloat16, "
                              "float, false, true, true, false, 7, false, cublasGemvParamsEx<int> >(int)"),
            "gemvx::kernel");
  EXPECT_EQ(short_kernel_name("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_"
                              "align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)"),
            "cutlass::Kernel2 [cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8]");
  // cuBLAS's own names and copies are not C++ signatures: kept whole.
  EXPECT_EQ(short_kernel_name("nvjet_tst_64x8_64x16_4x1_v_bz_splitK_TNT"), "nvjet_tst_64x8_64x16_4x1_v_bz_splitK_TNT");
  EXPECT_EQ(short_kernel_name("Memcpy DtoD (Device -> Device)"), "Memcpy DtoD (Device -> Device)");
  EXPECT_EQ(short_kernel_name("Memset (Device)"), "Memset (Device)");
}

TEST(KernelSplit, TorchElementwiseAndReduceKernelsAreNamedByTheirFunctor) {
  EXPECT_EQ(short_kernel_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel("
                "at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#6}::operator()() const::{lambda("
                "c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::silu_kernel("
                "at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#6}::operator()() const::{lambda("
                "c10::BFloat16)#1}, std::array<char*, 2ul>)"),
            "vectorized_elementwise_kernel [silu_kernel]");
  EXPECT_EQ(short_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
                              "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> "
                              ">(int, at::native::BinaryFunctor<float, float, float, "
                              "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)"),
            "vectorized_elementwise_kernel [MulFunctor]");
  EXPECT_EQ(short_kernel_name("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::"
                              "native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
                              "const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_"
                              "kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(c10::"
                              "BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast)"),
            "elementwise_kernel [direct_copy_kernel_cuda]");
  EXPECT_EQ(short_kernel_name("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
                              "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::"
                              "TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::"
                              "ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
                              "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, "
                              "4, 4>)"),
            "reduce_kernel [sum_functor]");
  // Unbalanced brackets (a name cut short): never throws, still gives something readable.
  EXPECT_FALSE(short_kernel_name("void foo<int, (bar").empty());
}

TEST(KernelSplit, GroupsPerStepAndSharesOfTheWallTime) {
  // Two steps of: 2 × gemv (10 + 12 µs, 11 + 13 µs), one attention (5, 7 µs), one copy per step.
  const std::string gemv = "void gemv2T_kernel_val<int, float>(float)";
  const std::string attn = "void llmbench::cuda::decode_pv_kernel<__nv_bfloat16>(int)";
  const std::vector<KernelActivity> acts = {{gemv, 10}, {gemv, 12}, {attn, 5}, {"Memcpy DtoD (Device -> Device)", 1},
                                            {gemv, 11}, {gemv, 13}, {attn, 7}, {"Memcpy DtoD (Device -> Device)", 1}};
  const KernelSplit s = split_kernels(acts, 2, 50.0);
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[0].name, "gemv2T_kernel_val");
  EXPECT_DOUBLE_EQ(s.rows[0].calls_per_step, 2.0);
  EXPECT_DOUBLE_EQ(s.rows[0].us_per_step, 23.0);  // (10 + 12 + 11 + 13) / 2
  EXPECT_DOUBLE_EQ(s.rows[0].share, 0.46);        // 23 / 50
  EXPECT_EQ(s.rows[1].name, "decode_pv_kernel");
  EXPECT_DOUBLE_EQ(s.rows[1].us_per_step, 6.0);
  EXPECT_DOUBLE_EQ(s.rows[2].calls_per_step, 1.0);
  EXPECT_DOUBLE_EQ(s.kernel_us, 30.0);
  EXPECT_DOUBLE_EQ(s.calls, 4.0);

  const KernelSplit full = split_kernels(acts, 2, 50.0, /*full_names=*/true);
  EXPECT_EQ(full.rows[0].name, gemv);
  EXPECT_THROW(split_kernels(acts, 0, 50.0), Error);
  EXPECT_TRUE(split_kernels({}, 3, 50.0).rows.empty());
}

TEST(KernelSplit, LeadInEndsAtTheFirstIdlePause) {
  // Lead-in: a (0–10 µs), b (5–30, overlapping a: the pause is measured from the latest end). Pause: 30 → 20030.
  // Work: c, d with small gaps (2 µs), given out of order as a profiler may return them.
  const std::vector<KernelActivity> acts = {{"d", 3, 20040}, {"a", 10, 0}, {"c", 8, 20030}, {"b", 25, 5}};
  const auto work = after_lead_in(acts, 10000);
  ASSERT_EQ(work.size(), 2u);
  EXPECT_EQ(work[0].name, "c");
  EXPECT_EQ(work[1].name, "d");
  // A long kernel in the lead-in that ends late leaves no pause of 10 ms before c: not cut there.
  const std::vector<KernelActivity> long_lead = {{"a", 15000, 0}, {"c", 8, 20030}, {"d", 3, 30100}};
  const auto w2 = after_lead_in(long_lead, 10000);
  ASSERT_EQ(w2.size(), 1u);
  EXPECT_EQ(w2[0].name, "d");  // the first start 10 ms after everything before it had ended
  // No pause (the lead-in was dropped, or all work): an error, never a silent guess.
  EXPECT_THROW(after_lead_in({{"c", 8, 100}, {"d", 3, 110}}, 10000), Error);
  EXPECT_THROW(after_lead_in({}, 10000), Error);
  EXPECT_THROW(after_lead_in({{"a", 1, 0}, {"c", 8}}, 10000), Error);  // c's start unknown
}

TEST(KernelSplit, TableHasOneLinePerKernelTotalsAndTheWallTime) {
  const std::vector<KernelActivity> acts = {{"k_a", 30}, {"k_b", 10}, {"k_c", 4}, {"k_d", 1}};
  KernelSplit s = split_kernels(acts, 1, 100.0);
  s.title = "decode, eager";
  s.profiled_wall_us = 120;
  s.notes.push_back("something to know");
  const std::string t = format_kernel_split(s, 2);
  EXPECT_NE(t.find("decode, eager — 1 step recorded"), std::string::npos) << t;
  EXPECT_NE(t.find("calls/step"), std::string::npos) << t;
  // k_a: 1 call, 30.0 µs, 30.0 % of the 100 µs step; k_c and k_d folded into one row: 2 calls, 5 µs, 5 %.
  auto row = [&](const std::string& name) {
    const auto at = t.find(name);
    return at == std::string::npos ? std::string() : t.substr(at, t.find('\n', at) - at);
  };
  EXPECT_NE(row("k_a").find("30.0 %"), std::string::npos) << t;
  EXPECT_NE(row("k_a").find("30.0"), std::string::npos) << t;
  EXPECT_EQ(row("k_c"), "") << "k_c should be folded: " << t;
  EXPECT_NE(row("(2 more kernels)").find("5.0 %"), std::string::npos) << t;
  EXPECT_NE(row("all GPU activity").find("45.0 %"), std::string::npos) << t;
  EXPECT_NE(t.find("step wall time 100.0 µs without the profiler, 120.0 µs while recording; GPU idle or launching "
                   "55.0 µs (55.0 %)"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("note: something to know"), std::string::npos) << t;
  // Columns line up: every table line has the same width up to the share column's end.
  const std::string header = t.substr(t.find('\n') + 1, t.find('\n', t.find('\n') + 1) - t.find('\n') - 1);
  const std::string first = row("k_a");
  auto width = [](const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  EXPECT_EQ(width(header), width(first)) << header << "\n" << first;
}

}  // namespace
}  // namespace llmbench
