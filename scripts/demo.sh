#!/usr/bin/env bash
# Installs what is missing, builds (Release) and runs the main job on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build
./build/llmbench info
