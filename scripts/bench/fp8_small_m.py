#!/usr/bin/env python3
"""GPU host: can cuBLASLt's FP8 GEMM (torch._scaled_mm, rowwise scales) stream Qwen2.5-7B's decode matrices
at 1–4 rows faster than llmbench's W8A16 GEMV? The question behind issue 16's fp8 batch-4 target (≤ 2.6 ms):
W8A8 (activations quantized per row to e4m3, as vLLM's dynamic fp8) would read the same bytes of W but on
cuBLASLt's kernels, which take the bf16 batch-4 GEMMs to ≈ 4.1 TB/s, where our mma GEMV reads fp8 W at
≈ 3 TB/s (docs/quantization.md).

Per matrix (qkv, o, gate_up, down, lm_head) and rows M in {1, 4}: µs per call of
  - `_scaled_mm` on e4m3 W [N, K] (column-major as Wᵀ) with x already quantized (scales [M, 1] and [1, N]),
  - torch.matmul on bf16 W (cuBLAS, the bf16 step's GEMMs), for the bandwidth it reaches,
  - the per-row quantization of x in torch ops (amax, divide, clamp, cast: what a fused kernel would replace),
each as 20 calls captured in one CUDA graph, W cycled through enough copies (≥ 400 MB) to miss L2 as
`bench_gemv` does, the median of 5 replays. Prints µs and GB/s of W per call and the layer sums.
Usage: python3 scripts/bench/fp8_small_m.py
"""
import statistics
import torch

torch.manual_seed(0)
dev = "cuda"
print("torch", torch.__version__, torch.cuda.get_device_name())
MATS = [("qkv", 4608, 3584), ("o", 3584, 3584), ("gate_up", 37888, 3584), ("down", 3584, 18944), ("lm_head", 152064, 3584)]
E4M3 = torch.float8_e4m3fn


def copies_for(nbytes):
    return max(1, (400 << 20) // nbytes + 1)


def graph_us(fn, calls=20, replays=5):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    times = []
    for _ in range(replays):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3 / calls)
    return statistics.median(times)


def quantize_rows(x):
    xs = x.float().abs().amax(1, keepdim=True).clamp_min(1e-12) / 448.0  # [M, 1]
    return (x.float() / xs).clamp(-448.0, 448.0).to(E4M3), xs


layer = {}
for m in (1, 4):
    for name, n, k in MATS:
        nbytes = n * k
        cnt = copies_for(nbytes)
        wq = [(torch.randn(n, k, device=dev) * 0.05).to(E4M3) for _ in range(cnt)]  # [N, K] e4m3
        sb = torch.rand(1, n, device=dev) * 0.01 + 0.001                             # [1, N] float32
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)                        # [M, K] bf16
        xq, sa = quantize_rows(x)
        it = [0]

        def fp8():
            w = wq[it[0] % cnt]
            it[0] += 1
            return torch._scaled_mm(xq, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

        # correctness of the call against float32 on copy 0
        ref = (xq.float() * sa) @ (wq[0].float() * sb.t()).t()
        got = torch._scaled_mm(xq, wq[0].t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16).float()
        err = ((got - ref).abs().max() / ref.abs().max()).item()
        t_fp8 = graph_us(fp8)
        del wq
        torch.cuda.empty_cache()
        cnt16 = copies_for(2 * nbytes)
        wb = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.05 for _ in range(cnt16)]
        it[0] = 0

        def bf16():
            w = wb[it[0] % cnt16]
            it[0] += 1
            return torch.matmul(x, w.t())

        t_bf16 = graph_us(bf16)
        del wb
        torch.cuda.empty_cache()
        t_q = graph_us(lambda: quantize_rows(x))
        print(f"M={m} {name:8s} fp8 _scaled_mm {t_fp8:8.2f} us ({nbytes / t_fp8 / 1e3:6.0f} GB/s, rel err {err:.1e})  "
              f"bf16 matmul {t_bf16:8.2f} us ({2 * nbytes / t_bf16 / 1e3:6.0f} GB/s)  quantize x (torch ops) {t_q:6.2f} us",
              flush=True)
        if name != "lm_head":
            acc = layer.setdefault(m, [0.0, 0.0, 0.0])
            acc[0] += t_fp8
            acc[1] += t_bf16
            acc[2] += t_q
for m, (a, b, q) in layer.items():
    print(f"M={m} layer (qkv + o + gate_up + down): fp8 _scaled_mm {a:.2f} us, bf16 matmul {b:.2f} us, "
          f"4 quantizations of x in torch ops {q:.2f} us")
