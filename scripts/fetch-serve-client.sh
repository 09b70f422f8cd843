#!/usr/bin/env bash
# Installs the official OpenAI Node client into tests/serve/node_modules from the npm registry, exactly as
# tests/serve/package-lock.json pins it (tests/cli/serve_openai.sh runs it against `llmbench serve`).
# Idempotent: does nothing when node_modules already matches the lock file.
set -euo pipefail
cd "$(dirname "$0")/../tests/serve"

stamp=node_modules/.llmbench-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f node_modules/openai/package.json ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "llmbench: error: npm is missing (scripts/deps.sh installs it)" >&2; exit 1; }
echo "llmbench: installing the OpenAI client into $(pwd)/node_modules" >&2
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$want" > "$stamp"
