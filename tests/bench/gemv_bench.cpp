// GPU micro-benchmark of the decode GEMV (no gtest): y [B, N] = x [B, K] · Wᵀ for the decode step's
// matrices of Qwen2.5-7B and Llama-3-8B (qkv, o, gate_up, down, lm_head) at B = 1, 4, 16, with W in
// bf16 (cuBLAS through torch::mm_out, the simt and the mma kernel), int8 and fp8 (simt, mma).
// Usage: bench_gemv [model]   (qwen2.5-7b | llama-3-8b | all; default all)
//        LLMBENCH_BENCH_SPLITS=0,1,2,4,8: the kernels' K splits to time (default 0: their own choice; mma:
//        blocks per 16-row tile, simt: warps per row group); LLMBENCH_BENCH_VARIANTS=int8,cuBLAS: only variants
//        whose name holds one of those texts; LLMBENCH_BENCH_BATCHES=1,4 (default 1,4,16); LLMBENCH_BENCH_NO_DEQUANTIZE=1
//        skips the dequantize kernel; LLMBENCH_BENCH_ROWS=0,4: the simt kernel's rows of W per warp (0: chosen);
//        LLMBENCH_BENCH_MMA_TAIL=0,1: the mma kernel's last steps as one unrolled round (0) or one at a time (1);
//        LLMBENCH_BENCH_MATRICES=gate_up,down: only those matrices;
//        LLMBENCH_BENCH_MMA_RING=0,8: the mma kernel's ring of W steps in shared memory (-1, the default: its choice)
// Each figure: 20 calls captured in one CUDA graph, replayed 10 times after a warm-up, cycling through
// enough copies of W that they do not fit in L2 (a decode step reads each weight once, after ~14 GB of
// others); bandwidth = bytes of W (+ scales) / GPU time per call, next to a device-to-device copy measured
// in the same run. The "layer" line sums qkv + o + gate_up + down: × layers it is the step's GEMV time.
// Then the prefill path's dequantize kernel (int8/fp8 → bf16) per matrix: bytes read + written per time,
// each result checked bit for bit against torch's float(q) · scale rounded once.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "llmbench/cuda/gemv.h"
#include "llmbench/model/quantize.h"

namespace {

using llmbench::bench::check;
using llmbench::bench::env_ints;
using llmbench::bench::time_per_call;

using llmbench::bench::kModels;
using llmbench::bench::Matrix;
using llmbench::bench::ModelShapes;

struct Variant {
  std::string name;
  llmbench::WeightFormat format;
  bool cublas;
  llmbench::cuda::GemvKernel kernel;
  int splits = 0;
  int rows = 0;
  bool serial_tail = false;  // mma: last steps one at a time
  int ring = -1;             // mma: ring slots (-1: chosen)
};

const std::vector<Variant> kBaseVariants = {
    {"bf16 cuBLAS", llmbench::WeightFormat::plain, true, llmbench::cuda::GemvKernel::automatic},
    {"bf16 simt", llmbench::WeightFormat::plain, false, llmbench::cuda::GemvKernel::simt},
    {"bf16 mma", llmbench::WeightFormat::plain, false, llmbench::cuda::GemvKernel::mma},
    {"int8 simt", llmbench::WeightFormat::int8, false, llmbench::cuda::GemvKernel::simt},
    {"int8 mma", llmbench::WeightFormat::int8, false, llmbench::cuda::GemvKernel::mma},
    {"fp8 simt", llmbench::WeightFormat::fp8, false, llmbench::cuda::GemvKernel::simt},
    {"fp8 mma", llmbench::WeightFormat::fp8, false, llmbench::cuda::GemvKernel::mma},
};

// The dequantize kernel of the prefill path (int8/fp8 W → bf16), per matrix of the model: q copies cycled
// past L2 as for the GEMV; bandwidth = (bytes of q + scales read + bf16 written) / GPU time per call.
void bench_dequantize(const ModelShapes& m, cudaStream_t stream, double copy_gbs, std::int64_t spill) {
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  double layer_us = 0;
  for (const Matrix& mat : m.matrices) {
    torch::manual_seed(0);
    torch::Tensor w = torch::randn({mat.n, mat.k}, bf16) * 0.02;  // [N, K]
    torch::Tensor out = torch::empty_like(w);                      // [N, K] bf16
    for (llmbench::WeightFormat f : {llmbench::WeightFormat::int8, llmbench::WeightFormat::fp8}) {
      const char* name = f == llmbench::WeightFormat::int8 ? "int8" : "fp8";
      llmbench::QuantizedTensor qt;
      try {
        qt = llmbench::quantize(w, f);
      } catch (const std::exception& e) {
        std::printf("%-10s %-8s dequantize %-5s skipped: %s\n", m.model, mat.name, name, e.what());
        continue;
      }
      const std::int64_t q_bytes = qt.q.numel();
      const int copies = static_cast<int>(std::max<std::int64_t>(1, (spill + q_bytes - 1) / q_bytes));
      std::vector<torch::Tensor> qs{qt.q};
      for (int i = 1; i < copies; ++i) qs.push_back(qt.q.clone());
      int next = 0;
      const auto weight = f == llmbench::WeightFormat::int8 ? llmbench::cuda::WeightType::int8 : llmbench::cuda::WeightType::fp8_e4m3;
      auto call = [&] {
        llmbench::cuda::dequantize(llmbench::cuda::DType::bf16, weight, out.data_ptr(), qs[next++ % copies].data_ptr(),
                                   qt.scale.data_ptr<float>(), mat.n, mat.k, stream);
      };
      call();
      check(cudaStreamSynchronize(stream), "dequantize");
      const bool exact = torch::equal(out, (qt.q.to(torch::kFloat32) * qt.scale.unsqueeze(1)).to(torch::kBFloat16));
      const double ms = time_per_call(stream, 20, 10, call);
      const double gbs = (3.0 * q_bytes + 4.0 * mat.n) / (ms * 1e-3) / 1e9;
      if (std::strcmp(mat.name, "lm_head") != 0 && f == llmbench::WeightFormat::int8) layer_us += ms * 1e3;
      std::printf("%-10s %-8s dequantize %-5s %8.2f us %6.0f GB/s %5.1f %% of copy%s\n", m.model, mat.name, name, ms * 1e3,
                  gbs, 100.0 * gbs / copy_gbs, exact ? "" : "  WRONG");
    }
  }
  std::printf("%-10s layer    dequantize int8  %8.2f us  × %d layers = %.3f ms per int8 prefill\n", m.model, layer_us,
              m.layers, layer_us * m.layers / 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "bench_gemv: no CUDA device\n");
    return 1;
  }
  const std::string which = argc > 1 ? argv[1] : "all";
  const std::vector<int> splits = env_ints("LLMBENCH_BENCH_SPLITS", {0});
  const std::vector<int> rows = env_ints("LLMBENCH_BENCH_ROWS", {0});  // simt rows of W per warp (0: chosen)
  const std::vector<int> tails = env_ints("LLMBENCH_BENCH_MMA_TAIL", {0});  // mma: 1 = serial tail
  const std::vector<int> rings = env_ints("LLMBENCH_BENCH_MMA_RING", {-1});  // mma: ring slots
  const std::vector<int> batches = env_ints("LLMBENCH_BENCH_BATCHES", {1, 4, 16});
  // LLMBENCH_BENCH_VARIANTS=int8,cuBLAS: the variants whose name holds one of those texts.
  const char* variant_filter = std::getenv("LLMBENCH_BENCH_VARIANTS");
  // LLMBENCH_BENCH_MATRICES=gate_up,down: only those matrices (e.g. for ncu).
  const char* matrix_filter = std::getenv("LLMBENCH_BENCH_MATRICES");
  std::vector<Variant> kVariants;
  for (const Variant& v : kBaseVariants) {
    if (variant_filter) {  // a comma list of texts, one of which the name must hold
      bool keep = false;
      for (std::string f = variant_filter; !keep && !f.empty();) {
        const std::size_t comma = f.find(',');
        keep = v.name.find(f.substr(0, comma)) != std::string::npos;
        f = comma == std::string::npos ? "" : f.substr(comma + 1);
      }
      if (!keep) continue;
    }
    if (v.cublas) {
      kVariants.push_back(v);
      continue;
    }
    for (int sp : splits) {
      for (int r : rows) {
        for (int tail : tails) {
          for (int ring : rings) {
            if (r != 0 && v.kernel != llmbench::cuda::GemvKernel::simt) continue;     // rows per warp: simt only
            if (tail != 0 && v.kernel != llmbench::cuda::GemvKernel::mma) continue;  // the tail: mma only
            const bool mma = v.kernel == llmbench::cuda::GemvKernel::mma;
            if (!mma && ring != rings.front()) continue;  // the ring: mma only (the others once)
            Variant m = v;
            m.splits = sp;
            m.rows = r;
            m.serial_tail = tail != 0;
            m.ring = mma ? ring : -1;
            if (sp > 0) m.name += "/" + std::to_string(sp);
            if (r > 0) m.name += " r" + std::to_string(r);
            if (tail != 0) m.name += " st";
            if (mma && ring >= 0) m.name += " ring" + std::to_string(ring);
            kVariants.push_back(m);
          }
        }
      }
    }
  }
  c10::cuda::CUDAStream torch_stream = c10::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard guard(torch_stream);
  cudaStream_t stream = torch_stream.stream();
  const auto u8 = torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA);
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);

  const std::int64_t copy_bytes = std::int64_t{1} << 30;
  torch::Tensor src = torch::empty({copy_bytes}, u8), dst = torch::empty_like(src);
  const double copy_gbs = 2.0 * copy_bytes / (time_per_call(stream, 2, 5, [&] {
                                                check(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), copy_bytes,
                                                                      cudaMemcpyDeviceToDevice, stream), "copy");
                                              }) * 1e-3) / 1e9;
  src = dst = torch::Tensor();
  std::printf("device copy: %.0f GB/s (read + written)\n", copy_gbs);
  const std::int64_t kL2Spill = std::int64_t{400} << 20;  // bytes of W copies cycled per figure

  for (const ModelShapes& m : kModels) {
    if (which != "all" && which != m.model) continue;
    for (int batch : batches) {
      std::map<std::string, double> layer_us;  // variant → qkv + o + gate_up + down
      for (const Matrix& mat : m.matrices) {
        if (matrix_filter && (std::string(",") + matrix_filter + ",").find("," + std::string(mat.name) + ",") == std::string::npos)
          continue;
        torch::manual_seed(0);
        torch::Tensor w = torch::randn({mat.n, mat.k}, bf16) * 0.02;  // [N, K]
        torch::Tensor x = torch::randn({batch, mat.k}, bf16);         // [B, K]
        torch::Tensor y = torch::empty({batch, mat.n}, bf16);         // [B, N]
        for (const Variant& v : kVariants) {
          torch::Tensor q = w, scale;
          if (v.format != llmbench::WeightFormat::plain) {
            try {
              llmbench::QuantizedTensor qt = llmbench::quantize(w, v.format);
              q = qt.q;
              scale = qt.scale;
            } catch (const std::exception& e) {
              std::printf("%-10s %-8s B=%-2d %-12s skipped: %s\n", m.model, mat.name, batch, v.name.c_str(), e.what());
              continue;
            }
          }
          const double bytes = static_cast<double>(q.numel()) * q.element_size() + (scale.defined() ? 4.0 * mat.n : 0.0);
          const int copies = static_cast<int>(std::max<std::int64_t>(1, (kL2Spill + static_cast<std::int64_t>(bytes) - 1) / static_cast<std::int64_t>(bytes)));
          std::vector<torch::Tensor> ws{q};
          for (int i = 1; i < copies; ++i) ws.push_back(q.clone());
          int next = 0;
          auto call = [&] {
            const torch::Tensor& wi = ws[next++ % copies];
            if (v.cublas) {
              torch::mm_out(y, x, wi.t());
              return;
            }
            llmbench::cuda::GemvArgs a;
            a.dtype = llmbench::cuda::DType::bf16;
            a.weight = v.format == llmbench::WeightFormat::plain  ? llmbench::cuda::WeightType::act
                       : v.format == llmbench::WeightFormat::int8 ? llmbench::cuda::WeightType::int8
                                                                   : llmbench::cuda::WeightType::fp8_e4m3;
            a.x = x.data_ptr();
            a.x_stride = mat.k;
            a.w = wi.data_ptr();
            a.scale = scale.defined() ? scale.data_ptr<float>() : nullptr;
            a.y = y.data_ptr();
            a.y_stride = mat.n;
            a.batch = batch;
            a.n = mat.n;
            a.k = mat.k;
            a.kernel = v.kernel;
            a.splits = v.splits;
            a.rows = v.rows;
            a.mma_serial_tail = v.serial_tail;
            a.mma_ring = v.ring;
            llmbench::cuda::gemv(a, stream);
          };
          try {
            call();  // outside the capture: cuBLAS sets up its workspace, the kernels check their arguments
            torch_stream.synchronize();
          } catch (const std::exception& e) {
            std::printf("%-10s %-8s B=%-2d %-12s skipped: %s\n", m.model, mat.name, batch, v.name.c_str(), e.what());
            continue;
          }
          // The result against float32 on the dequantized weight (a kernel that is fast and wrong is no figure).
          torch::Tensor wref = scale.defined() ? llmbench::dequantize(q, scale, torch::kFloat32) : w.to(torch::kFloat32);  // [N, K]
          torch::Tensor r = torch::mm(x.to(torch::kFloat32), wref.t());  // [B, N] float32
          const double err = (y.to(torch::kFloat32) - r).abs().max().item<double>() / r.abs().max().item<double>();
          const double ms = time_per_call(stream, 20, 10, call);
          const double gbs = bytes / (ms * 1e-3) / 1e9;
          if (std::strcmp(mat.name, "lm_head") != 0) layer_us[v.name] += ms * 1e3;
          std::printf("%-10s %-8s B=%-2d %-12s %8.2f us %6.0f GB/s %5.1f %% of copy  max rel err %.1e%s\n", m.model, mat.name,
                      batch, v.name.c_str(), ms * 1e3, gbs, 100.0 * gbs / copy_gbs, err, err > 2e-2 ? "  WRONG" : "");
        }
      }
      for (const Variant& v : kVariants)
        if (layer_us.count(v.name))
          std::printf("%-10s layer    B=%-2d %-12s %8.2f us  × %d layers = %.3f ms per step\n", m.model, batch, v.name.c_str(),
                      layer_us[v.name], m.layers, layer_us[v.name] * m.layers / 1e3);
    }
    if (!std::getenv("LLMBENCH_BENCH_NO_DEQUANTIZE")) bench_dequantize(m, stream, copy_gbs, kL2Spill);
  }
  return 0;
}
