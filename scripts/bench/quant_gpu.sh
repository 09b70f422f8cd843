#!/usr/bin/env bash
# GPU host: quantized inference (docs/quantization.md). Builds with CUDA, runs the GEMV/quantization GPU
# tests, the GEMV micro-benchmark (GB/s per shape), then Qwen2.5-7B with bf16, int8 and fp8 weights at
# batch 1 and 4 (prompt 512, 64 new), and the fp8 prefill through _scaled_mm for comparison; the fp8 KV
# cache (--kv-dtype fp8) crossed with the weights, and an 8192-token prompt with a bf16 vs an fp8 cache.
# Usage: scripts/bench/quant_gpu.sh [out-dir]   (default quant-gpu-<date>/; logs and results there)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(realpath -m -- "${1:-$root/quant-gpu-$(date +%Y%m%d-%H%M%S)}")
mkdir -p "$out"
cd "$root"
build=${BUILD_DIR:-$root/build-gpu}
torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
[ -f "$build/build.ninja" ] ||
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" -DLLMBENCH_CUDA=ON \
    >"$out/configure.log"
cmake --build "$build" -j"$(nproc)" --target llmbench test_gpu test_core bench_gemv >"$out/build.log"
"$build/tests/test_gpu" --gtest_filter='Gemv.*:DecodePaths.*:KvFp8Gpu.*:FusedOps.*' 2>&1 | tee "$out/gpu-tests.log" | tail -3
"$build/tests/test_core" --gtest_filter='KvFp8.*:Quantize.*' 2>&1 | tee "$out/core-kv-tests.log" | tail -3
"$build/tests/bench_gemv" qwen2.5-7b 2>&1 | tee "$out/gemv-bench.log" | grep -E '^(device|.* layer )'
bench=(--model qwen2.5-7b --batch 1,4 --prompt-len 512 --max-new-tokens 64 --runs 5 --warmup 1)
"$build/llmbench" run "${bench[@]}" --weights bf16,int8,fp8 --output "$out/quant.json" 2>"$out/quant.log" |
  tee "$out/quant.txt"
"$build/llmbench" run "${bench[@]}" --weights fp8 --fp8-gemm scaled-mm --output "$out/fp8-scaled-mm.json" \
  2>"$out/fp8-scaled-mm.log" | tee "$out/fp8-scaled-mm.txt"
"$build/llmbench" run "${bench[@]}" --weights bf16 --no-gemv --output "$out/bf16-no-gemv.json" \
  2>"$out/bf16-no-gemv.log" | tee "$out/bf16-no-gemv.txt"
# fp8 KV cache: crossed with the weights (GEMV on), and the long context where the cache matters.
"$build/llmbench" run "${bench[@]}" --weights bf16,int8,fp8 --kv-dtype bf16,fp8 --gemv --output "$out/quant-kv.json" \
  2>"$out/quant-kv.log" | tee "$out/quant-kv.txt"
"$build/llmbench" run --model qwen2.5-7b --batch 1 --prompt-len 8192 --max-new-tokens 64 --runs 3 --warmup 1 --trim 0 \
  --kv-dtype bf16,fp8 --output "$out/kv-8192.json" 2>"$out/kv-8192.log" | tee "$out/kv-8192.txt"
python3 - "$out/kv-8192.json" <<'PY' | tee "$out/kv-8192-memory.txt"
import json, sys
for p in json.load(open(sys.argv[1]))["points"]:
    m = p["memory"]
    print(p["params"]["kv_dtype"], p["status"], "kv_cache MiB", m.get("kv_cache_bytes", 0) / 2**20,
          "peak GiB", m.get("peak_allocated_bytes", 0) / 2**30, "quality", p.get("quality"))
PY
echo "results in $out"
