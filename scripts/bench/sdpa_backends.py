#!/usr/bin/env python3
"""GPU host: torch's scaled_dot_product_attention backends on Qwen2.5-7B's prefill shapes (28 query heads,
4 kv heads, head dim 128, bf16, causal, GQA), 512 and 8,192 tokens, each alone: which backend torch picks
by default and the time per layer of each (default, flash, cuDNN, efficient), with the largest difference
from the default's output. docs/performance.md (session 15) compares these with the same attention inside
`llmbench profile --attn sdpa`. Usage: python3 scripts/bench/sdpa_backends.py
"""
import torch, time
from torch.nn.attention import sdpa_kernel, SDPBackend
print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())
dev = "cuda"
for S in (512, 8192):
    q = torch.randn(1, 28, S, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn(1, 4, S, 128, device=dev, dtype=torch.bfloat16)
    v = torch.randn(1, 4, S, 128, device=dev, dtype=torch.bfloat16)
    try:
        print("S", S, "default choice", torch._fused_sdp_choice(q, k, v, is_causal=True, enable_gqa=True))
    except Exception as e:
        print("choice failed", e)
    ref = None
    for name, be in (("default", None), ("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                     ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        def f():
            if be is None:
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            with sdpa_kernel([be]):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        try:
            o = f(); torch.cuda.synchronize()
            for _ in range(3): f()
            torch.cuda.synchronize(); t = time.perf_counter(); n = 20
            for _ in range(n): o = f()
            torch.cuda.synchronize(); ms = (time.perf_counter() - t) / n * 1e3
            if ref is None: ref = o.float()
            err = (o.float() - ref).abs().max().item()
            fl = 4 * S * S / 2 * 128 * 28
            print(f"S {S} {name:9s} {ms:8.3f} ms/layer  {fl / ms / 1e9:6.0f} TFLOP/s  x28 = {28 * ms:7.2f} ms  maxdiff {err:.3g}")
        except Exception as e:
            print("S", S, name, "failed:", str(e).splitlines()[0][:200])
