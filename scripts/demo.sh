#!/usr/bin/env bash
# `make demo`: the main job end to end on this machine, no Redis, no API key,
# no internet once built. Starts the bundled YouTube Data API emulator on 127.0.0.1,
# runs `trendfetch run --region US` against it, then `search` and
# `quota status`. Serves the recorded 2018-11-01 US chart from ../shared/data
# when present, else the emulator's small built-in sample. Data goes to .demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=.demo
mkdir -p "$demo"
csv=../shared/data/api_snapshot_2018-11-01/18.01.11_US_videos.csv
emu_args=(--addr 127.0.0.1:0 --url-file "$demo/url")
query="official music video"
if [ -f "$csv" ]; then
  emu_args+=(--csv "$csv")
  source="the recorded 2018-11-01 US chart ($csv)"
  query="wake up in the sky"
else
  source="the emulator's built-in sample (../shared/data not found)"
  query="sample"
fi
rm -f "$demo/url"
bin/ytemulator "${emu_args[@]}" 2>"$demo/emulator.log" &
emu=$!
trap 'kill $emu 2>/dev/null; wait $emu 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$demo/url" ] && break; sleep 0.05; done
[ -s "$demo/url" ] || { echo "demo: the emulator did not start; see $demo/emulator.log" >&2; exit 1; }
url=$(cat "$demo/url")

export TRENDFETCH_DATABASE="$demo/trendfetch.db"
export TRENDFETCH_LOG_FORMAT=console
export YOUTUBE_API_KEY=demo-key   # the emulator accepts any key
tf() { bin/trendfetch --api-endpoint "$url" "$@"; }

echo "==> emulator at $url serving $source"
echo "==> trendfetch run --region US"
set +e
tf run --region US
rc=$?
set -e
echo "    exit code $rc (0 = success, 75 = stopped on quota; see README)"
echo
echo "==> trendfetch search \"$query\" --limit 5   (local FTS5, costs no quota)"
tf search "$query" --limit 5
echo
echo "==> trendfetch runs --limit 3"
tf runs --limit 3
echo
echo "==> trendfetch quota status"
tf quota status
echo
echo "Data is in $demo/ (trendfetch.db, quota.db). Try: bin/trendfetch --database $demo/trendfetch.db search 'your words'"
