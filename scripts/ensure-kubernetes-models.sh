#!/usr/bin/env bash
# Installs kubernetes-models into scripts/kubernetes/node_modules: the test of
# `crontab --format kubernetes` validates the CronJobs with it against the
# Kubernetes API schema, offline (a validator trendfetch did not write).
# Needs node and npm (Debian: nodejs, npm).
set -euo pipefail
cd "$(dirname "$0")/kubernetes"
if [ -d node_modules/kubernetes-models ] && [ -d node_modules/yaml ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "ensure-kubernetes-models: npm missing; the CronJob test validates with kubernetes-models." >&2
  echo "  Debian/Ubuntu: sudo apt-get install -y nodejs npm" >&2
  [ "${CI:-}" = true ] && exit 1
  exit 0 # outside CI the CronJob test then skips
fi
echo "ensure-kubernetes-models: installing kubernetes-models into scripts/kubernetes/ for the CronJob test" >&2
npm ci --no-audit --no-fund --silent
