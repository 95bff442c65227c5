#!/usr/bin/env bash
# Makes sure redis-server and redis-cli are on PATH for the tests: installs
# Debian's redis-server when missing and running as root, otherwise says
# exactly what to install. Tests start their own redis-server processes on
# free ports; nothing here starts a server.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-redis: installing redis-server (Debian package) for the tests" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq redis-server redis-tools >/dev/null
  # The package may start a system service on :6379; the tests do not use it.
  exit 0
fi
echo "ensure-redis: redis-server is not installed; the Redis tests need it." >&2
echo "  Debian/Ubuntu: sudo apt-get install -y redis-server" >&2
echo "  macOS:         brew install redis" >&2
exit 1
