#!/usr/bin/env bash
# What the access log costs per request, on loopback: the same binary with the access log on
# (the default) and off (SWITCHBOARD_LOG=info,switchboard::access=off), stderr to a file, one
# SQLite database; wrk with 32 connections on GET /health (no key) and GET /api/v1/users/me
# (an API key: the caller is recorded), each run twice, alternating on and off.
#
# Needs: wrk (Debian package `wrk`), python3.
# Usage: scripts/bench-access-log.sh [seconds]   (SWITCHBOARD_BIN: the binary, default the
# release build)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"
BIN="${SWITCHBOARD_BIN:-target/release/switchboard}"
[ -x "$BIN" ] || cargo build --release -p switchboard >/dev/null
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
WORK=$(mktemp -d)
cleanup() { [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

run() {
  local name=$1 filter=$2
  rm -f "$WORK/out" "$WORK/err"
  SWITCHBOARD_LOG="$filter" "$BIN" serve --bind 127.0.0.1:0 --workers 2 \
    --database-url "sqlite://$WORK/bench.sqlite" --data-dir "$WORK/data" >"$WORK/out" 2>"$WORK/err" &
  SERVER_PID=$!
  for _ in $(seq 200); do grep -q listening "$WORK/out" 2>/dev/null && break; sleep 0.1; done
  local key addr
  key=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if "api_key" in d: print(d["api_key"]); break' "$WORK/out" || true)
  [ -n "$key" ] || key=$(cat "$WORK/key")
  echo "$key" > "$WORK/key"
  addr=$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]["address"])' "$WORK/out")
  for path in /health /api/v1/users/me; do
    local rps
    rps=$(wrk -t2 -c32 -d"${DURATION}s" -H "X-Access-Token: $key" "$addr$path" | awk '/Requests\/sec/ {print $2}')
    echo "$name $path $rps req/s"
  done
  echo "$name access lines written: $(grep -c 'switchboard::access' "$WORK/err" || true)"
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
}

for round in 1 2; do
  run "on " info
  run "off" info,switchboard::access=off
done
