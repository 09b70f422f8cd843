# TunableOp probe (session 18, 04:40 UTC): does torch's GEMM tuning find faster algorithms than the default
# heuristics for Qwen2.5-7B's decode shapes? MODE=default|tune python3 tunable_probe.py 4,16,64
# At these sizes the small matrices' times are Python launch times; the A/B in llmbench is the real test.
import os, sys, torch
torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
mats = {"qkv": (4608, 3584), "o": (3584, 3584), "gate_up": (37888, 3584), "down": (3584, 18944), "lm_head": (152064, 3584)}
Ms = [int(x) for x in sys.argv[1].split(",")] if len(sys.argv) > 1 else [4, 16, 64, 6656]
def bench(M, n, k, reps=50):
    copies = max(1, int(200e6 // (n * k * 2)) + 1)
    ws = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
    x = torch.randn(M, k, device=dev, dtype=torch.bfloat16)
    for w in ws: torch.nn.functional.linear(x, w)
    torch.cuda.synchronize()
    reps = max(3, min(reps, int(2e13 / (2 * M * n * k))))
    s, e = torch.cuda.Event(True), torch.cuda.Event(True)
    s.record()
    for i in range(reps): torch.nn.functional.linear(x, ws[i % copies])
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) * 1000 / reps
mode = os.environ.get("MODE", "default")
if mode == "tune":
    torch.cuda.tunable.enable(True); torch.cuda.tunable.tuning_enable(True)
    torch.cuda.tunable.set_filename("/tmp/tunable.csv")
    torch.cuda.tunable.set_max_tuning_iterations(30)
    torch.cuda.tunable.set_rotating_buffer_size(256)
for M in Ms:
    for name, (n, k) in mats.items():
        us = bench(M, n, k)
        print(f"{mode:8s} M={M:5d} {name:8s} {us:9.2f} us  {2 * M * n * k / us / 1e6:7.1f} TFLOP/s  {n * k * 2 / us / 1e3:7.0f} GB/s(W)", flush=True)
if mode == "tune":
    for r in torch.cuda.tunable.get_results(): print(r)
