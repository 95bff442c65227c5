#!/usr/bin/env bash
# Installs DuckDB's Node.js client into scripts/duckdb/node_modules: the
# Parquet export tests read trendfetch's files with it (a reader trendfetch
# did not write). Needs node and npm (Debian: nodejs, npm).
set -euo pipefail
cd "$(dirname "$0")/duckdb"
if [ -d node_modules/@duckdb/node-api ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
npm install --no-audit --no-fund --silent
