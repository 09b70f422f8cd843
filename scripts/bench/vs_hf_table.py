#!/usr/bin/env python3
"""One Markdown table of HF transformers vs llmbench from the JSON files of scripts/bench/vs_hf.sh.

    python3 scripts/bench/vs_hf_table.py --hf out/vs_hf/hf_*.json --llmbench out/vs_hf/llmbench_*.json \
        --llmbench-plain out/vs_hf/llmbench-plain_*.json [--date D] [--command C]

Rows: one per (model, batch, metric) for every workload that any input has; metrics TTFT ms, decode ms per
step, peak GB (10^9 bytes). HF figures are the medians in hf_baseline.py's JSON; llmbench figures are
summary.<metric>.trimmed_median and memory.peak_allocated_bytes of its results JSON (schema version 1).
The trimmed median drops as many values from each end, so it equals the plain median of the same runs.
speed-up = HF eager / llmbench (> 1: llmbench is faster, or smaller for memory); "vs best HF" divides the
best of the three HF columns instead. Missing or failed cells show "—" / "failed" with the reason below.
Standard library only (runs anywhere).
"""
import argparse
import json
import sys

DISPLAY = {"qwen2.5-7b": "Qwen2.5-7B", "llama-3-8b": "Llama-3-8B", "deepseek-r1-7b": "DeepSeek-R1-7B"}
METRICS = (("ttft_ms", "TTFT ms"), ("tpot_ms", "decode ms/step"), ("peak_gb", "peak GB"))
HF_COLUMNS = (("eager", "HF eager"), ("sdpa", "HF sdpa"), ("compiled", "HF compiled"))
LB_COLUMNS = (("llmbench-plain", "llmbench plain"), ("llmbench", "llmbench"))


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as exc:
        sys.exit(f"vs_hf_table.py: {path}: {exc}")


class Cell:
    def __init__(self, values=None, error=""):
        self.values = values or {}  # metric -> float
        self.error = error


def read_hf(paths, cells, notes, envs):
    for path in paths:
        doc = load(path)
        if doc.get("schema") != "llmbench-hf-baseline/1":
            sys.exit(f"vs_hf_table.py: {path}: not an hf_baseline.py file (schema {doc.get('schema')!r})")
        envs.append(doc.get("env", {}))
        for p in doc.get("points", []):
            key = (p["model"], p["batch"], p["prompt_len"], p["max_new_tokens"])
            if p.get("status") != "ok":
                cells[key, p["mode"]] = Cell(error=p.get("error", "failed"))
                continue
            s = p["summary"]
            cells[key, p["mode"]] = Cell(dict(ttft_ms=s["ttft_ms"]["median"], tpot_ms=s["tpot_ms"]["median"],
                                              peak_gb=p["memory"]["peak_allocated_bytes"] / 1e9))
            if p.get("compile_style") == "auto":
                notes.append(f"HF compiled, {DISPLAY.get(p['model'], p['model'])} batch {p['batch']}: "
                             f"torch.compile(model.forward) failed ({'; '.join(p.get('errors', []))}); "
                             "measured with generate()'s own decode-step compile instead")


def read_llmbench(paths, column, cells, paths_seen, envs):
    for path in paths:
        doc = load(path)
        if doc.get("schema_version") != 1:
            sys.exit(f"vs_hf_table.py: {path}: schema_version {doc.get('schema_version')!r} is not 1")
        envs.append(doc.get("env", {}))
        for p in doc.get("points", []):
            q = p["params"]
            key = (q["model"], q["batch"], q["prompt_len"], q["max_new_tokens"])
            paths_seen.setdefault(column, set()).add(
                ", ".join(f"{k}={'on' if v else 'off'}" for k, v in sorted(p.get("paths", {}).items())))
            if p.get("status") != "ok":
                cells[key, column] = Cell(error=p.get("error") or p.get("status", "failed"))
                continue
            s = p["summary"]
            cells[key, column] = Cell(dict(ttft_ms=s["ttft_ms"]["trimmed_median"],
                                           tpot_ms=s["tpot_ms"]["trimmed_median"],
                                           peak_gb=p["memory"]["peak_allocated_bytes"] / 1e9))


def fmt(v, metric):
    if metric == "peak_gb":
        return f"{v:.1f}"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def ratio(num, den):
    return f"{num / den:.2f}×" if num is not None and den else "—"


def build_table(cells, order):
    columns = [c for c, _ in HF_COLUMNS] + [c for c, _ in LB_COLUMNS]
    head = ["workload"] + [h for _, h in HF_COLUMNS] + [h for _, h in LB_COLUMNS] + \
           ["speed-up (vs HF eager)", "vs best HF"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    errors = []
    for key in order:
        model, batch, _, _ = key
        for metric, label in METRICS:
            row = [f"{DISPLAY.get(model, model)}, batch {batch}, {label}"]
            vals = {}
            for col in columns:
                cell = cells.get((key, col))
                if cell is None:
                    row.append("—")
                elif cell.error:
                    row.append("failed")
                    if metric == METRICS[0][0]:
                        errors.append(f"{dict(HF_COLUMNS + LB_COLUMNS)[col]}, {DISPLAY.get(model, model)} "
                                      f"batch {batch}: {cell.error}")
                else:
                    vals[col] = cell.values[metric]
                    row.append(fmt(vals[col], metric))
            ours = vals.get("llmbench")
            hf_best = min((vals[c] for c, _ in HF_COLUMNS if c in vals), default=None)
            row += [ratio(vals.get("eager"), ours), ratio(hf_best, ours)]
            lines.append("| " + " | ".join(row) + " |")
    return lines, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hf", nargs="*", default=[], help="hf_baseline.py JSON files")
    ap.add_argument("--llmbench", nargs="*", default=[], help="llmbench run results JSON (default paths)")
    ap.add_argument("--llmbench-plain", nargs="*", default=[], help="llmbench run --no-cuda-graph --no-fused")
    ap.add_argument("--date", default="", help="date line to print above the table")
    ap.add_argument("--command", default="", help="the command that produced the inputs")
    args = ap.parse_args()
    if not (args.hf or args.llmbench or args.llmbench_plain):
        ap.error("give at least one input file")

    cells, notes, envs, paths_seen = {}, [], [], {}
    read_hf(args.hf, cells, notes, envs)
    read_llmbench(args.llmbench, "llmbench", cells, paths_seen, envs)
    read_llmbench(args.llmbench_plain, "llmbench-plain", cells, paths_seen, envs)
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
    out.append("Medians over the timed runs. speed-up = HF eager ÷ llmbench, vs best HF = best HF column ÷ "
               "llmbench (> 1 means llmbench is faster, or uses less memory). Decode is ms per step (one step "
               "yields one token per sequence of the batch).")
    for col, label in LB_COLUMNS:
        if col in paths_seen:
            out.append(f"{label} ran with: {' | '.join(sorted(paths_seen[col]))}.")
    for line in errors + notes:
        out.append(f"- {line}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
