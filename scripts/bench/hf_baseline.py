#!/usr/bin/env python3
"""HF transformers latency baseline, measured the way `llmbench run` measures (for scripts/bench/vs_hf.sh).

Runs on the GPU host (torch 2.11 + CUDA, transformers 5.x; no network, no checkpoint: random weights in the
published shapes, built on the GPU with AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)).

    python3 scripts/bench/hf_baseline.py --workload qwen2.5-7b:1,4 --workload llama-3-8b:1 --output hf.json
    python3 scripts/bench/hf_baseline.py --workload qwen2.5-7b:1 --modes sdpa --runs 3 --output quick.json

Modes: eager (attn_implementation="eager", dynamic cache), sdpa (attn_implementation="sdpa", dynamic cache),
compiled (sdpa + generation_config.cache_implementation="static" + model.forward = torch.compile(model.forward,
mode="reduce-overhead", fullgraph=True), the recipe of transformers' "Optimizing inference" guide; generate()
additionally compiles its decode step itself because the static cache is compileable).

One timed run = one model.generate(input_ids [B, P], attention_mask ones, do_sample=False, min_new_tokens=N,
max_new_tokens=N) on fixed synthetic ids (uniform in [3, 0.95 vocab), seeded), EOS suppressed so exactly N
tokens come out. Timestamps: t0 = host clock and a CUDA event after torch.cuda.synchronize(), before the ids
are copied to the GPU; t_i = a CUDA event recorded when generate() has sampled token i (a StoppingCriteria
that only records an event, never synchronises; its return value is a preallocated all-False tensor).
  TTFT = t_1 - t0 (ids copy + generate() set-up + cache creation + prefill + first sample)
  TPOT = (t_N - t_1) / (N - 1)   (ms per decode step; one step yields B tokens)
  e2e  = host clock after generate() returned and the device is synchronised, minus t0
Warm-ups come first (never in a statistic; compiled mode needs more: compilation and CUDA-graph recording
happen in the first calls). Peak memory = torch.cuda.max_memory_allocated() over the timed runs (the peak
stats are reset after the warm-ups), like llmbench's memory.peak_allocated_bytes.
The JSON (--output) holds every run's values and the medians; it is rewritten after each point, so a crash
keeps the finished points. A point that fails (compile error, OOM) is recorded with its error and the
others still run.
"""
import argparse
import datetime
import gc
import json
import os
import platform
import socket
import statistics
import sys
import time
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Published config.json values (the same as llmbench's presets in src/model/presets.cpp).
MODELS = {
    "qwen2.5-7b": dict(
        hf_id="Qwen/Qwen2.5-7B-Instruct", config_class="Qwen2Config", rope_theta=1000000.0,
        params=7615616512,
        fields=dict(
            attention_dropout=0.0, bos_token_id=151643, eos_token_id=151645, hidden_act="silu",
            hidden_size=3584, initializer_range=0.02, intermediate_size=18944, max_position_embeddings=32768,
            max_window_layers=28, num_attention_heads=28, num_hidden_layers=28, num_key_value_heads=4,
            rms_norm_eps=1e-06, sliding_window=131072, tie_word_embeddings=False, use_cache=True,
            use_sliding_window=False, vocab_size=152064)),
    "llama-3-8b": dict(
        hf_id="meta-llama/Meta-Llama-3-8B-Instruct", config_class="LlamaConfig", rope_theta=500000.0,
        params=8030261248,
        fields=dict(
            attention_bias=False, attention_dropout=0.0, bos_token_id=128000, eos_token_id=[128001, 128009],
            hidden_act="silu", hidden_size=4096, initializer_range=0.02, intermediate_size=14336,
            max_position_embeddings=8192, mlp_bias=False, num_attention_heads=32, num_hidden_layers=32,
            num_key_value_heads=8, pretraining_tp=1, rms_norm_eps=1e-05, tie_word_embeddings=False,
            use_cache=True, vocab_size=128256)),
}
MODES = ("eager", "sdpa", "compiled")
RECIPES = {
    "eager": 'from_config(attn_implementation="eager"), dynamic cache',
    "sdpa": 'from_config(attn_implementation="sdpa"), dynamic cache',
    "compiled": 'sdpa + cache_implementation="static" + model.forward = torch.compile(model.forward, '
                'mode="reduce-overhead", fullgraph=True)',
    "compiled-auto": 'sdpa + cache_implementation="static" + generate()\'s own decode-step compile '
                     '(CompileConfig(fullgraph=True, mode="reduce-overhead")), prefill eager',
}


def log(*parts):
    print("[hf]", *parts, flush=True)


def parse_workload(text):
    """'qwen2.5-7b:1,4' -> ('qwen2.5-7b', [1, 4])."""
    name, _, batches = text.partition(":")
    if name not in MODELS:
        raise argparse.ArgumentTypeError(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    try:
        sizes = [int(b) for b in (batches or "1").split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad batch list in '{text}'") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"batch sizes must be >= 1 in '{text}'")
    return name, sizes


def parse_modes(text):
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise argparse.ArgumentTypeError(f"modes must be a comma list of {', '.join(MODES)}")
    return modes


def summarize(values):
    if not values:
        return None
    return dict(n=len(values), median=statistics.median(values), mean=statistics.fmean(values),
                std=statistics.stdev(values) if len(values) > 1 else 0.0, min=min(values), max=max(values))


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def short_error(exc):
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0][:500] if text else type(exc).__name__


class Bench:
    def __init__(self, args):
        import torch
        import transformers
        self.torch = torch
        self.tf = transformers
        self.args = args
        if not args.verbose:
            transformers.logging.set_verbosity_error()

    # ---- model ----
    def make_config(self, name):
        spec = MODELS[name]
        cls = getattr(self.tf, spec["config_class"])
        theta = spec["rope_theta"]
        # transformers >= 5 keeps rope_theta inside rope_parameters; 4.x takes rope_theta.
        cfg = cls(rope_parameters=dict(rope_type="default", rope_theta=theta), **spec["fields"])
        rp = getattr(cfg, "rope_parameters", None) or {}
        if rp.get("rope_theta") != theta or getattr(cfg, "rope_theta", theta) != theta:
            cfg = cls(rope_theta=theta, **spec["fields"])
        return cfg

    def build(self, name, attn):
        torch = self.torch
        cfg = self.make_config(name)
        t = time.perf_counter()
        with torch.device("cuda"):
            model = self.tf.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation=attn)
        model.eval()
        torch.cuda.synchronize()
        build_ms = (time.perf_counter() - t) * 1e3
        n_params = sum(p.numel() for p in model.parameters())
        if n_params != MODELS[name]["params"]:
            raise RuntimeError(f"{name}: {n_params} parameters, the published model has {MODELS[name]['params']}")
        got = getattr(model.config, "_attn_implementation", attn)
        if got != attn:
            raise RuntimeError(f"{name}: asked for attn_implementation={attn}, the model uses {got}")
        eos = MODELS[name]["fields"]["eos_token_id"]
        eos = eos if isinstance(eos, list) else [eos]
        model.generation_config.eos_token_id = eos
        model.generation_config.pad_token_id = eos[0]
        model.generation_config.do_sample = False
        return model, build_ms, n_params

    def setup_compile(self, model, orig_forward, style):
        """Fresh compilation for this batch size: no shape seen before may turn dims dynamic."""
        torch = self.torch
        torch._dynamo.reset()
        model.forward = orig_forward
        model.generation_config.cache_implementation = "static"
        if style == "forward":
            model.forward = torch.compile(orig_forward, mode="reduce-overhead", fullgraph=True)
        else:
            compile_config = getattr(self.tf, "CompileConfig", None)
            if compile_config is None:
                from transformers.generation import CompileConfig as compile_config
            model.generation_config.compile_config = compile_config(fullgraph=True, mode="reduce-overhead")

    # ---- one generate ----
    def one_run(self, model, ids_cpu, n):
        torch = self.torch
        done = torch.zeros(ids_cpu.shape[0], dtype=torch.bool, device="cuda")  # [B] never stop early
        events = []

        class TokenClock(self.tf.StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                e = torch.cuda.Event(enable_timing=True)
                e.record()
                events.append(e)
                return done

        start = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        ids = ids_cpu.to("cuda")  # [B, P] int64
        mask = torch.ones_like(ids)  # [B, P] int64
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, min_new_tokens=n,
                             max_new_tokens=n, stopping_criteria=self.tf.StoppingCriteriaList([TokenClock()]))
        torch.cuda.synchronize()
        e2e = (time.perf_counter() - t0) * 1e3
        if tuple(out.shape) != (ids_cpu.shape[0], ids_cpu.shape[1] + n):
            raise RuntimeError(f"generate returned shape {tuple(out.shape)}, expected {ids_cpu.shape[0]}x"
                               f"{ids_cpu.shape[1] + n}")
        if len(events) != n:
            raise RuntimeError(f"{len(events)} token events for {n} new tokens")
        itl = [events[i - 1].elapsed_time(events[i]) for i in range(1, n)]
        ttft = start.elapsed_time(events[0])
        tpot = events[0].elapsed_time(events[-1]) / (n - 1) if n > 1 else 0.0
        return dict(ttft_ms=ttft, tpot_ms=tpot, e2e_ms=e2e, itl_ms=itl)

    def measure(self, model, name, batch, warmup):
        torch, a = self.torch, self.args
        vocab = MODELS[name]["fields"]["vocab_size"]
        g = torch.Generator().manual_seed(a.seed)
        ids_cpu = torch.randint(3, int(0.95 * vocab), (batch, a.prompt_len), generator=g)  # [B, P] int64
        first_ms = None
        for i in range(warmup):
            r = self.one_run(model, ids_cpu, a.max_new_tokens)
            first_ms = r["e2e_ms"] if first_ms is None else first_ms
            log(f"  warm-up {i + 1}/{warmup}: e2e {r['e2e_ms']:.1f} ms")
        torch.cuda.reset_peak_memory_stats()
        runs = []
        for i in range(a.runs):
            runs.append(self.one_run(model, ids_cpu, a.max_new_tokens))
        peak = torch.cuda.max_memory_allocated()
        reserved = torch.cuda.max_memory_reserved()
        summary = {k: summarize([r[k] for r in runs]) for k in ("ttft_ms", "tpot_ms", "e2e_ms")}
        summary["itl_ms"] = summarize([v for r in runs for v in r["itl_ms"]])
        return dict(runs=runs, summary=summary, first_generate_ms=first_ms,
                    memory=dict(peak_allocated_bytes=peak, peak_reserved_bytes=reserved))

    # ---- driver ----
    def run_mode(self, name, batches, mode, doc, save):
        torch, a = self.torch, self.args
        attn = "eager" if mode == "eager" else "sdpa"
        base = dict(model=name, hf_id=MODELS[name]["hf_id"], mode=mode, attn=attn, dtype="bfloat16",
                    prompt_len=a.prompt_len, max_new_tokens=a.max_new_tokens)
        before = torch.cuda.memory_allocated()  # > 0: an earlier model was not freed (it would count in the peak)
        try:
            model, build_ms, n_params = self.build(name, attn)
        except Exception as exc:  # noqa: BLE001 - recorded, the other points still run
            traceback.print_exc()
            for b in batches:
                doc["points"].append(dict(base, batch=b, status="failed", error=f"build: {short_error(exc)}",
                                          recipe=RECIPES[mode]))
            save()
            return
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        orig_forward = model.forward
        for b in batches:
            point = dict(base, batch=b, recipe=RECIPES[mode], params=n_params, weights_bytes=weights,
                         build_ms=build_ms, allocated_before_build_bytes=before, errors=[])
            styles = [a.compile_style] if mode == "compiled" else [None]
            if mode == "compiled" and a.compile_style == "forward" and not a.no_compile_fallback:
                styles.append("auto")
            log(f"{name} {mode} batch {b}: P={a.prompt_len} N={a.max_new_tokens}")
            for style in styles:
                try:
                    warmup = a.warmup
                    if style is not None:
                        self.setup_compile(model, orig_forward, style)
                        point["recipe"] = RECIPES["compiled" if style == "forward" else "compiled-auto"]
                        point["compile_style"] = style
                        warmup = a.compile_warmup
                    point.update(self.measure(model, name, b, warmup), warmup=warmup, status="ok", error="")
                    s = point["summary"]
                    log(f"  {name} {mode} b{b}: TTFT {s['ttft_ms']['median']:.2f} ms, "
                        f"decode {s['tpot_ms']['median']:.2f} ms/step, "
                        f"peak {point['memory']['peak_allocated_bytes'] / 1e9:.2f} GB")
                    break
                except Exception as exc:  # noqa: BLE001
                    traceback.print_exc()
                    point["errors"].append(f"{style or mode}: {short_error(exc)}")
                    point.update(status="failed", error="; ".join(point["errors"]))
                    log(f"  FAILED {name} {mode} b{b}: {point['errors'][-1]}")
                    if style is not None:
                        model.forward = orig_forward
                        torch._dynamo.reset()
                    torch.cuda.empty_cache()
            doc["points"].append(point)
            save()
        del model, orig_forward
        gc.collect()
        if mode == "compiled":
            torch._dynamo.reset()
        torch.cuda.empty_cache()

    def env(self):
        torch = self.torch
        p = torch.cuda.get_device_properties(0)
        return dict(hostname=socket.gethostname(), python=platform.python_version(), torch=torch.__version__,
                    transformers=self.tf.__version__, cuda=torch.version.cuda,
                    gpu=dict(name=p.name, memory_bytes=p.total_memory, compute_capability=f"{p.major}.{p.minor}"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", action="append", type=parse_workload, metavar="MODEL:B1,B2",
                    help=f"model and batch sizes (repeatable; models: {', '.join(MODELS)}); "
                         "default qwen2.5-7b:1,4 and llama-3-8b:1")
    ap.add_argument("--modes", type=parse_modes, default=list(MODES), help="comma list of eager,sdpa,compiled")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--runs", type=int, default=10, help="timed runs per point")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up runs (eager, sdpa)")
    ap.add_argument("--compile-warmup", type=int, default=5, help="warm-up runs (compiled: compile + graph capture)")
    ap.add_argument("--compile-style", choices=("forward", "auto"), default="forward",
                    help="forward: torch.compile(model.forward) as transformers' guide does; "
                         "auto: only generate()'s own decode-step compile")
    ap.add_argument("--no-compile-fallback", action="store_true",
                    help="when the forward style fails, do not retry the point with the auto style")
    ap.add_argument("--seed", type=int, default=0, help="seed of the synthetic prompt ids")
    ap.add_argument("--output", "-o", required=True, help="JSON file to write")
    ap.add_argument("--verbose", action="store_true", help="keep transformers' warnings")
    args = ap.parse_args()
    if args.runs < 1 or args.warmup < 0 or args.compile_warmup < 1 or args.max_new_tokens < 2 or args.prompt_len < 1:
        ap.error("need --runs >= 1, --warmup >= 0, --compile-warmup >= 1, --max-new-tokens >= 2, --prompt-len >= 1")
    workloads = args.workload or [("qwen2.5-7b", [1, 4]), ("llama-3-8b", [1])]

    bench = Bench(args)
    if not bench.torch.cuda.is_available():
        sys.exit("hf_baseline.py: CUDA is not available")
    doc = dict(schema="llmbench-hf-baseline/1",
               created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               command=" ".join([os.path.basename(sys.executable)] + sys.argv), env=bench.env(),
               settings=dict(prompt_len=args.prompt_len, max_new_tokens=args.max_new_tokens, runs=args.runs,
                             warmup=args.warmup, compile_warmup=args.compile_warmup, seed=args.seed,
                             dtype="bfloat16", compile_style=args.compile_style),
               points=[])
    save = lambda: write_json(args.output, doc)  # noqa: E731
    log(f"torch {doc['env']['torch']}, transformers {doc['env']['transformers']}, {doc['env']['gpu']['name']}")
    for name, batches in workloads:
        for mode in args.modes:
            bench.run_mode(name, batches, mode, doc, save)
    save()
    failed = [p for p in doc["points"] if p["status"] != "ok"]
    log(f"wrote {args.output}: {len(doc['points']) - len(failed)} ok, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
