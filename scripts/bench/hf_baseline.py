#!/usr/bin/env python3
"""HF transformers latency baseline, measured the way HF's users run it (for scripts/bench/vs_hf.sh).

Runs on the GPU host (torch 2.11 + CUDA, transformers 5.x; no network, no checkpoint: random weights in the
published shapes, built on the GPU with AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)).

    python3 scripts/bench/hf_baseline.py --workload qwen2.5-7b:1,4 --workload llama-3-8b:1 --output hf.json
    python3 scripts/bench/hf_baseline.py --workload qwen2.5-7b:1 --modes sdpa --runs 3 --output quick.json
    python3 scripts/bench/hf_baseline.py --diagnose --workload qwen2.5-7b:1 --output diagnose.json

Modes (one fresh model per mode and model; the batch sizes run one after the other on it):
  eager     from_config(attn_implementation="eager"), dynamic cache
  sdpa      from_config(attn_implementation="sdpa") (transformers' default), dynamic cache
  compiled  sdpa + model.generation_config.cache_implementation = "static", then plain model.generate():
            generate() compiles its decode step itself (torch.compile of the model call with its default
            CompileConfig, mode "reduce-overhead": CUDA graphs) because the static cache is compileable. That
            is transformers' documented recipe for fast generation ("static cache and torch.compile"). The
            prefill is not compiled. Compilation starts afresh for each batch size (torch._dynamo.reset()), so
            no dimension turns dynamic; it takes ~2 min per batch size on an H200, all inside the first
            warm-up (--compile-warmup, default 3). The earlier manual recipe, model.forward =
            torch.compile(model.forward, mode="reduce-overhead", fullgraph=True), is gone: in transformers
            5.17 it fails ("accessing tensor output of CUDAGraphs that has been overwritten by a subsequent
            run"; generate()'s own compile of the model call probably nests a second CUDA-graph tree around
            it), and the compiled column measured through the retry that followed was 2x slower than the
            plain recipe timed by a reviewer (16.8 vs 7.68 ms/step, Qwen2.5-7B batch 1; --diagnose measures
            whether the retry is the cause). No retry now: a point that fails is recorded as failed.

Every point is timed twice, in the same process, on the same model and the same synthetic prompt ids
(uniform in [3, 0.95 vocab), seeded), greedy, EOS disabled (generation_config.eos_token_id = None, pad id
set; no min_new_tokens), so every generate() yields exactly N new tokens (the output shape is checked on
every call):
  wall clock (primary, what the table shows): plain model.generate(input_ids, attention_mask,
      max_new_tokens=K) with no StoppingCriteria, no streamer, no logits processor of ours, between two
      torch.cuda.synchronize() calls on the host clock (the ids' copy to the GPU is inside).
        TTFT   = trimmed median of generate(max_new_tokens=1)
        e2e    = trimmed median of generate(max_new_tokens=N)
        decode = (e2e - TTFT) / (N - 1)   ms per step; one step yields one token per sequence of the batch
      The runs alternate (TTFT run, e2e run) so drift of the shared host hits both alike.
  per-token CUDA events (cross-check, a separate set of runs after the wall-clock set): generate(N) with a
      StoppingCriteria that records one of N preallocated CUDA events per sampled token and returns a
      preallocated all-False tensor (no synchronisation); start event after torch.cuda.synchronize(), before
      the ids' copy. TTFT = start -> token 1, TPOT = (token N - token 1) / (N - 1), ITL = token i - token i-1.
Trimmed median = sort, drop --trim values from each end, median of the rest (llmbench's definition; a trim
that would leave nothing degrades to the plain median).
Flags per point: timings_disagree when |events - wall| / wall > 10 % (--disagree-threshold) for decode or
TTFT; compiled_not_faster (compiled mode) when its wall decode is not < 0.9 x (--compiled-margin) the sdpa
wall decode of the same model and batch (null when no sdpa point was measured). A flagged column is not
HF at its best, or not measured well: the table prints a note for each.
Warm-ups (--warmup; compiled --compile-warmup) run every kind of call once per round and never enter a
statistic. Peak memory = torch.cuda.max_memory_allocated() over all timed runs (peak stats reset after the
warm-ups), like llmbench's memory.peak_allocated_bytes.

Why the figures of schema 1 (this script before) were slower than HF is. They gave eager / sdpa / compiled
41.4 / 27.2 / 16.8 ms/step at batch 1, where plain generate() timed from outside gives 23.65 / 20.7 / 7.68
on the same kind of machine the same day. Schema 1 differed from plain use in four ways, each a hypothesis:
  1. Every decode step ran a Python StoppingCriteria that created and recorded a new CUDA event; HF eager
     decode is host-bound (hundreds of small launches per step), so host work per step adds to the step.
  2. min_new_tokens=N with EOS enabled added MinNewTokensLengthLogitsProcessor (arange over the vocabulary,
     isin, where: extra launches per step) and kept EOS handling (pad masking, EosTokenCriteria) on.
  3. The compiled column first tried torch.compile(model.forward), which failed; the retry reset dynamo and
     re-assigned model.forward, and generate()'s own compile then ran in a state left by the failed
     CUDA-graph tree (explicit CompileConfig(fullgraph=True), forward as an instance attribute) that may
     not be the fast path.
  4. Few runs (--quick: 3, no trim) on a shared host.
Items 1 and 2 cost microseconds of host time per step on paper, which cannot explain 18 ms per step; so they
are measured rather than assumed: --diagnose runs, in one process on one model, interleaved rounds of
  plain             the new primary recipe
  recorder          + schema 1's StoppingCriteria (new CUDA event per step)
  min_new_tokens    + EOS enabled and min_new_tokens=N
  old               both (schema 1's exact generate call)
and, for the compiled mode, after those, schema 1's compile sequence (forward compile, its failure, the
retry) followed by plain and old again (variant "retry", --diagnose-variants chooses). It prints a table of
TTFT, wall-clock decode and the change against plain, and writes llmbench-hf-diagnose/1 JSON.

The JSON (--output, schema llmbench-hf-baseline/2) holds every run's values, the summaries, both timings,
their ratio and the flags; it is rewritten after each point, so a crash keeps the finished points. A point
that fails (compile error, OOM) is recorded with its error and the others still run. Exit code 1 when a
point failed.
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

SCHEMA = "llmbench-hf-baseline/2"
DIAGNOSE_SCHEMA = "llmbench-hf-diagnose/1"

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
    "eager": 'from_config(attn_implementation="eager"), dynamic cache, plain generate()',
    "sdpa": 'from_config(attn_implementation="sdpa"), dynamic cache, plain generate()',
    "compiled": 'sdpa + generation_config.cache_implementation="static", plain generate() '
                '(generate() compiles its decode step itself: default CompileConfig, CUDA graphs); prefill eager',
}
VARIANTS = ("plain", "recorder", "min_new_tokens", "old", "retry")
VARIANT_TEXT = {
    "plain": "plain generate(), EOS disabled (the primary recipe)",
    "recorder": "+ schema 1's StoppingCriteria (creates and records a CUDA event per step)",
    "min_new_tokens": "+ EOS enabled and min_new_tokens=N (MinNewTokensLengthLogitsProcessor)",
    "old": "recorder + EOS + min_new_tokens: schema 1's generate call",
    "retry": "compiled only: schema 1's compile sequence (torch.compile(model.forward), failure, retry with "
             "CompileConfig(fullgraph=True)), then plain and old",
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


def parse_list(choices, what):
    def parse(text):
        items = [m.strip() for m in text.split(",") if m.strip()]
        bad = [m for m in items if m not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"{what} must be a comma list of {', '.join(choices)}")
        return items
    return parse


# ---- statistics (standard library only) ----
def trimmed_median(values, trim):
    """llmbench's trimmed median: sort, drop `trim` values from each end (keeping at least one), median."""
    v = sorted(values)
    t = min(max(trim, 0), (len(v) - 1) // 2)
    return statistics.median(v[t:len(v) - t])


def percentile(values, q):
    """Linear interpolation between closest ranks (numpy's default), as llmbench reports."""
    v = sorted(values)
    pos = (len(v) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize(values, trim, percentiles=False):
    if not values:
        return None
    s = dict(n=len(values), trimmed_median=trimmed_median(values, trim), median=statistics.median(values),
             mean=statistics.fmean(values), std=statistics.stdev(values) if len(values) > 1 else 0.0,
             min=min(values), max=max(values))
    if percentiles:
        s.update(p50=percentile(values, 50), p90=percentile(values, 90), p99=percentile(values, 99))
    return s


def rel_diff(events, wall):
    return (events - wall) / wall if wall else None


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def short_error(exc):
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0][:500] if text else type(exc).__name__


def apply_flags(points, margin):
    """compiled_not_faster needs the sdpa point of the same model and batch: set after each point."""
    sdpa = {(p["model"], p["batch"], p["prompt_len"], p["max_new_tokens"]): p for p in points
            if p.get("mode") == "sdpa" and p.get("status") == "ok"}
    for p in points:
        if p.get("mode") != "compiled" or p.get("status") != "ok":
            continue
        ref = sdpa.get((p["model"], p["batch"], p["prompt_len"], p["max_new_tokens"]))
        flags = p["flags"]
        if ref is None:
            flags.update(compiled_not_faster=None, sdpa_decode_ms=None)
            continue
        c, s = p["primary"]["decode_ms"], ref["primary"]["decode_ms"]
        flags.update(compiled_not_faster=not c < margin * s, sdpa_decode_ms=s, compiled_margin=margin)


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
        gc_ = model.generation_config
        gc_.eos_token_id = None  # exactly N tokens, without a min_new_tokens logits processor
        gc_.pad_token_id = self.eos_ids(name)[0]
        gc_.do_sample = False
        if gc_.eos_token_id is not None:
            raise RuntimeError("could not disable EOS in generation_config")
        return model, build_ms, n_params

    @staticmethod
    def eos_ids(name):
        eos = MODELS[name]["fields"]["eos_token_id"]
        return eos if isinstance(eos, list) else [eos]

    def set_compiled(self, model, on):
        """Fresh compilation state; static cache on/off. generate() compiles its decode step by itself."""
        torch = self.torch
        torch._dynamo.reset()
        for attr in ("forward", "_compiled_call", "_last_compile_config"):  # leftovers of an earlier batch
            model.__dict__.pop(attr, None)
        model.generation_config.cache_implementation = "static" if on else None
        if hasattr(model, "_cache"):
            del model._cache  # a static cache of another batch size

    def dynamo_graphs(self):
        try:
            return int(self.torch._dynamo.utils.counters["stats"]["unique_graphs"])
        except Exception:  # noqa: BLE001 - diagnostics only
            return None

    def generation_facts(self, model):
        g = model.generation_config
        cc = getattr(g, "compile_config", None)
        return dict(eos_token_id=g.eos_token_id, pad_token_id=g.pad_token_id, do_sample=g.do_sample,
                    cache_implementation=getattr(g, "cache_implementation", None),
                    compile_config=None if cc is None else repr(cc),
                    compiled_call=hasattr(model, "_compiled_call"))

    # ---- one generate ----
    def prompt(self, name, batch):
        torch, a = self.torch, self.args
        vocab = MODELS[name]["fields"]["vocab_size"]
        g = torch.Generator().manual_seed(a.seed)
        return torch.randint(3, int(0.95 * vocab), (batch, a.prompt_len), generator=g)  # [B, P] int64

    def check_shape(self, out, ids_cpu, n):
        seqs = out if isinstance(out, self.torch.Tensor) else out.sequences
        want = (ids_cpu.shape[0], ids_cpu.shape[1] + n)
        if tuple(seqs.shape) != want:
            raise RuntimeError(f"generate returned shape {tuple(seqs.shape)}, expected {want[0]}x{want[1]} "
                               f"(EOS ended the run early?)")

    def wall_run(self, model, ids_cpu, n, **kwargs):
        """One plain generate() timed from outside: ms between two synchronisations."""
        torch = self.torch
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        ids = ids_cpu.to("cuda")  # [B, P] int64
        mask = torch.ones_like(ids)  # [B, P] int64
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, **kwargs)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        self.check_shape(out, ids_cpu, n)
        return ms

    def events_run(self, model, ids_cpu, n, old_style=False, **kwargs):
        """generate(N) with a StoppingCriteria that records a CUDA event per sampled token (no sync).
        old_style: schema 1's recorder, which created a new event per step; else N preallocated events."""
        torch = self.torch
        done = torch.zeros(ids_cpu.shape[0], dtype=torch.bool, device="cuda")  # [B] never stop early
        pre = [] if old_style else [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        events = []

        class TokenClock(self.tf.StoppingCriteria):
            def __call__(self, input_ids, scores, **kw):
                if old_style:
                    e = torch.cuda.Event(enable_timing=True)
                else:
                    e = pre[len(events)] if len(events) < len(pre) else torch.cuda.Event(enable_timing=True)
                e.record()
                events.append(e)
                return done

        start = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        ids = ids_cpu.to("cuda")  # [B, P] int64
        mask = torch.ones_like(ids)  # [B, P] int64
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n,
                             stopping_criteria=self.tf.StoppingCriteriaList([TokenClock()]), **kwargs)
        torch.cuda.synchronize()
        e2e = (time.perf_counter() - t0) * 1e3
        self.check_shape(out, ids_cpu, n)
        if len(events) != n:
            raise RuntimeError(f"{len(events)} token events for {n} new tokens")
        itl = [events[i - 1].elapsed_time(events[i]) for i in range(1, n)]
        tpot = events[0].elapsed_time(events[-1]) / (n - 1) if n > 1 else None
        return dict(ttft_ms=start.elapsed_time(events[0]), tpot_ms=tpot, e2e_ms=e2e, itl_ms=itl)

    # ---- one point: both timings ----
    def measure(self, model, name, batch, warmup):
        torch, a = self.torch, self.args
        n, trim = a.max_new_tokens, a.trim
        ids_cpu = self.prompt(name, batch)
        warm = []
        graphs0 = self.dynamo_graphs()
        for i in range(warmup):
            # The N-token call first: a static cache is sized for it and then reused by the 1-token calls.
            e2e = self.wall_run(model, ids_cpu, n)
            ttft = self.wall_run(model, ids_cpu, 1)
            ev = self.events_run(model, ids_cpu, n)
            warm.append(dict(e2e_ms=e2e, ttft_ms=ttft, events_e2e_ms=ev["e2e_ms"]))
            log(f"  warm-up {i + 1}/{warmup}: e2e {e2e:.1f} ms, TTFT {ttft:.1f} ms, events e2e {ev['e2e_ms']:.1f} ms")
        graphs1 = self.dynamo_graphs()
        torch.cuda.reset_peak_memory_stats()
        wall = []
        for _ in range(a.runs):  # alternate, so drift of the host hits both alike
            ttft = self.wall_run(model, ids_cpu, 1)
            e2e = self.wall_run(model, ids_cpu, n)
            wall.append(dict(ttft_ms=ttft, e2e_ms=e2e))
        events = [self.events_run(model, ids_cpu, n) for _ in range(a.event_runs)]
        peak = torch.cuda.max_memory_allocated()
        reserved = torch.cuda.max_memory_reserved()
        graphs2 = self.dynamo_graphs()

        w_ttft = summarize([r["ttft_ms"] for r in wall], trim)
        w_e2e = summarize([r["e2e_ms"] for r in wall], trim)
        decode = (w_e2e["trimmed_median"] - w_ttft["trimmed_median"]) / (n - 1)
        pairs = summarize([(r["e2e_ms"] - r["ttft_ms"]) / (n - 1) for r in wall], trim)
        e_ttft = summarize([r["ttft_ms"] for r in events], trim)
        e_tpot = summarize([r["tpot_ms"] for r in events], trim)
        e_e2e = summarize([r["e2e_ms"] for r in events], trim)
        e_itl = summarize([v for r in events for v in r["itl_ms"]], 0, percentiles=True)

        thr = a.disagree_threshold
        d_dec = rel_diff(e_tpot["trimmed_median"], decode)
        d_ttft = rel_diff(e_ttft["trimmed_median"], w_ttft["trimmed_median"])
        disagree = [m for m, d in (("decode", d_dec), ("ttft", d_ttft)) if d is None or abs(d) > thr]
        return dict(
            primary=dict(ttft_ms=w_ttft["trimmed_median"], decode_ms=decode, e2e_ms=w_e2e["trimmed_median"],
                         source="wall"),
            wall=dict(method="plain generate() between torch.cuda.synchronize() calls, host clock; "
                             "decode = (e2e(N) - TTFT) / (N - 1) from the trimmed medians",
                      ttft_ms=w_ttft, e2e_ms=w_e2e, decode_ms=decode, decode_pairs_ms=pairs, runs=wall),
            events=dict(method="per-token CUDA events from a StoppingCriteria (preallocated events, no sync)",
                        ttft_ms=e_ttft, tpot_ms=e_tpot, e2e_ms=e_e2e, itl_ms=e_itl,
                        runs=[dict(ttft_ms=r["ttft_ms"], tpot_ms=r["tpot_ms"], e2e_ms=r["e2e_ms"]) for r in events]),
            cross_check=dict(threshold=thr,
                             decode_ratio=e_tpot["trimmed_median"] / decode if decode else None,
                             ttft_ratio=e_ttft["trimmed_median"] / w_ttft["trimmed_median"],
                             decode_rel_diff=d_dec, ttft_rel_diff=d_ttft,
                             # e2e of the event runs vs the plain runs: the recorder's own cost
                             recorder_e2e_ratio=e_e2e["trimmed_median"] / w_e2e["trimmed_median"]),
            flags=dict(timings_disagree=bool(disagree), disagree_metrics=disagree),
            warmups=warm, first_generate_ms=warm[0]["e2e_ms"] if warm else None,
            dynamo=dict(unique_graphs_after_warmup=None if graphs1 is None or graphs0 is None else graphs1 - graphs0,
                        unique_graphs_during_timed_runs=None if graphs2 is None or graphs1 is None
                        else graphs2 - graphs1),
            memory=dict(peak_allocated_bytes=peak, peak_reserved_bytes=reserved))

    # ---- driver ----
    def run_mode(self, name, batches, mode, doc, save):
        torch, a = self.torch, self.args
        attn = "eager" if mode == "eager" else "sdpa"
        base = dict(model=name, hf_id=MODELS[name]["hf_id"], mode=mode, attn=attn, dtype="bfloat16",
                    prompt_len=a.prompt_len, max_new_tokens=a.max_new_tokens, recipe=RECIPES[mode])
        before = torch.cuda.memory_allocated()  # > 0: an earlier model was not freed (it would count in the peak)
        try:
            model, build_ms, n_params = self.build(name, attn)
        except Exception as exc:  # noqa: BLE001 - recorded, the other points still run
            traceback.print_exc()
            for b in batches:
                doc["points"].append(dict(base, batch=b, status="failed", error=f"build: {short_error(exc)}"))
            save()
            return
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        for b in batches:
            point = dict(base, batch=b, params=n_params, weights_bytes=weights, build_ms=build_ms,
                         allocated_before_build_bytes=before, runs=a.runs, event_runs=a.event_runs, trim=a.trim)
            log(f"{name} {mode} batch {b}: P={a.prompt_len} N={a.max_new_tokens}")
            try:
                warmup = a.warmup
                if mode == "compiled":
                    self.set_compiled(model, True)
                    warmup = a.compile_warmup
                point.update(self.measure(model, name, b, warmup), warmup=warmup, status="ok", error="",
                             generation=self.generation_facts(model))
                pr, cc = point["primary"], point["cross_check"]
                log(f"  {name} {mode} b{b}: TTFT {pr['ttft_ms']:.2f} ms, decode {pr['decode_ms']:.2f} ms/step "
                    f"(events {point['events']['tpot_ms']['trimmed_median']:.2f}, x{cc['decode_ratio']:.3f}), "
                    f"peak {point['memory']['peak_allocated_bytes'] / 1e9:.2f} GB")
            except Exception as exc:  # noqa: BLE001
                traceback.print_exc()
                point.update(status="failed", error=short_error(exc))
                log(f"  FAILED {name} {mode} b{b}: {point['error']}")
                if mode == "compiled":
                    torch._dynamo.reset()
                torch.cuda.empty_cache()
            doc["points"].append(point)
            apply_flags(doc["points"], a.compiled_margin)
            save()
        del model
        gc.collect()
        if mode == "compiled":
            torch._dynamo.reset()
        torch.cuda.empty_cache()

    # ---- --diagnose ----
    def variant_kwargs(self, name, variant):
        n = self.args.max_new_tokens
        if variant in ("min_new_tokens", "old"):
            return dict(eos_token_id=self.eos_ids(name), min_new_tokens=n)
        return {}

    def diag_round(self, model, name, ids_cpu, variants, store):
        """One timed round: for each variant a 1-token and an N-token generate(), each called the variant's way
        and timed on the host clock between synchronisations (the recorder variants' own e2e)."""
        n = self.args.max_new_tokens
        for v in variants:
            kw = self.variant_kwargs(name, v)
            for k, key in ((1, "ttft_ms"), (n, "e2e_ms")):
                kwk = dict(kw, min_new_tokens=k) if "min_new_tokens" in kw else kw
                if v in ("recorder", "old"):
                    r = self.events_run(model, ids_cpu, k, old_style=True, **kwk)
                    store[v][key].append(r["e2e_ms"])
                    if k == n:
                        store[v]["events_tpot_ms"].append(r["tpot_ms"])
                else:
                    store[v][key].append(self.wall_run(model, ids_cpu, k, **kwk))

    def diag_measure(self, model, name, batch, variants, warmup):
        a = self.args
        ids_cpu = self.prompt(name, batch)
        for i in range(warmup):
            t = time.perf_counter()
            self.diag_round(model, name, ids_cpu, variants, {v: dict(ttft_ms=[], e2e_ms=[], events_tpot_ms=[])
                                                             for v in variants})
            log(f"  warm-up round {i + 1}/{warmup}: {time.perf_counter() - t:.1f} s")
        store = {v: dict(ttft_ms=[], e2e_ms=[], events_tpot_ms=[]) for v in variants}
        for _ in range(a.runs):
            self.diag_round(model, name, ids_cpu, variants, store)
        out = {}
        for v in variants:
            s = store[v]
            ttft = trimmed_median(s["ttft_ms"], a.trim)
            e2e = trimmed_median(s["e2e_ms"], a.trim)
            out[v] = dict(description=VARIANT_TEXT[v], ttft_ms=ttft, e2e_ms=e2e,
                          decode_ms=(e2e - ttft) / (a.max_new_tokens - 1),
                          events_tpot_ms=trimmed_median(s["events_tpot_ms"], a.trim) if s["events_tpot_ms"] else None,
                          runs=s)
        return out

    def diag_retry(self, model, name, batch, orig_forward):
        """Schema 1's compiled sequence: forward compile; on failure reset, re-assign forward, explicit
        CompileConfig(fullgraph=True, mode="reduce-overhead"); then measure plain and old in that state."""
        torch, tf, a = self.torch, self.tf, self.args
        self.set_compiled(model, True)
        ids_cpu = self.prompt(name, batch)
        old_kw = self.variant_kwargs(name, "old")
        state = dict(forward_compile_error=None)
        model.forward = torch.compile(orig_forward, mode="reduce-overhead", fullgraph=True)
        try:
            for i in range(a.compile_warmup):
                self.events_run(model, ids_cpu, a.max_new_tokens, old_style=True, **old_kw)
            state["state"] = "forward compile worked"
        except Exception as exc:  # noqa: BLE001 - that failure is what schema 1 retried after
            state["forward_compile_error"] = short_error(exc)
            log(f"  forward compile failed as in schema 1: {state['forward_compile_error']}")
            torch._dynamo.reset()
            model.forward = orig_forward
            compile_config = getattr(tf, "CompileConfig", None)
            if compile_config is None:
                from transformers.generation import CompileConfig as compile_config
            model.generation_config.compile_config = compile_config(fullgraph=True, mode="reduce-overhead")
            torch.cuda.empty_cache()
            state["state"] = "after schema 1's retry"
        res = self.diag_measure(model, name, batch, ["plain", "old"], a.compile_warmup)
        state.update({f"retry:{k}": v for k, v in res.items()})
        return state

    def diagnose(self, name, batches, mode, variants, doc, save):
        torch, a = self.torch, self.args
        attn = "eager" if mode == "eager" else "sdpa"
        try:
            model, _, _ = self.build(name, attn)
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            doc["points"] += [dict(model=name, mode=mode, batch=b, status="failed", error=f"build: {short_error(exc)}")
                              for b in batches]
            save()
            return
        orig_forward = model.forward
        saved_cc = getattr(model.generation_config, "compile_config", None)
        main = [v for v in variants if v != "retry"]
        for b in batches:
            point = dict(model=name, mode=mode, batch=b, prompt_len=a.prompt_len, max_new_tokens=a.max_new_tokens,
                         runs=a.runs, trim=a.trim, variants={})
            log(f"diagnose {name} {mode} batch {b}: {', '.join(variants)}")
            try:
                if mode == "compiled":
                    self.set_compiled(model, True)
                    model.generation_config.compile_config = saved_cc
                if main:
                    point["variants"] = self.diag_measure(
                        model, name, b, main, a.compile_warmup if mode == "compiled" else a.warmup)
                if "retry" in variants and mode == "compiled":
                    point["retry"] = self.diag_retry(model, name, b, orig_forward)
                    for k in ("retry:plain", "retry:old"):
                        point["variants"][k] = point["retry"].pop(k)
                point.update(status="ok", error="")
            except Exception as exc:  # noqa: BLE001
                traceback.print_exc()
                point.update(status="failed", error=short_error(exc))
                torch._dynamo.reset()
                torch.cuda.empty_cache()
            ref = point["variants"].get("plain")
            for v in point["variants"].values():
                v["decode_vs_plain_ms"] = v["decode_ms"] - ref["decode_ms"] if ref else None
                v["decode_vs_plain"] = v["decode_ms"] / ref["decode_ms"] if ref and ref["decode_ms"] else None
            doc["points"].append(point)
            save()
            for line in diag_table([point]):
                log(line)
        model.__dict__.pop("forward", None)
        del model, orig_forward
        gc.collect()
        torch._dynamo.reset()
        torch.cuda.empty_cache()

    def env(self):
        torch = self.torch
        p = torch.cuda.get_device_properties(0)
        return dict(hostname=socket.gethostname(), python=platform.python_version(), torch=torch.__version__,
                    transformers=self.tf.__version__, cuda=torch.version.cuda,
                    gpu=dict(name=p.name, memory_bytes=p.total_memory, compute_capability=f"{p.major}.{p.minor}"))


def diag_table(points):
    lines = ["| model | mode | batch | variant | TTFT ms | decode ms/step (wall) | vs plain | events TPOT |",
             "|---|---|---|---|---|---|---|---|"]
    for p in points:
        if p.get("status") != "ok":
            lines.append(f"| {p['model']} | {p['mode']} | {p['batch']} | failed: {p.get('error', '')} | | | | |")
            continue
        for name, v in p["variants"].items():
            vs = "—" if v.get("decode_vs_plain_ms") is None else \
                f"{v['decode_vs_plain_ms']:+.2f} ms ({(v['decode_vs_plain'] - 1) * 100:+.1f} %)"
            ev = "—" if v.get("events_tpot_ms") is None else f"{v['events_tpot_ms']:.2f}"
            lines.append(f"| {p['model']} | {p['mode']} | {p['batch']} | {name} | {v['ttft_ms']:.2f} | "
                         f"{v['decode_ms']:.2f} | {vs} | {ev} |")
        if p.get("retry"):
            lines.append(f"| {p['model']} | {p['mode']} | {p['batch']} | retry state: {p['retry'].get('state')}"
                         f"{'; ' + p['retry']['forward_compile_error'] if p['retry'].get('forward_compile_error') else ''}"
                         " | | | | |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", action="append", type=parse_workload, metavar="MODEL:B1,B2",
                    help=f"model and batch sizes (repeatable; models: {', '.join(MODELS)}); "
                         "default qwen2.5-7b:1,4 and llama-3-8b:1 (with --diagnose: qwen2.5-7b:1)")
    ap.add_argument("--modes", type=parse_list(MODES, "modes"), default=list(MODES),
                    help="comma list of eager,sdpa,compiled")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--runs", type=int, default=10,
                    help="timed wall-clock runs per point (each: a 1-token and an N-token generate)")
    ap.add_argument("--event-runs", type=int, default=None, help="timed runs of the events cross-check "
                                                                   "(default: --runs)")
    ap.add_argument("--trim", type=int, default=1, help="values dropped from each end before the median "
                                                        "(llmbench's trimmed median)")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up rounds (eager, sdpa)")
    ap.add_argument("--compile-warmup", type=int, default=3,
                    help="warm-up rounds, compiled (the first compiles: ~2 min per batch size on an H200)")
    ap.add_argument("--disagree-threshold", type=float, default=0.10,
                    help="flag timings_disagree when |events - wall| / wall exceeds this")
    ap.add_argument("--compiled-margin", type=float, default=0.9,
                    help="flag compiled_not_faster unless compiled decode < this x sdpa decode")
    ap.add_argument("--diagnose", action="store_true",
                    help="measure why schema 1 was slow: wall-clock decode with/without its StoppingCriteria, "
                         "with/without min_new_tokens (and its compile retry sequence), one process")
    ap.add_argument("--diagnose-variants", type=parse_list(VARIANTS, "variants"), default=list(VARIANTS),
                    help=f"with --diagnose: comma list of {', '.join(VARIANTS)} (plain is the reference)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the synthetic prompt ids")
    ap.add_argument("--output", "-o", required=True, help="JSON file to write")
    ap.add_argument("--verbose", action="store_true", help="keep transformers' warnings")
    args = ap.parse_args()
    if args.event_runs is None:
        args.event_runs = args.runs
    if (args.runs < 1 or args.event_runs < 1 or args.warmup < 0 or args.compile_warmup < 1
            or args.max_new_tokens < 2 or args.prompt_len < 1 or args.trim < 0):
        ap.error("need --runs >= 1, --event-runs >= 1, --warmup >= 0, --compile-warmup >= 1, "
                 "--max-new-tokens >= 2, --prompt-len >= 1, --trim >= 0")
    if args.diagnose:
        workloads = args.workload or [("qwen2.5-7b", [1])]
        if "plain" not in args.diagnose_variants:
            args.diagnose_variants.insert(0, "plain")
    else:
        workloads = args.workload or [("qwen2.5-7b", [1, 4]), ("llama-3-8b", [1])]

    bench = Bench(args)
    if not bench.torch.cuda.is_available():
        sys.exit("hf_baseline.py: CUDA is not available")
    settings = dict(prompt_len=args.prompt_len, max_new_tokens=args.max_new_tokens, runs=args.runs,
                    event_runs=args.event_runs, trim=args.trim, warmup=args.warmup,
                    compile_warmup=args.compile_warmup, seed=args.seed, dtype="bfloat16",
                    disagree_threshold=args.disagree_threshold, compiled_margin=args.compiled_margin)
    doc = dict(schema=DIAGNOSE_SCHEMA if args.diagnose else SCHEMA,
               created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               command=" ".join([os.path.basename(sys.executable)] + sys.argv), env=bench.env(),
               settings=settings, points=[])
    if args.diagnose:
        settings["variants"] = {v: VARIANT_TEXT[v] for v in args.diagnose_variants}
    save = lambda: write_json(args.output, doc)  # noqa: E731
    log(f"torch {doc['env']['torch']}, transformers {doc['env']['transformers']}, {doc['env']['gpu']['name']}")
    for name, batches in workloads:
        for mode in args.modes:
            if args.diagnose:
                bench.diagnose(name, batches, mode, args.diagnose_variants, doc, save)
            else:
                bench.run_mode(name, batches, mode, doc, save)
    save()
    failed = [p for p in doc["points"] if p.get("status") != "ok"]
    if args.diagnose:
        print("\n".join(["", "Diagnosis (wall-clock trimmed medians; decode = (e2e - TTFT) / (N - 1)):"]
                        + diag_table(doc["points"])), flush=True)
    else:
        for p in doc["points"]:
            f = p.get("flags") or {}
            if f.get("timings_disagree"):
                log(f"FLAG timings_disagree: {p['model']} {p['mode']} b{p['batch']} ({', '.join(f['disagree_metrics'])})")
            if f.get("compiled_not_faster"):
                log(f"FLAG compiled_not_faster: {p['model']} b{p['batch']}: {p['primary']['decode_ms']:.2f} vs "
                    f"sdpa {f['sdpa_decode_ms']:.2f} ms/step")
    log(f"wrote {args.output}: {len(doc['points']) - len(failed)} ok, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
