#!/usr/bin/env python3
"""GPU host: are the prefill's bf16 GEMMs held back by their row count or by the GPU's power limit?

For Qwen2.5-7B's four layer matrices (qkv, o, gate_up, down), torch.mm (cuBLAS, as llmbench's prefill at
these sizes) at 2,048 / 4,096 / 6,656 / 8,192 rows (a 4 × 512 prefill, the server's 13-prompt passes, one
8,192-token prompt), whole and in row chunks of 2,048 and 1,024 (10 calls each after 2 warm-ups, short
bursts): if the chunks ran faster, the row count would be the cause. Then 28 layers of gate_up + down back
to back at 6,656 rows, twice, each call timed by its own events: calls that slow down over the sequence, at
equal shapes, are the power limit (the clock falls once the board has drawn its budget for a while).
Prints one line per case and the first and last four calls of each sustained sequence.
Usage: python3 scripts/bench/prefill_gemm_power.py   (needs PyTorch with CUDA; random normal data)
"""
import torch

torch.manual_seed(0)
shapes = {"gate_up": (37888, 3584), "down": (3584, 18944), "qkv": (4608, 3584), "o": (3584, 3584)}  # [N, K]
weights = {k: torch.randn(n, kk, dtype=torch.bfloat16, device="cuda") * 0.02 for k, (n, kk) in shapes.items()}


def ms_per_call(fn, iters=10):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / iters


print("name M chunk ms TFLOP/s")
for name, w in weights.items():
    n, k = w.shape
    for m in (2048, 4096, 6656, 8192):
        x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")  # [M, K]
        y = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")  # [M, N]
        for chunk in ([m, 2048, 1024] if m > 2048 else [m, 1024]):
            def run():
                for i in range(0, m, chunk):
                    torch.mm(x[i:i + chunk], w.t(), out=y[i:i + chunk])
            ms = ms_per_call(run)
            print(f"{name} {m} {chunk} {ms:.3f} {2 * m * n * k / ms / 1e9:.0f}", flush=True)

x = torch.randn(6656, 3584, dtype=torch.bfloat16, device="cuda")   # [M, hidden]
h = torch.randn(6656, 18944, dtype=torch.bfloat16, device="cuda")  # [M, intermediate]
events = [torch.cuda.Event(enable_timing=True) for _ in range(57)]
for _ in range(2):
    torch.cuda.synchronize()
    events[0].record()
    for layer in range(28):
        torch.mm(x, weights["gate_up"].t())
        events[2 * layer + 1].record()
        torch.mm(h, weights["down"].t())
        events[2 * layer + 2].record()
    torch.cuda.synchronize()
    gate_up = [events[2 * l].elapsed_time(events[2 * l + 1]) for l in range(28)]
    down = [events[2 * l + 1].elapsed_time(events[2 * l + 2]) for l in range(28)]
    print("sustained gate_up ms first/last 4:", [round(v, 3) for v in gate_up[:4]], [round(v, 3) for v in gate_up[-4:]])
    print("sustained down ms first/last 4:", [round(v, 3) for v in down[:4]], [round(v, 3) for v in down[-4:]])
