#!/usr/bin/env bash
# Makes sure redis-server, redis-cli and redis-sentinel are on PATH for the
# tests: installs the Debian packages when one is missing and running as
# root, otherwise says exactly what to install. Tests start their own
# redis-server and redis-sentinel processes on free ports (the Sentinel
# failover tests need redis-sentinel; under CI=true a missing binary fails
# them); nothing here starts a server.
set -euo pipefail
missing=()
for bin in redis-server redis-cli redis-sentinel; do
  command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
done
if [ ${#missing[@]} = 0 ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-redis: installing ${missing[*]} (Debian packages redis-server redis-tools redis-sentinel) for the tests" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq redis-server redis-tools redis-sentinel >/dev/null
  # The packages may start system services on :6379 and :26379; the tests
  # do not use them.
  for bin in redis-server redis-cli redis-sentinel; do
    command -v "$bin" >/dev/null 2>&1 || { echo "ensure-redis: $bin still missing after apt-get install" >&2; exit 1; }
  done
  exit 0
fi
echo "ensure-redis: missing ${missing[*]}; the Redis tests need redis-server, redis-cli and redis-sentinel." >&2
echo "  Debian/Ubuntu: sudo apt-get install -y redis-server redis-tools redis-sentinel" >&2
echo "  macOS:         brew install redis   (includes redis-sentinel)" >&2
exit 1
