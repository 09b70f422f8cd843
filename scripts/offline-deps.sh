#!/usr/bin/env bash
# Packages an offline host lacks (pcre2, utf8proc), brought as .debs.
#   scripts/offline-deps.sh fetch     on a machine with apt: download the .debs into .deps/
#   scripts/offline-deps.sh install   on the offline host: unpack them into .deps/prefix (never into /)
# CMake picks up .deps/prefix/usr automatically (LLMBENCH_DEPS_PREFIX).
set -euo pipefail
cd "$(dirname "$0")/.."
debs=(libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libutf8proc-dev libutf8proc2)
case "${1:-}" in
  fetch)
    mkdir -p .deps
    (cd .deps && apt-get download "${debs[@]}")
    ls -l .deps/*.deb
    ;;
  install)
    prefix="$PWD/.deps/prefix"
    mkdir -p "$prefix"
    for f in .deps/*.deb; do dpkg -x "$f" "$prefix"; done
    # The .pc files say prefix=/usr; point them at the unpacked tree.
    find "$prefix" -name '*.pc' -exec sed -i "s|^prefix=.*|prefix=$prefix/usr|" {} +
    echo "llmbench: offline packages unpacked into $prefix"
    ;;
  *)
    echo "usage: scripts/offline-deps.sh fetch|install" >&2
    exit 2
    ;;
esac
