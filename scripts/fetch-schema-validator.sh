#!/usr/bin/env bash
# Installs Ajv (the JSON Schema validator of tests/schema/validate.mjs, which checks results files against
# schemas/results.schema.json) into tests/schema/node_modules from the npm registry, exactly as
# tests/schema/package-lock.json pins it. scripts/test.sh runs it; tests/cli/schema.sh only uses what it installed.
# Idempotent: does nothing when node_modules already matches the lock file.
set -euo pipefail
exec "$(dirname "$0")/npm-ci.sh" "$(dirname "$0")/../tests/schema" ajv/package.json "the JSON Schema validator (ajv)"
