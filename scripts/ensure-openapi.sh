#!/usr/bin/env bash
# Installs Ajv into scripts/openapi/node_modules: a test validates every
# read API answer against /v1/openapi.yaml with it (a validator trendfetch
# did not write). Needs node and npm (Debian: nodejs, npm).
set -euo pipefail
cd "$(dirname "$0")/openapi"
if [ -d node_modules/ajv ] && [ -d node_modules/ajv-formats ] && [ -d node_modules/yaml ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "ensure-openapi: npm missing; the read API's answers are validated with Ajv (Node.js)." >&2
  echo "  Debian/Ubuntu: sudo apt-get install -y nodejs npm" >&2
  [ "${CI:-}" = true ] && exit 1
  exit 0 # outside CI the validation test then skips
fi
echo "ensure-openapi: installing Ajv into scripts/openapi/ for the OpenAPI answers test" >&2
npm ci --no-audit --no-fund --silent
