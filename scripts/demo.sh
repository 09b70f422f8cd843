#!/usr/bin/env bash
# Installs what is missing, fetches the report's chart bundles, builds (Release) and runs the main job on the
# embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/fetch-web-assets.sh  # the report's chart bundles, compiled into the binary by the build
scripts/build.sh build
./build/llmbench info
echo
# The main job on the embedded default: the tiny model, small settings that finish in seconds on 2 CPU cores.
./build/llmbench run --model tiny --device auto --batch 1,4 --prompt-len 64 --max-new-tokens 16 \
  --warmup 2 --runs 10 --trim 1 --prompt "llmbench measures how fast a language model answers." \
  --output build/demo-results.json
