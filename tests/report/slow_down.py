#!/usr/bin/env python3
"""Writes a copy of a results file whose point `index` is `factor` times slower (times × factor,
throughputs ÷ factor, summaries alike): a stand-in "current" run for side-by-side and gate views of the report.
Usage: slow_down.py IN.json OUT.json INDEX FACTOR"""
import json
import sys

src, dst, index, factor = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
with open(src) as f:
    d = json.load(f)
p = d["points"][index]
for r in p["runs"]:
    for k, v in r.items():
        r[k] = [x * factor for x in v] if isinstance(v, list) else v * factor
for k in p["stages"]:
    p["stages"][k] *= factor
for metric, s in p["summary"].items():
    scale = factor if metric.endswith("_ms") else 1 / factor  # throughputs go down; CV is unchanged
    for k in ("mean", "std", "min", "max", "p50", "p90", "p95", "p99", "trimmed_median"):
        s[k] *= scale
    s["ci95"] = [x * scale for x in s["ci95"]]
with open(dst, "w") as f:
    json.dump(d, f, indent=1)
