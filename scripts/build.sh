#!/usr/bin/env bash
# Configures (once) and builds llmbench in Release. Usage: scripts/build.sh [build-dir] [cmake args…]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
fi
cmake --build "$dir" -j"$(nproc)"
