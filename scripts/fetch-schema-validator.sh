#!/usr/bin/env bash
# Installs Ajv (the JSON Schema validator of tests/schema/validate.mjs, which checks results files against
# schemas/results.schema.json) into tests/schema/node_modules from the npm registry, exactly as
# tests/schema/package-lock.json pins it. scripts/test.sh runs it; tests/cli/schema.sh only uses what it installed.
# Idempotent: does nothing when node_modules already matches the lock file.
set -euo pipefail
cd "$(dirname "$0")/../tests/schema"

stamp=node_modules/.llmbench-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f node_modules/ajv/package.json ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "llmbench: error: npm is missing (scripts/deps.sh installs it)" >&2; exit 1; }
echo "llmbench: installing the JSON Schema validator (ajv) into $(pwd)/node_modules" >&2
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$want" > "$stamp"
