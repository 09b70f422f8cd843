#!/usr/bin/env python3
"""A synthetic `llmbench load` results file (docs/results-schema.md, "Load points") with N requests: an
open loop of RATE requests/s (Poisson arrivals), each streaming a uniformly drawn number of output tokens in
[MIN_TOKENS, MAX_TOKENS] with lognormal TTFT and ITLs, and one request in 200 a timeout. At the default rate
200,000 requests are an hour of load. For measuring `llmbench report` and `llmbench gate` on large files
(docs/report.md, "Large files"); the same arguments always give the same file.

The point's summary is computed here as llmbench computes it (numpy's linear percentiles, trim 0), except
the median's CI95: above 10,000 values llmbench takes the exact infinite-resample bootstrap; here it is
the normal approximation of the same binomial ranks (n/2 -+ 1.96 sqrt(n)/2), a rank or two away.

Usage: python3 scripts/bench/large_load_results.py N OUT.json [--seed S] [--rate R] [--tokens MIN,MAX]
                                                   [--slower F]
  --slower F: every latency times F (a regressed "current" file for `llmbench gate`).
params.seed is 0 whatever --seed is, so that files of two seeds are the same point for `llmbench gate`.
"""
import argparse
import json
import math
import random


def percentile(s, q):  # s sorted; numpy's default (linear) method
    h = (len(s) - 1) * q / 100.0
    lo = math.floor(h)
    if lo + 1 >= len(s):
        return s[-1]
    return s[lo] + (h - lo) * (s[lo + 1] - s[lo])


def summary(values):
    s = sorted(values)
    n = len(s)
    mean = math.fsum(s) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in s) / (n - 1)) if n > 1 else 0.0
    half = 1.96 * math.sqrt(n) / 2
    lo = min(n - 1, max(0, math.floor(n / 2 - half)))
    hi = min(n - 1, max(0, math.ceil(n / 2 + half)))
    p50 = percentile(s, 50)
    return {"n": n, "mean": mean, "std": std, "min": s[0], "max": s[-1], "p50": p50,
            "p90": percentile(s, 90), "p95": percentile(s, 95), "p99": percentile(s, 99),
            "trimmed_median": p50, "ci95": [s[lo], s[hi]], "cv": std / mean if mean else 0.0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rate", type=float, default=200000 / 3600)
    ap.add_argument("--tokens", default="4,12")
    ap.add_argument("--slower", type=float, default=1.0)
    a = ap.parse_args()
    t_min, t_max = (int(x) for x in a.tokens.split(","))
    if a.n < 1 or a.rate <= 0 or not 1 <= t_min <= t_max or a.slower <= 0:
        ap.error("need N >= 1, RATE > 0, 1 <= MIN <= MAX, F > 0")
    rng = random.Random(a.seed)
    ms = lambda v: round(v * a.slower, 6)  # nanosecond resolution, as a steady clock gives

    log = []
    t = 0.0
    for _ in range(a.n):
        t += rng.expovariate(a.rate) * 1e3
        start = round(t + rng.uniform(0, 0.5), 6)
        if rng.random() < 0.005:
            log.append({"start_ms": start, "scheduled_ms": round(t, 6), "ok": False, "error": "timeout",
                        "ttft_ms": 0.0, "e2e_ms": 60000.0, "itl_ms": [], "prompt_tokens": 0, "output_tokens": 0})
            continue
        out = rng.randint(t_min, t_max)
        ttft = ms(rng.lognormvariate(math.log(80), 0.35))
        itl = [ms(rng.lognormvariate(math.log(20), 0.25)) for _ in range(out - 1)]
        log.append({"start_ms": start, "scheduled_ms": round(t, 6), "ok": True, "error": "", "ttft_ms": ttft,
                    "e2e_ms": round(ttft + math.fsum(itl) + rng.uniform(0, 1), 6), "itl_ms": itl,
                    "prompt_tokens": rng.randint(200, 300), "output_tokens": out})

    ok = [r for r in log if r["ok"]]
    metrics = {
        "ttft_ms": [r["ttft_ms"] for r in ok],
        "tpot_ms": [(r["e2e_ms"] - r["ttft_ms"]) / (r["output_tokens"] - 1) for r in ok if r["output_tokens"] > 1],
        "e2e_ms": [r["e2e_ms"] for r in ok],
        "itl_ms": [v for r in ok for v in r["itl_ms"]],
    }
    first = min(r["start_ms"] for r in log)
    elapsed_s = (max(r["start_ms"] + r["e2e_ms"] for r in log) - first) / 1e3
    span_s = (max(r["start_ms"] for r in log) - first) / 1e3
    out_tokens = sum(r["output_tokens"] for r in ok)
    all_tokens = out_tokens + sum(r["prompt_tokens"] for r in ok)
    good = sum(1 for r in ok if r["ttft_ms"] <= 200)
    failed = len(log) - len(ok)
    params = {"model": "synthetic-8b", "label": "synthetic-8b", "batch": 0, "prompt_len": 256,
              "max_new_tokens": t_max, "temperature": 0.0, "attn": "", "dtype": "", "top_k": 0, "top_p": 1.0,
              "seed": 0, "device": "endpoint", "cuda_graph": False, "fused": False, "weights": "",
              "kv_dtype": "", "gemv": False, "fp8_gemm": "", "tp": 0}
    point = {
        "params": params, "status": "ok", "error": "", "weights": "unknown", "checkpoint": "",
        "prompt_source": "synthetic", "tokenizer": "none (prompts by the built-in tiny tokenizer)", "paths": {},
        "warmup": 0, "trim": 0, "runs": [],
        "summary": {k: summary(v) for k, v in metrics.items() if v},
        "stages": {k: 0.0 for k in ("tokenize_ms", "kv_init_ms", "prefill_ms", "decode_ms", "detokenize_ms")},
        "memory": {k: 0 for k in ("peak_allocated_bytes", "peak_reserved_bytes", "device_in_use_bytes",
                                  "weights_bytes", "kv_cache_bytes", "peak_rss_bytes")},
        "cold": {"load_ms": 0.0, "first_generate_ms": 0.0},
        "roofline": {"mbu": None, "mfu": None, "decode_bytes_per_step": 0.0, "prefill_flops": 0.0},
        "mode": "load",
        "outputs": {"first_run_ids": [], "consistent": None, "inconsistent_runs": []},
        "verification": None, "quality": None, "tensor_parallel": None,
        "load": {"endpoint": "http://127.0.0.1:8000/v1/completions", "api": "openai-completions",
                 "concurrency": 0, "request_rate": a.rate, "max_concurrency": 0, "arrival": "poisson",
                 "num_requests": a.n, "duration_s": 0.0, "warmup_requests": 0, "dataset": "synthetic",
                 "range_ratio": 0.0, "prefix_len": 0, "timeout_s": 60.0, "extra_body": None, "stream": True,
                 "search": None, "token_count_source": "usage", "partial": False},
        "requests": {"completed": len(ok), "failed": failed, "errors": {"timeout": failed} if failed else {},
                     "note": "failed requests are counted here and left out of every latency statistic"},
        "throughput": {"requests_per_s": len(ok) / elapsed_s, "output_tokens_per_s": out_tokens / elapsed_s,
                       "total_tokens_per_s": all_tokens / elapsed_s, "elapsed_s": elapsed_s},
        "goodput": {"slo": {"ttft_ms": 200}, "requests_per_s": good / elapsed_s, "fraction": good / len(log)},
        "rate": {"offered_per_s": a.rate, "achieved_per_s": (len(log) - 1) / span_s if span_s > 0 else 0,
                 "mean_send_lag_ms": math.fsum(r["start_ms"] - r["scheduled_ms"] for r in log) / len(log)},
        "server_stages_ms": None,
        "client": {"events_per_s": 2.5e6},
        "request_log": log,
    }
    results = {
        "schema_version": 1, "created_at": "2026-12-07T00:00:00Z", "interrupted": False,
        "command": f"scripts/bench/large_load_results.py {a.n} --seed {a.seed} --rate {a.rate:g} --tokens "
                   f"{a.tokens} --slower {a.slower:g}",
        "env": {"tool": {"name": "llmbench", "version": "synthetic", "git_commit": "none"}, "os": "synthetic",
                "kernel": "", "hostname": "synthetic", "cpu": {"model": "synthetic", "cores": 0}, "ram_bytes": 0,
                "compiler": "", "torch_version": "", "cuda_available": False, "cuda_runtime": "",
                "cuda_driver": "", "gpus": [], "ceilings": None},
        "points": [point],
    }
    with open(a.out, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
