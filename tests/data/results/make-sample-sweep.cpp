// Writes sample-sweep.json through the real writer (summarize_point + save_results); see README.md.
#include <cmath>
#include <random>
#include "llmbench/report/results.h"
using namespace llmbench;
int main(int argc, char** argv) {
  Results r;
  r.created_at = "2026-11-30T10:15:00Z";
  r.command = "llmbench run --model Qwen/Qwen2.5-0.5B --model meta-llama/Llama-3.2-1B --batch 1,2,4 "
              "--prompt-len 128 --max-new-tokens 16 --runs 8 --trim 1 --prompt 'Tell me about <b>bold</b> & \"quotes\"'";
  r.env.tool_version = "0.1.0"; r.env.git_commit = "4305ab7";
  r.env.os = "Ubuntu 24.04.1 LTS"; r.env.kernel = "Linux 6.8.0-49-generic x86_64"; r.env.hostname = "gpu-host";
  r.env.cpu_model = "AMD EPYC 9654 96-Core Processor"; r.env.cpu_cores = 16; r.env.ram_bytes = 128ULL << 30;
  r.env.compiler = "GNU 13.3.0"; r.env.torch_version = "2.11.0"; r.env.cuda_available = true;
  r.env.cuda_runtime = "13.0"; r.env.cuda_driver = "13.0";
  r.env.gpus.push_back({0, "NVIDIA H200", 9, 0, 150121414656ULL, 132});
  r.env.ceilings = Ceilings{"cuda:0", 3950.0, 712.0, "bfloat16", 8192, 10};
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 1.0);
  struct M { const char* model; const char* label; double step_ms, prefill_ms, bytes, flops_per_tok, load; };
  M models[] = {{"Qwen/Qwen2.5-0.5B", "qwen2.5-0.5b", 1.9, 9.5, 0.84e9, 1.0e9, 1850},
                {"meta-llama/Llama-3.2-1B", "llama3.2-1b", 2.6, 12.8, 2.2e9, 2.5e9, 2630}};
  const int N = 16, P = 128;
  for (auto& m : models) {
    double first = 0;
    for (int b : {1, 2, 4}) {
      PointResult p;
      p.params.model = m.model; p.params.label = m.label; p.params.batch = b; p.params.prompt_len = P;
      p.params.max_new_tokens = N; p.params.dtype = "bfloat16"; p.params.attn = "sdpa"; p.params.device = "cuda";
      p.weights = "checkpoint"; p.checkpoint = std::string("/models/") + m.label;
      p.prompt_source = "text-repeated"; p.tokenizer = "tokenizer.json (BPE)";
      p.paths = {{"cuda_graph", true}, {"fused", true}};
      p.warmup = 2; p.trim = 1;
      const double step = m.step_ms * (1 + 0.06 * (b - 1));
      const double pre = m.prefill_ms * (0.8 + 0.2 * b);
      for (int i = 0; i < 8; ++i) {
        RunRecord rr;
        rr.tokenize_ms = 0.21 + 0.01 * b + 0.005 * std::fabs(noise(rng));
        rr.kv_init_ms = 0.05 + 0.003 * std::fabs(noise(rng));
        rr.prefill_ms = pre * (1 + 0.02 * noise(rng));
        double first_tok = rr.prefill_ms + 0.35;
        rr.ttft_ms = rr.tokenize_ms + rr.kv_init_ms + first_tok;
        double decode = 0;
        for (int t = 1; t < N; ++t) {
          double itl = step * (1 + 0.015 * noise(rng)) + (std::fabs(noise(rng)) > 2.3 ? 1.8 : 0);
          rr.itl_ms.push_back(itl); decode += itl;
        }
        rr.decode_ms = decode; rr.tpot_ms = decode / (N - 1);
        rr.detokenize_ms = 0.09 * b + 0.01 * std::fabs(noise(rng));
        rr.e2e_ms = rr.ttft_ms + rr.decode_ms + rr.detokenize_ms;
        p.runs.push_back(rr);
      }
      summarize_point(p);
      p.memory.weights_bytes = static_cast<std::uint64_t>(m.bytes);
      p.memory.kv_cache_bytes = 3145728ULL * b;
      p.memory.peak_allocated_bytes = p.memory.weights_bytes + p.memory.kv_cache_bytes + 52428800ULL * b;
      p.memory.peak_reserved_bytes = p.memory.peak_allocated_bytes + 134217728ULL;
      p.memory.device_in_use_bytes = p.memory.peak_reserved_bytes + 536870912ULL;
      p.memory.peak_rss_bytes = 1288490188ULL;
      if (first == 0) first = p.summary["e2e_ms"].trimmed_median * 9.7;
      p.cold = {m.load, first};
      p.roofline.decode_bytes_per_step = m.bytes + p.memory.kv_cache_bytes * 0.56;
      p.roofline.prefill_flops = 2 * m.flops_per_tok * P * b;
      p.roofline.mbu = p.roofline.decode_bytes_per_step / (p.summary["tpot_ms"].trimmed_median / 1e3) / 3950e9;
      p.roofline.mfu = p.roofline.prefill_flops / (p.stages.prefill_ms / 1e3) / 712e12;
      r.points.push_back(p);
    }
  }
  save_results(argv[1], r);
}
