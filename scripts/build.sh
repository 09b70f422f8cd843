#!/usr/bin/env bash
# Configures (once) and builds llmbench in Release. Usage: scripts/build.sh [build-dir] [cmake args…]
# The cmake args apply when build-dir is configured, i.e. on its first build; on a configured one they are
# refused (change it with `cmake build-dir -D…`, or give a new build-dir).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h | --help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "scripts/build.sh: the first argument is the build directory, got '$1' (usage: scripts/build.sh [build-dir] [cmake args…])" >&2; exit 2 ;;
esac
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
elif [ $# -gt 0 ]; then
  echo "scripts/build.sh: $dir is configured already; cmake args ($*) apply only to a new build directory (or run: cmake $dir $*)" >&2
  exit 2
fi
cmake --build "$dir" -j"$(nproc)"
