#!/usr/bin/env bash
# Load benchmark of the organization settings endpoints on loopback (`just bench-http`).
#
# For each backend (SQLite file; PostgreSQL database on $SWITCHBOARD_BENCH_PG_URL or the local
# server), starts the release binary on a free port over a fresh database, then runs wrk with
# 64 connections: an authenticated GET /api/organizations/app, and a POST that changes a field,
# first as fast as possible (wrk, closed loop), then at fixed offered rates (oha, open loop,
# corrected for coordinated omission: 15,000 GET/s and 2,000 POST/s by default). Prints
# requests/s, latency percentiles and errors, and the server's idle RSS.
#
# Needs: wrk (Debian package `wrk`), GNU time (/usr/bin/time, package `time`), oha (`cargo install oha --locked`; optional), curl, python3.
# Usage: scripts/bench-http.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"
CONNS="${SWITCHBOARD_BENCH_CONNECTIONS:-64}"
THREADS="${SWITCHBOARD_BENCH_THREADS:-2}"
PG_ADMIN_URL="${SWITCHBOARD_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
command -v oha >/dev/null || echo "oha not found (cargo install oha --locked): skipping the fixed-rate runs" >&2
GET_RATE="${SWITCHBOARD_BENCH_GET_RATE:-15000}"
POST_RATE="${SWITCHBOARD_BENCH_POST_RATE:-2000}"

# Prints requests/s, success rate and latency percentiles of an oha JSON report.
summarize() {
  python3 -c '
import json, sys
r = json.load(sys.stdin)
s, p = r["summary"], r["latencyPercentiles"]
codes = r.get("statusCodeDistribution", {})
errs = r.get("errorDistribution", {})
cut = sum(v for k, v in errs.items() if "deadline" in k)  # in flight when the run ended
errors = sum(v for k, v in codes.items() if not k.startswith("2")) + sum(errs.values()) - cut
print("    rps %.0f  p50 %.2fms  p99 %.2fms  p99.9 %.2fms  non-2xx or errors %d  (cut at the deadline %d)" % (
    s["requestsPerSec"], p["p50"] * 1e3, p["p99"] * 1e3, p["p99.9"] * 1e3, errors, cut))
'
}
cargo build --release -p switchboard >/dev/null
BIN=target/release/switchboard
WORK=$(mktemp -d)
cleanup() { [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null || true; scripts/unmount-under.sh "$WORK"; rm -rf "$WORK"; }
trap cleanup EXIT

cat > "$WORK/post.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"max_budget_per_task": %d.5}', n % 1000 + 1)
  return wrk.format("POST", "/api/organizations/app", {["X-Access-Token"] = KEY, ["Content-Type"] = "application/json"}, body)
end
LUA

run_backend() {
  local name=$1 url=$2
  rm -f "$WORK/out" "$WORK/err"
  SWITCHBOARD_LOG=warn "$BIN" serve --bind 127.0.0.1:0 --database-url "$url" >"$WORK/out" 2>"$WORK/err" &
  SERVER_PID=$!
  for _ in $(seq 100); do grep -q listening "$WORK/out" 2>/dev/null && break; sleep 0.1; done
  local key addr
  key=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["api_key"])' "$WORK/out")
  addr=$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]["address"])' "$WORK/out")
  sleep 1
  local rss
  rss=$(awk '/VmRSS/ {print $2}' /proc/$SERVER_PID/status)
  echo "== $name: idle RSS ${rss} kB"
  echo "-- GET /api/organizations/app, $CONNS connections, ${DURATION}s"
  # The load tool's own CPU beside its numbers (it shares the cores with the server).
  /usr/bin/time -f "   wrk CPU: user %U s + system %S s over %e s (%P of one core)" \
    wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency -H "X-Access-Token: $key" "$addr/api/organizations/app" 2>&1 | grep -E "Requests/sec|Latency|50%|90%|99%|Non-2xx|Socket errors|requests in|wrk CPU"
  echo "   server CPU: $(awk '{printf "user %.1f s + system %.1f s", $14/100, $15/100}' /proc/$SERVER_PID/stat) since start"
  echo "-- POST /api/organizations/app (changes max_budget_per_task), $CONNS connections, ${DURATION}s"
  sed "s/KEY/\"$key\"/" "$WORK/post.lua" > "$WORK/post-$name.lua"
  wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$WORK/post-$name.lua" "$addr" | grep -E "Requests/sec|Latency|50%|90%|99%|Non-2xx|Socket errors|requests in"
  if command -v oha >/dev/null; then
    # Open-loop runs at the target rates (latency corrected for coordinated omission).
    echo "-- GET at ${GET_RATE}/s offered, $CONNS connections, ${DURATION}s (oha)"
    oha --no-tui -z "${DURATION}s" -c "$CONNS" -q "$GET_RATE" --latency-correction \
      -H "X-Access-Token: $key" --output-format json "$addr/api/organizations/app" | summarize
    echo "-- POST at ${POST_RATE}/s offered, $CONNS connections, ${DURATION}s (oha)"
    oha --no-tui -z "${DURATION}s" -c "$CONNS" -q "$POST_RATE" --latency-correction -m POST \
      -H "X-Access-Token: $key" -H "Content-Type: application/json" -d '{"max_budget_per_task": 7.5}' \
      --output-format json "$addr/api/organizations/app" | summarize
  fi
  curl -sf -H "X-Access-Token: $key" "$addr/api/organizations/app" >/dev/null
  echo "-- RSS after load: $(awk '/VmRSS/ {print $2}' /proc/$SERVER_PID/status) kB"
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
}

run_backend sqlite "sqlite://$WORK/bench.sqlite"
DB="sb_bench_$$"
if psql "$PG_ADMIN_URL" -qc "CREATE DATABASE $DB" 2>/dev/null; then
  run_backend postgres "${PG_ADMIN_URL%/*}/$DB"
  psql "$PG_ADMIN_URL" -qc "DROP DATABASE $DB WITH (FORCE)" >/dev/null
else
  echo "== postgres: no server at $PG_ADMIN_URL (set SWITCHBOARD_BENCH_PG_URL)" >&2
fi
