#!/usr/bin/env python3
"""One Markdown table of HF transformers vs llmbench from the JSON files of scripts/bench/vs_hf.sh.

    python3 scripts/bench/vs_hf_table.py --hf out/vs_hf/hf_*.json --llmbench out/vs_hf/llmbench_*.json \
        --llmbench-plain out/vs_hf/llmbench-plain_*.json [--llmbench-sdpa out/vs_hf/llmbench-sdpa_*.json] \
        [--date D] [--command C]

Rows: one per (model, batch, prompt, metric) for every workload that any input has; metrics TTFT ms, decode ms
per step, peak GB (10^9 bytes). When the inputs hold more than one (prompt, new tokens) shape, each row names
its shape. The llmbench sdpa column (--attn sdpa) and its ratio "sdpa vs HF sdpa" (HF sdpa / llmbench sdpa)
appear only when an input has such points. HF figures are the primary (wall-clock) figures of hf_baseline.py's JSON (schema
llmbench-hf-baseline/2: plain model.generate() timed from outside, TTFT = generate(max_new_tokens=1),
decode = (e2e(N) - TTFT) / (N - 1), trimmed medians); llmbench figures are summary.<metric>.trimmed_median
and memory.peak_allocated_bytes of its results JSON (schema version 1).
speed-up = HF eager / llmbench (> 1: llmbench is faster, or smaller for memory); "vs best HF" divides the
best of the three HF columns instead. Missing or failed cells show "—" / "failed" with the reason below.
A cell marked † is flagged, with a note below the table: an HF column whose per-token CUDA events disagree
with its wall clock by more than the threshold (timings_disagree), an HF compiled column not clearly faster
than HF sdpa (compiled_not_faster), an llmbench point whose verification failed. The notes also say whether
each llmbench point's verification passed. Standard library only (runs anywhere).
"""
import argparse
import json
import sys

DISPLAY = {"qwen2.5-7b": "Qwen2.5-7B", "llama-3-8b": "Llama-3-8B", "deepseek-r1-7b": "DeepSeek-R1-7B"}
METRICS = (("ttft_ms", "TTFT ms"), ("tpot_ms", "decode ms/step"), ("peak_gb", "peak GB"))
HF_COLUMNS = (("eager", "HF eager"), ("sdpa", "HF sdpa"), ("compiled", "HF compiled"))
LB_COLUMNS = (("llmbench-plain", "llmbench plain"), ("llmbench", "llmbench"), ("llmbench-sdpa", "llmbench sdpa"))
LABELS = dict(HF_COLUMNS + LB_COLUMNS)
HF_SCHEMA = "llmbench-hf-baseline/2"
MARK = "†"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        sys.exit(f"vs_hf_table.py: {path}: {exc}")


def where(model, batch):
    return f"{DISPLAY.get(model, model)} batch {batch}"


class Cell:
    def __init__(self, values=None, error="", marks=()):
        self.values = values or {}  # metric -> float
        self.error = error
        self.marks = set(marks)  # metrics whose cell is flagged (see the notes)


def read_hf(paths, cells, notes, envs, hf_stats):
    for path in paths:
        doc = load(path)
        schema = doc.get("schema")
        if schema == "llmbench-hf-baseline/1":
            sys.exit(f"vs_hf_table.py: {path}: schema llmbench-hf-baseline/1 is the old HF method (per-step "
                     "StoppingCriteria, min_new_tokens, forward-compile retry), which understated HF: re-run "
                     "scripts/bench/hf_baseline.py")
        if schema != HF_SCHEMA:
            sys.exit(f"vs_hf_table.py: {path}: not an hf_baseline.py file (schema {schema!r})")
        envs.append(doc.get("env", {}))
        hf_stats["settings"].append(doc.get("settings", {}))
        for p in doc.get("points", []):
            key = (p["model"], p["batch"], p["prompt_len"], p["max_new_tokens"])
            label, at = LABELS.get(p["mode"], p["mode"]), where(p["model"], p["batch"])
            if p.get("status") != "ok":
                cells[key, p["mode"]] = Cell(error=p.get("error") or "failed")
                continue
            pr, flags, cc = p["primary"], p.get("flags", {}), p.get("cross_check", {})
            marks = set()
            hf_stats["points"] += 1
            if flags.get("timings_disagree"):
                thr = cc.get("threshold", 0.10)
                parts = []
                for metric in flags.get("disagree_metrics", []):
                    if metric == "decode":
                        ev, wall, rel, unit = p["events"]["tpot_ms"]["trimmed_median"], pr["decode_ms"], \
                            cc.get("decode_rel_diff"), "ms/step"
                        marks.add("tpot_ms")
                    else:
                        ev, wall, rel, unit = p["events"]["ttft_ms"]["trimmed_median"], pr["ttft_ms"], \
                            cc.get("ttft_rel_diff"), "ms"
                        marks.add("ttft_ms")
                    parts.append(f"{metric} events {fmt(ev, 'ms')} vs wall clock {fmt(wall, 'ms')} {unit} "
                                 f"({'?' if rel is None else f'{rel * 100:+.1f}'} %)")
                notes.append(f"{label}, {at}: timings disagree by more than {thr * 100:.0f} %: "
                             f"{'; '.join(parts)}; the table shows the wall clock")
            else:
                hf_stats["agree"] += 1
            if p["mode"] == "compiled":
                if flags.get("compiled_not_faster"):
                    marks.add("tpot_ms")
                    m, s = flags.get("compiled_margin", 0.9), flags["sdpa_decode_ms"]
                    notes.append(f"{label}, {at}: compiled_not_faster: decode {fmt(pr['decode_ms'], 'ms')} ms/step "
                                 f"is not below {m:g} × HF sdpa's {fmt(s, 'ms')} = {m * s:.2f}: "
                                 "HF's compiled recipe did not pay off here, so this column is not HF at its best")
                elif flags.get("compiled_not_faster") is None:
                    notes.append(f"{label}, {at}: no HF sdpa point to check compiled_not_faster against")
            cells[key, p["mode"]] = Cell(dict(ttft_ms=pr["ttft_ms"], tpot_ms=pr["decode_ms"],
                                              peak_gb=p["memory"]["peak_allocated_bytes"] / 1e9), marks=marks)


def read_llmbench(paths, column, cells, paths_seen, envs, verify):
    for path in paths:
        doc = load(path)
        if doc.get("schema_version") != 1:
            sys.exit(f"vs_hf_table.py: {path}: schema_version {doc.get('schema_version')!r} is not 1")
        envs.append(doc.get("env", {}))
        for p in doc.get("points", []):
            q = p["params"]
            if "load" in p:
                sys.exit(f"vs_hf_table.py: {path}: a `llmbench load` results file; give `llmbench run` results")
            key = (q["model"], q["batch"], q["prompt_len"], q["max_new_tokens"])
            if (key, column) in cells:  # a table cell holds one point: a second one would hide the first
                sys.exit(f"vs_hf_table.py: {path}: two {LABELS[column]} points for {q['model']} batch {q['batch']}, "
                         f"prompt {q['prompt_len']} + {q['max_new_tokens']} new (other temperature, tp, weights, …); "
                         "give each column one point per shape")
            paths_seen.setdefault(column, set()).add(
                ", ".join(f"{k}={'on' if v else 'off'}" for k, v in sorted(p.get("paths", {}).items())))
            if p.get("status") != "ok":
                cells[key, column] = Cell(error=p.get("error") or p.get("status", "failed"))
                continue
            v = p.get("verification")
            at = key
            marks = ()
            if not isinstance(v, dict) or "ok" not in v:
                verify.setdefault(column, []).append((None, at, ""))
            elif v["ok"]:
                verify.setdefault(column, []).append((True, at, ""))
            else:
                reason = next((str(v[k]) for k in ("error", "reason", "detail", "message") if v.get(k)), "")
                verify.setdefault(column, []).append((False, at, reason))
                marks = ("ttft_ms", "tpot_ms")
            s = p["summary"]
            cells[key, column] = Cell(dict(ttft_ms=s["ttft_ms"]["trimmed_median"],
                                           tpot_ms=s["tpot_ms"]["trimmed_median"],
                                           peak_gb=p["memory"]["peak_allocated_bytes"] / 1e9), marks=marks)


def verify_lines(verify, multi_shape):
    lines = []

    def name(key):
        return where(key[0], key[1]) + (f", prompt {key[2]} + {key[3]} new" if multi_shape else "")

    for col, label in reversed(LB_COLUMNS):
        items = verify.get(col)
        if not items:
            continue
        ok = [name(at) for state, at, _ in items if state is True]
        bad = [f"{name(at)} ({reason})" if reason else name(at) for state, at, reason in items if state is False]
        missing = [name(at) for state, at, _ in items if state is None]
        if len(ok) == len(items):
            lines.append(f"{label} verification: ok on every point ({len(ok)}).")
            continue
        if len(missing) == len(items):
            lines.append(f"{label} verification: not recorded ({len(items)} point{'s' if len(items) > 1 else ''}).")
            continue
        text = f"{label} verification: ok on {len(ok)} of {len(items)} points"
        if bad:
            text += f"; FAILED: {', '.join(bad)}"
        if missing:
            text += f"; not recorded: {', '.join(missing)}"
        lines.append(text + ".")
    return lines


def fmt(v, metric):
    if metric == "peak_gb":
        return f"{v:.1f}"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def ratio(num, den):
    return f"{num / den:.2f}×" if num is not None and den else "—"


def build_table(cells, order):
    has_sdpa = any(col == "llmbench-sdpa" for _, col in cells)
    lb = [(c, h) for c, h in LB_COLUMNS if c != "llmbench-sdpa" or has_sdpa]
    columns = [c for c, _ in HF_COLUMNS] + [c for c, _ in lb]
    head = ["workload"] + [h for _, h in HF_COLUMNS] + [h for _, h in lb] + \
           ["speed-up (vs HF eager)", "vs best HF"] + (["sdpa vs HF sdpa"] if has_sdpa else [])
    shapes = {(k[2], k[3]) for k in order}
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    errors = []
    for key in order:
        model, batch, prompt, new = key
        shape = f", prompt {prompt} + {new} new" if len(shapes) > 1 else ""
        for metric, label in METRICS:
            row = [f"{DISPLAY.get(model, model)}, batch {batch}{shape}, {label}"]
            vals = {}
            for col in columns:
                cell = cells.get((key, col))
                if cell is None:
                    row.append("—")
                elif cell.error:
                    row.append("failed")
                    if metric == METRICS[0][0]:
                        errors.append(f"{LABELS[col]}, {where(model, batch)}{shape}: {cell.error}")
                else:
                    vals[col] = cell.values[metric]
                    row.append(fmt(vals[col], metric) + (MARK if metric in cell.marks else ""))
            ours = vals.get("llmbench")
            hf_best = min((vals[c] for c, _ in HF_COLUMNS if c in vals), default=None)
            row += [ratio(vals.get("eager"), ours), ratio(hf_best, ours)]
            if has_sdpa:
                row.append(ratio(vals.get("sdpa"), vals.get("llmbench-sdpa")))
            lines.append("| " + " | ".join(row) + " |")
    return lines, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hf", nargs="*", default=[], help="hf_baseline.py JSON files")
    ap.add_argument("--llmbench", nargs="*", default=[], help="llmbench run results JSON (default paths)")
    ap.add_argument("--llmbench-plain", nargs="*", default=[], help="llmbench run --no-cuda-graph --no-fused")
    ap.add_argument("--llmbench-sdpa", nargs="*", default=[], help="llmbench run --attn sdpa")
    ap.add_argument("--date", default="", help="date line to print above the table")
    ap.add_argument("--command", default="", help="the command that produced the inputs")
    args = ap.parse_args()
    if not (args.hf or args.llmbench or args.llmbench_plain or args.llmbench_sdpa):
        ap.error("give at least one input file")

    cells, notes, envs, paths_seen, verify = {}, [], [], {}, {}
    hf_stats = dict(points=0, agree=0, settings=[])
    read_hf(args.hf, cells, notes, envs, hf_stats)
    read_llmbench(args.llmbench, "llmbench", cells, paths_seen, envs, verify)
    read_llmbench(args.llmbench_plain, "llmbench-plain", cells, paths_seen, envs, verify)
    read_llmbench(args.llmbench_sdpa, "llmbench-sdpa", cells, paths_seen, envs, verify)
    order = sorted({key for key, _ in cells}, key=lambda k: (list(DISPLAY).index(k[0]) if k[0] in DISPLAY
                                                              else len(DISPLAY), k[0], k[1], k[2], k[3]))

    out = []
    if args.date:
        out.append(f"Measured {args.date}.")
    if args.command:
        out.append(f"Command: `{args.command}`")
    gpu = next((e["gpu"]["name"] for e in envs if isinstance(e.get("gpu"), dict)), None) or \
        next((g["name"] for e in envs for g in e.get("gpus", [])), None)
    hf_env = next((e for e in envs if "transformers" in e), None)
    facts = []
    if gpu:
        facts.append(gpu)
    if hf_env:
        facts.append(f"torch {hf_env.get('torch')}, transformers {hf_env.get('transformers')}")
    shapes = sorted({(k[2], k[3]) for k in order})
    facts.append("; ".join(f"prompt {p}, {n} new tokens" for p, n in shapes) + ", bfloat16, random weights")
    out.append(" · ".join(facts))
    out.append("")
    lines, errors = build_table(cells, order)
    out += lines
    out.append("")
    out.append("Trimmed medians over the timed runs (each side drops the same number of runs from each end). "
               "speed-up = HF eager ÷ llmbench, vs best HF = best HF column ÷ llmbench (> 1 means llmbench is "
               "faster, or uses less memory). Decode is ms per step (one step yields one token per sequence of "
               "the batch)." + (" sdpa vs HF sdpa = HF sdpa ÷ llmbench sdpa." if args.llmbench_sdpa else ""))
    if args.hf:
        runs = sorted({(st.get("runs"), st.get("event_runs"), st.get("trim"), st.get("warmup"),
                        st.get("compile_warmup")) for st in hf_stats["settings"]}, key=str)
        how = "; ".join(f"{r} runs, trim {t}, {w} warm-ups (compiled {c}), {e} event runs"
                        for r, e, t, w, c in runs)
        out.append("HF: plain `model.generate()` timed from outside (wall clock, the figure shown): TTFT = "
                   "generate(max_new_tokens=1), decode = (e2e of N tokens − TTFT) / (N − 1), EOS disabled; "
                   "cross-checked by per-token CUDA events in separate runs. HF compiled = sdpa + "
                   f"`cache_implementation=\"static\"` + generate()'s own decode-step compile. {how}.")
        n, agree = hf_stats["points"], hf_stats["agree"]
        out.append(f"HF cross-check: events and wall clock agree within the threshold on "
                   f"{'every point' if n and agree == n else f'{agree} of {n} points'}"
                   f"{'' if agree == n else ' (flagged below)'}.")
    for col, label in LB_COLUMNS:
        if col in paths_seen:
            out.append(f"{label} ran with: {' | '.join(sorted(paths_seen[col]))}.")
    out += verify_lines(verify, len({(k[2], k[3]) for k in order}) > 1)
    if any(c.marks for c in cells.values()):
        out.append(f"{MARK} flagged: see the notes below.")
    for line in dict.fromkeys(errors + notes):  # one note per point, however many files name it
        out.append(f"- {line}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
