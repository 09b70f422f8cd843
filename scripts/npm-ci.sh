#!/usr/bin/env bash
# `npm ci` in one of the repository's node projects (web/, tests/serve/, tests/schema/), exactly as its
# package-lock.json pins it; does nothing when node_modules already matches the lock file.
# Usage: scripts/npm-ci.sh DIR FILE WHAT   (FILE: a path under DIR/node_modules that must exist afterwards;
#        WHAT: what is being installed, for the message)
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: scripts/npm-ci.sh DIR FILE WHAT" >&2; exit 2; }
cd "$1"
stamp=node_modules/.llmbench-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "node_modules/$2" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "llmbench: error: npm is missing (scripts/deps.sh installs it)" >&2; exit 1; }
echo "llmbench: installing $3 into $(pwd)/node_modules" >&2
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$want" > "$stamp"
