#!/usr/bin/env bash
# GPU host: build with CUDA against the installed PyTorch's libtorch, run the gpu tests, measure ceilings.
# Usage: scripts/gpu-build.sh [build-dir]   (default build-gpu/ in the source tree; a relative path is
# taken from the current directory, an absolute one as it is)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m -- "${1:-$root/build-gpu}")
cd "$root"
if compgen -G ".deps/*.deb" >/dev/null && [ ! -d .deps/prefix ]; then
  scripts/offline-deps.sh install
fi
torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" -DLLMBENCH_CUDA=ON
fi
cmake --build "$dir" -j"$(nproc)"
ctest --test-dir "$dir" -L gpu --output-on-failure
"$dir/llmbench" info --measure
