#!/usr/bin/env python3
"""GPU host: what a *new* shape costs torch's scaled_dot_product_attention, per backend.

The serving engine's chunked prefill (and a batched prefill over prompts of varied lengths) calls sdpa with a
query/key length that changes from call to call. Some backends build a plan per shape on first use (cuDNN's
graph), which a benchmark with fixed shapes never sees. For each backend this times the first call of each of
N distinct lengths (Qwen2.5-7B's heads: 28 query, 4 kv, head dim 128, bf16, causal, GQA) against a repeat
of the same shape, and the explicit-mask form the chunked prefill uses for a prompt's later chunks
(q grouped [1, Hkv, G·L, D], an additive bias over L + earlier columns).
Usage: python3 scripts/bench/sdpa_new_shapes.py [N]
"""
import sys, time
import torch
from torch.nn.attention import sdpa_kernel, SDPBackend

n = int(sys.argv[1]) if len(sys.argv) > 1 else 6
dev = "cuda"
print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())


def timed(f):
    torch.cuda.synchronize()
    t = time.perf_counter()
    f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3


def causal(L, be):
    q = torch.randn(1, 28, L, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn(1, 4, L, 128, device=dev, dtype=torch.bfloat16)
    v = torch.randn(1, 4, L, 128, device=dev, dtype=torch.bfloat16)
    def f():
        if be is None:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        with sdpa_kernel([be]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return f


def masked(L, start, be):
    T = start + L
    q = torch.randn(1, 4, 7 * L, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn(1, 4, T, 128, device=dev, dtype=torch.bfloat16)
    v = torch.randn(1, 4, T, 128, device=dev, dtype=torch.bfloat16)
    allowed = torch.arange(T, device=dev).view(1, -1) <= torch.arange(start, T, device=dev).view(-1, 1)
    bias = torch.zeros(L, T, device=dev, dtype=torch.bfloat16).masked_fill(~allowed, -3e38)
    bias = bias.view(1, 1, 1, L, T).expand(1, 1, 7, L, T).reshape(1, 1, 7 * L, T)
    def f():
        if be is None:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, bias)
        with sdpa_kernel([be]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, bias)
    return f


backends = (("default", None), ("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION))
causal(64, None)()  # context and library loads out of the way
for kind in ("causal", "masked"):
    for bi, (name, be) in enumerate(backends):
        firsts, repeats = [], []
        try:
            for i in range(n):
                L = 300 + 37 * i + 5 * bi + (500 if kind == "masked" else 0)  # lengths no earlier row used
                f = causal(L, be) if kind == "causal" else masked(L, 200 + 3 * i, be)
                firsts.append(timed(f))
                repeats.append(timed(f))
            print(f"{kind:6s} {name:9s} first call of a new shape: median {sorted(firsts)[n // 2]:8.3f} ms "
                  f"(max {max(firsts):8.3f}); the same shape again: median {sorted(repeats)[n // 2]:7.3f} ms")
        except Exception as e:
            print(kind, name, "failed:", str(e).splitlines()[0][:160])
