// GPU micro-benchmark of the fused decode-attention kernel (no gtest): achieved KV-read bandwidth.
// Usage: bench_decode_attention [batch columns]...   (default: Qwen2.5-7B heads at B=16 × 2048 and
// 4096 columns, B=4 × 2048, B=1 × 2048, Llama-3-8B heads at B=16 × 2048, and Qwen2.5-7B heads at B=1, 4,
// 16 and 64 × 576 (the decode step of prompt 512 + 64 new) and B=1 × 8448 (the long-context row))
// Each shape: 20 launches captured in one CUDA graph, replayed 20 times after a warm-up; the figure is
// bytes of K and V read (B · Hkv · T · D · 2 tensors · element size) / GPU time per launch, next to a
// device-to-device copy measured in the same run (bytes read + written / time).
#include <cuda_runtime.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "bench_util.h"
#include "llmbench/cuda/kernels.h"

namespace {

using llmbench::bench::check;
using llmbench::bench::time_per_call;
using llmbench::cuda::DecodeAttnArgs;

struct Shape {
  int batch, heads_q, heads_kv;
  std::int64_t columns;
  const char* model;
};

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "bench_decode_attention: no CUDA device\n");
    return 1;
  }
  std::vector<Shape> shapes;
  // LLMBENCH_BENCH_MODEL=llama-3-8b: the shapes given on the command line with Llama-3-8B's heads (32 / 8).
  const bool llama = std::getenv("LLMBENCH_BENCH_MODEL") && std::string(std::getenv("LLMBENCH_BENCH_MODEL")) == "llama-3-8b";
  for (int i = 1; i + 1 < argc; i += 2)
    shapes.push_back(llama ? Shape{std::atoi(argv[i]), 32, 8, std::atoll(argv[i + 1]), "llama-3-8b"}
                           : Shape{std::atoi(argv[i]), 28, 4, std::atoll(argv[i + 1]), "qwen2.5-7b"});
  if (shapes.empty())
    shapes = {{16, 28, 4, 2048, "qwen2.5-7b"}, {16, 28, 4, 4096, "qwen2.5-7b"}, {4, 28, 4, 2048, "qwen2.5-7b"},
              {1, 28, 4, 2048, "qwen2.5-7b"}, {16, 32, 8, 2048, "llama-3-8b"}, {1, 28, 4, 576, "qwen2.5-7b"},
              {4, 28, 4, 576, "qwen2.5-7b"},   {16, 28, 4, 576, "qwen2.5-7b"}, {64, 28, 4, 576, "qwen2.5-7b"},
              {1, 28, 4, 8448, "qwen2.5-7b"}};
  constexpr int kD = 128;
  // LLMBENCH_BENCH_KERNELS=auto,split,mma: the kernels to time (default auto and split).
  struct Kernel {
    const char* name;
    llmbench::cuda::DecodeAttnKernel kernel;
  };
  std::vector<Kernel> kernels;
  const std::string kernel_list = std::getenv("LLMBENCH_BENCH_KERNELS") ? std::getenv("LLMBENCH_BENCH_KERNELS") : "auto,split";
  for (const char* name : {"auto", "split", "mma"})
    if (("," + kernel_list + ",").find(std::string(",") + name + ",") != std::string::npos)
      kernels.push_back({name, name == std::string("split") ? llmbench::cuda::DecodeAttnKernel::split
                               : name == std::string("mma") ? llmbench::cuda::DecodeAttnKernel::mma
                                                            : llmbench::cuda::DecodeAttnKernel::automatic});
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  const int sms = llmbench::cuda::sm_count();

  // The copy ceiling: 1 GiB device to device.
  const std::int64_t copy_bytes = std::int64_t{1} << 30;
  torch::Tensor src = torch::empty({copy_bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA));
  torch::Tensor dst = torch::empty_like(src);
  torch::cuda::synchronize();
  const double copy_ms = time_per_call(stream, 2, 5, [&] {
    check(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), copy_bytes, cudaMemcpyDeviceToDevice, stream), "copy");
  });
  const double copy_gbs = 2.0 * copy_bytes / (copy_ms * 1e-3) / 1e9;
  std::printf("device copy: %.0f GB/s (read + written)\n", copy_gbs);

  for (const Shape& s : shapes) {
    const auto opts = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
    torch::Tensor q = torch::randn({s.batch, s.heads_q, kD}, opts);                   // [B, Hq, D]
    torch::Tensor k = torch::randn({s.batch, s.heads_kv, s.columns, kD}, opts);       // [B, Hkv, T, D]
    torch::Tensor v = torch::randn({s.batch, s.heads_kv, s.columns, kD}, opts);       // [B, Hkv, T, D]
    // LLMBENCH_BENCH_VALID=N: only the first N columns of each row valid (a cache longer than its rows,
    // as the server's column buckets give); the bandwidth counts the valid columns only.
    const std::int64_t used_cols =
        std::getenv("LLMBENCH_BENCH_VALID") ? std::min<std::int64_t>(s.columns, std::atoll(std::getenv("LLMBENCH_BENCH_VALID")))
                                            : s.columns;
    torch::Tensor valid = torch::zeros({s.batch, s.columns}, opts.dtype(torch::kUInt8));  // [B, T]
    valid.narrow(1, 0, used_cols).fill_(1);
    // Each row's newest column, as the decode step names it to the kernel (LLMBENCH_ATTN_VARIANT's pre-wait reads).
    torch::Tensor column = torch::full({s.batch}, used_cols - 1, opts.dtype(torch::kLong));  // [B] int64
    torch::Tensor out = torch::empty_like(q);                                          // [B, Hq, D]
    // LLMBENCH_BENCH_SPLITS=1,2,4,…: also time those plans (0: the planner's choice).
    std::vector<int> forced{0};
    if (const char* e = std::getenv("LLMBENCH_BENCH_SPLITS"))
      for (const char* c = e; *c;) {
        forced.push_back(std::atoi(c));
        while (*c && *c != ',') ++c;
        if (*c) ++c;
      }
    for (const Kernel& kern : kernels)
    for (std::size_t fi = forced.size() > 1 ? 1 : 0; fi < forced.size(); ++fi) {
      llmbench::cuda::DecodeAttnPlan plan;
      try {
        plan = llmbench::cuda::plan_decode_attention(llmbench::cuda::DType::bf16, s.batch, s.heads_q, s.heads_kv, kD,
                                                     s.columns, sms, forced[fi], kern.kernel);
      } catch (const std::exception& e) {
        std::printf("decode_attention %-10s B=%-2d T=%-5lld kernel=%-5s %s\n", s.model, s.batch,
                    static_cast<long long>(s.columns), kern.name, e.what());
        continue;
      }
      torch::Tensor ws = torch::empty({static_cast<std::int64_t>(plan.workspace_bytes)}, opts.dtype(torch::kUInt8));
      torch::cuda::synchronize();
      DecodeAttnArgs a;
      a.dtype = llmbench::cuda::DType::bf16;
      a.q = q.data_ptr();
      a.k = k.data_ptr();
      a.v = v.data_ptr();
      a.kv_stride_b = k.stride(0);
      a.kv_stride_h = k.stride(1);
      a.kv_stride_t = k.stride(2);
      a.valid = valid.data_ptr<std::uint8_t>();
      a.valid_stride_b = valid.stride(0);
      a.column = column.data_ptr<std::int64_t>();
      a.column_stride = 1;
      a.out = out.data_ptr();
      a.max_len = s.columns;
      a.batch = s.batch;
      a.heads_q = s.heads_q;
      a.heads_kv = s.heads_kv;
      a.head_dim = kD;
      a.scale = 1.0f / std::sqrt(static_cast<float>(kD));
      const double ms = time_per_call(stream, 20, 20, [&] { llmbench::cuda::decode_attention(a, plan, ws.data_ptr(), stream); });
      const double kv_bytes = 2.0 * s.batch * s.heads_kv * used_cols * kD * 2;
      const double gbs = kv_bytes / (ms * 1e-3) / 1e9;
      const char* used = plan.kernel == llmbench::cuda::DecodeAttnKernel::mma ? "mma" : "split";
      // Clusters in the grid / clusters the device holds at once (mma kernel: more than one wave when above).
      const int resident = plan.kernel == llmbench::cuda::DecodeAttnKernel::mma
                               ? llmbench::cuda::decode_attention_resident_clusters(llmbench::cuda::DType::bf16, kD, plan)
                               : 0;
      std::printf("decode_attention %-10s B=%-2d T=%-5lld valid=%-5lld kernel=%-5s splits=%-3d chunk=%-5lld clusters %4lld / %4d resident %8.1f us  KV read %6.0f GB/s  %5.1f %% of copy\n",
                  s.model, s.batch, static_cast<long long>(s.columns), static_cast<long long>(used_cols), used,
                  plan.splits, static_cast<long long>(plan.chunk),
                  static_cast<long long>(s.batch) * s.heads_kv * ((s.heads_q / s.heads_kv + 7) / 8), resident, ms * 1e3,
                  gbs, 100.0 * gbs / copy_gbs);
    }
  }
  cudaStreamDestroy(stream);
  return 0;
}
