#!/usr/bin/env bash
# Installs the report's charting bundles (vega, vega-lite, vega-embed) and the browser-test driver
# (playwright-core) into web/node_modules from the npm registry, exactly as web/package-lock.json pins them.
# Idempotent: does nothing when node_modules already matches the lock file.
set -euo pipefail
exec "$(dirname "$0")/npm-ci.sh" "$(dirname "$0")/../web" vega-embed/build/vega-embed.min.js "the report's chart bundles (web assets)"
