#!/usr/bin/env bash
# Installs the report's charting bundles (vega, vega-lite, vega-embed) and the browser-test driver
# (playwright-core) into web/node_modules from the npm registry, exactly as web/package-lock.json pins them.
# Idempotent: does nothing when node_modules already matches the lock file.
set -euo pipefail
cd "$(dirname "$0")/../web"

stamp=node_modules/.llmbench-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f node_modules/vega-embed/build/vega-embed.min.js ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "llmbench: error: npm is missing (scripts/deps.sh installs it)" >&2; exit 1; }
echo "llmbench: installing web assets into $(pwd)/node_modules" >&2
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$want" > "$stamp"
