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
if ! command -v npm >/dev/null 2>&1; then
  echo "ensure-duckdb: npm missing; the Parquet tests read exports with DuckDB's Node.js client." >&2
  echo "  Debian/Ubuntu: sudo apt-get install -y nodejs npm" >&2
  [ "${CI:-}" = true ] && exit 1
  exit 0 # outside CI the DuckDB tests then skip
fi
echo "ensure-duckdb: installing @duckdb/node-api into scripts/duckdb/ for the Parquet tests" >&2
npm install --no-audit --no-fund --silent
