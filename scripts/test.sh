#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test with ctest.
# Usage: scripts/test.sh [--sanitize]   (--sanitize: ASan + UBSan build in build-asan/)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/fetch-tokenizers.sh
scripts/fetch-web-assets.sh

dir=build
args=()
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  args=(-DLLMBENCH_SANITIZE=ON)
fi
scripts/build.sh "$dir" "${args[@]}"
ctest --test-dir "$dir" --output-on-failure --timeout 1200
