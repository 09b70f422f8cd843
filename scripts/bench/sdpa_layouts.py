#!/usr/bin/env python3
"""GPU host: does the layout the fused prefill hands to sdpa slow cuDNN's attention on a long prompt?

Qwen2.5-7B's 8,192-token prefill (28 query heads, 4 kv heads, head dim 128, bf16, causal, GQA): q as the fused
prefill writes it (seq-major, [B, P, Hq, D] in memory) and k / v as slices of a longer cache ([B, Hkv, T, D],
T = 8,448), against contiguous tensors and each change alone; torch's default choice (3: cuDNN on torch 2.11),
the median of 10 timed calls per layer (CUDA events), first alone, then each call after a gate_up GEMM of the
same prefill (8,192 × 37,888 × 3,584) that keeps the board at its power limit; then what copying q, k and v to
contiguous tensors would cost per layer. docs/performance.md, session 31.
Usage: python3 scripts/bench/sdpa_layouts.py
"""
import torch, time
from torch.nn.attention import sdpa_kernel, SDPBackend
print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())
dev, bf = "cuda", torch.bfloat16
S, T, HQ, HKV, D = 8192, 8448, 28, 4, 128
def layouts():
    qc = torch.randn(1, HQ, S, D, device=dev, dtype=bf)
    kc = torch.randn(1, HKV, S, D, device=dev, dtype=bf)
    vc = torch.randn(1, HKV, S, D, device=dev, dtype=bf)
    qs = qc.transpose(1, 2).contiguous().transpose(1, 2)           # seq-major q, as the fused prefill writes it
    kbig = torch.zeros(1, HKV, T, D, device=dev, dtype=bf); kbig[:, :, :S] = kc
    vbig = torch.zeros(1, HKV, T, D, device=dev, dtype=bf); vbig[:, :, :S] = vc
    ks, vs = kbig[:, :, :S], vbig[:, :, :S]                          # cache slices, T·D apart per head
    return {"contiguous": (qc, kc, vc), "prefill (q seq-major, kv slices)": (qs, ks, vs),
            "q seq-major only": (qs, kc, vc), "kv slices only": (qc, ks, vs)}
L = layouts()
a = torch.randn(S, 3584, device=dev, dtype=bf); w = torch.randn(37888, 3584, device=dev, dtype=bf)
def run(q, k, v): return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
ref = run(*L["contiguous"]).float()
for heat in (False, True):
    for name, (q, k, v) in L.items():
        try: choice = torch._fused_sdp_choice(q, k, v, is_causal=True, enable_gqa=True)
        except Exception as e: choice = "?"
        o = run(q, k, v); torch.cuda.synchronize()
        err = (o.float() - ref).abs().max().item()
        times = []
        for i in range(12):
            if heat: torch.matmul(a, w.t())   # a gate_up GEMM of the same prefill before each attention
            e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
            e0.record(); run(q, k, v); e1.record()
            torch.cuda.synchronize(); times.append(e0.elapsed_time(e1))
        times = sorted(times[2:])
        ms = times[len(times) // 2]
        print(f"heat={int(heat)} {name:36s} choice {choice} {ms:7.3f} ms/layer x28 = {28*ms:6.1f} ms  maxdiff {err:.3g}  "
              f"out strides {tuple(o.stride())}")
# the copies that would make the prefill's layouts contiguous
q, k, v = L["prefill (q seq-major, kv slices)"]
def copies(): return q.contiguous(), k.contiguous(), v.contiguous()
copies(); torch.cuda.synchronize()
e0 = torch.cuda.Event(enable_timing=True); e1 = torch.cuda.Event(enable_timing=True)
e0.record()
for _ in range(10): copies()
e1.record(); torch.cuda.synchronize(); print(f"q/k/v .contiguous(): {e0.elapsed_time(e1)/10:.3f} ms per layer")
