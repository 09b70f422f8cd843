#!/usr/bin/env bash
# GPU (2 GPUs, NCCL): tests/cli/serve_tp.sh on cuda:0 and cuda:1 — `serve --tp 2` (CUDA graphs with the
# NCCL all-reduces captured on both ranks, replayed per step through dist::ModelMirror) gives the texts of
# `serve --tp 1` and `llmbench generate` in float32, with batched and chunked prefill; SIGTERM; a killed
# rank. Exit 77 (skipped) without two GPUs.
set -u
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -ge 2 ] || { echo "SKIP: needs 2 GPUs, found ${gpus:-0}"; exit 77; }
LLMBENCH_SERVE_TP_DEVICE=cuda exec bash "$(dirname "$0")/../cli/serve_tp.sh" "$@"
