#!/usr/bin/env bash
# Installs the official OpenAI Node client into tests/serve/node_modules from the npm registry, exactly as
# tests/serve/package-lock.json pins it (tests/cli/serve_openai.sh runs it against `llmbench serve`).
# Idempotent: does nothing when node_modules already matches the lock file.
set -euo pipefail
exec "$(dirname "$0")/npm-ci.sh" "$(dirname "$0")/../tests/serve" openai/package.json "the OpenAI client"
