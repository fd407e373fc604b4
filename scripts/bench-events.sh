#!/usr/bin/env bash
# Event store benchmark (`just bench-events`; results in docs/benchmarks.md, "Event store").
# Not a test: it loads millions of events and takes several minutes. Never run it in CI.
#
# For each backend (SQLite file; a PostgreSQL database created on $SWITCHBOARD_BENCH_PG_URL,
# default postgres://postgres@127.0.0.1:5432/postgres, and dropped afterwards):
#   1. `switchboard bootstrap` + `sandboxes register` over a fresh database;
#   2. the storage bench (crates/storage/benches/events.rs): loads one conversation of
#      1,000,000 events, one of 1,000 and 10,000 of 100 through the storage layer (batches
#      of 1,000), then times the storage calls of each query (p50/p99) and one full scan;
#   3. starts the release server on a free loopback port and measures the same queries end
#      to end with oha (one client, sequential: latency percentiles), then pages through the
#      whole 1,000,000-event conversation over HTTP (limit 100) and times it;
#   4. ingest through the webhook: wrk, 2 threads x 2 connections, batches of 5 and of 100
#      events with fresh ids (a Lua script builds every body), events/s and batches/s,
#      and checks with the count endpoint that every acknowledged event was stored.
#
# Needs: cargo, wrk, oha (~/.cargo/bin), curl, python3, psql (for PostgreSQL).
# Usage: scripts/bench-events.sh [ingest seconds (default 10)]
# Knobs: SB_BENCH_BIG (1000000), SB_BENCH_CONVS (10000), SB_BENCH_BACKENDS ("sqlite postgres").
set -euo pipefail
cd "$(dirname "$0")/.."
INGEST_SECONDS="${1:-10}"
INGEST_CONNS="${SB_BENCH_INGEST_CONNECTIONS:-16}"
PG_ADMIN_URL="${SWITCHBOARD_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
BACKENDS="${SB_BENCH_BACKENDS:-sqlite postgres}"
export PATH="$PATH:$HOME/.cargo/bin"
command -v wrk >/dev/null || { echo "wrk not found: apt-get install wrk" >&2; exit 1; }
command -v oha >/dev/null || { echo "oha not found: cargo install oha --locked" >&2; exit 1; }

T0=$(date +%s)
cargo build --release -p switchboard >/dev/null
cargo bench -p switchboard-storage --bench events --no-run 2>/dev/null
BIN=target/release/switchboard
WORK=$(mktemp -d)
SERVER_PID=
DB=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  [ -n "$DB" ] && psql "$PG_ADMIN_URL" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
  scripts/unmount-under.sh "$WORK"
  rm -rf "$WORK"
}
trap cleanup EXIT

jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# One line per oha JSON report: p50, p99, p99.9, requests/s, non-2xx.
summarize() {
  python3 -c '
import json, sys
r = json.load(sys.stdin)
s, p = r["summary"], r["latencyPercentiles"]
codes = r.get("statusCodeDistribution", {})
bad = sum(v for k, v in codes.items() if not k.startswith("2")) + sum(r.get("errorDistribution", {}).values())
print("%-44s n %5d  p50 %6.2fms  p99 %6.2fms  p99.9 %6.2fms  %6.0f req/s  errors %d" % (
    sys.argv[1], sum(codes.values()), p["p50"] * 1e3, p["p99"] * 1e3, p["p99.9"] * 1e3, s["requestsPerSec"], bad))
' "$1"
}

# wrk script: POSTs batches of BATCH events with fresh ids to one conversation per thread.
cat > "$WORK/ingest.lua" <<'LUA'
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
end
function init(args)
  n = 0
  path = string.format("/api/v1/webhooks/events/%08x00004000a000%012x", TAG, tid)
  headers = { ["X-Session-API-Key"] = KEY, ["Content-Type"] = "application/json" }
end
local function ts(k)
  local s = math.floor(k / 100)
  return string.format("2026-11-22T%02d:%02d:%02d.%06d", math.floor(s / 3600) % 24, math.floor(s / 60) % 60, s % 60, (k % 100) * 10000)
end
request = function()
  local parts = {}
  for j = 1, BATCH do
    n = n + 1
    local id = string.format("%08x-%04x-4000-9000-%012x", TAG, tid, n)
    if n % 2 == 1 then
      parts[j] = '{"id":"' .. id .. '","timestamp":"' .. ts(n) .. '","source":"agent","thought":[{"cache_prompt":false,"type":"text","text":"Running the tests that cover this change."}],"reasoning_content":"","thinking_blocks":[],"action":{"command":"pytest -q tests/test_api.py -k case_' .. n .. '","is_input":false,"reset":false,"kind":"TerminalAction"},"tool_name":"terminal","tool_call_id":"call_' .. n .. '","tool_call":{"id":"call_' .. n .. '","name":"terminal","arguments":"{\\"command\\":\\"pytest -q tests/test_api.py -k case_' .. n .. '\\",\\"is_input\\":false}","origin":"completion"},"llm_response_id":"resp_' .. n .. '","security_risk":"LOW","summary":"run the tests","kind":"ActionEvent"}'
    else
      parts[j] = '{"id":"' .. id .. '","timestamp":"' .. ts(n) .. '","source":"environment","tool_name":"terminal","tool_call_id":"call_' .. (n - 1) .. '","observation":{"content":[{"cache_prompt":false,"type":"text","text":"..F.\\nFAILED tests/test_api.py::case_' .. n .. ' - AssertionError: 2 != 3\\n1 failed, 3 passed in 0.02s\\n"}],"is_error":false,"command":"pytest -q","exit_code":1,"timeout":false,"kind":"TerminalObservation"},"action_id":"' .. id .. '","kind":"ObservationEvent"}'
    end
  end
  return wrk.format("POST", path, headers, "[" .. table.concat(parts, ",") .. "]")
end
LUA

# Pages through a whole conversation over HTTP (limit 100); prints time, pages, page p50/p99.
cat > "$WORK/scan.py" <<'PY'
import http.client, json, sys, time, urllib.parse
addr, key, conv, expected = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
u = urllib.parse.urlsplit(addr)
c = http.client.HTTPConnection(u.hostname, u.port)
h = {"X-Access-Token": key}
page_id, total, ids, lat = None, 0, set(), []
start = time.perf_counter()
while True:
    q = "limit=100" + ("&page_id=" + page_id if page_id else "")
    t = time.perf_counter()
    c.request("GET", f"/api/v1/conversation/{conv}/events/search?{q}", headers=h)
    r = c.getresponse()
    body = r.read()
    lat.append(time.perf_counter() - t)
    assert r.status == 200, (r.status, body[:200])
    page = json.loads(body)
    total += len(page["items"])
    ids.update(e["id"] for e in page["items"])
    page_id = page["next_page_id"]
    if not page_id:
        break
took = time.perf_counter() - start
lat.sort()
assert total == expected == len(ids), (total, expected, len(ids))
print("%-44s %d events, %d pages, %.1f s (%.0f events/s); page p50 %.2fms p99 %.2fms (client parses every page)" % (
    "full scan over HTTP (limit 100)", total, len(lat), took, total / took,
    lat[len(lat) // 2] * 1e3, lat[int(len(lat) * 0.99)] * 1e3))
PY

run_backend() {
  local name=$1 url=$2
  echo
  echo "===================== $name ====================="
  local boot org user sb sess key
  boot=$(SWITCHBOARD_DATABASE_URL="$url" "$BIN" bootstrap --org-name bench --email bench@localhost)
  org=$(echo "$boot" | python3 -c 'import json,sys; print(json.load(sys.stdin)["org_id"])')
  user=$(echo "$boot" | python3 -c 'import json,sys; print(json.load(sys.stdin)["user_id"])')
  key=$(echo "$boot" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
  sb=$(SWITCHBOARD_DATABASE_URL="$url" "$BIN" sandboxes register --org-id "$org" --user-id "$user")
  sess=$(echo "$sb" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session_api_key"])')
  echo "-- storage layer (crates/storage/benches/events.rs)"
  SB_BENCH_DB_URL="$url" SB_BENCH_ORG="$org" SB_BENCH_USER="$user" \
    SB_BENCH_SANDBOX=$(echo "$sb" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandbox_id"])') \
    SB_BENCH_OUT="$WORK/info.json" cargo bench -q -p switchboard-storage --bench events 2>&1 \
    | grep -vE '^ *(Finished|Running|Compiling|Blocking)' 
  [ "$name" = sqlite ] && echo "database file: $(du -sh "${url#sqlite://}" | cut -f1) (+ WAL $(du -sh "${url#sqlite://}-wal" 2>/dev/null | cut -f1))"

  rm -f "$WORK/out" "$WORK/err"
  # Event quotas lifted (0: no limit, still judged on every append): the ingest phase puts
  # more than the default 100,000 events into one conversation.
  SWITCHBOARD_LOG=warn "$BIN" serve --bind 127.0.0.1:0 --database-url "$url" \
    --max-events-per-conversation 0 --max-event-bytes-per-conversation 0 >"$WORK/out" 2>"$WORK/err" &
  SERVER_PID=$!
  for _ in $(seq 100); do grep -q listening "$WORK/out" 2>/dev/null && break; sleep 0.1; done
  local addr
  addr=$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]["address"])' "$WORK/out")
  local big small n1 deep sdeep gte lt ids
  big=$(jget "$WORK/info.json" big); small=$(jget "$WORK/info.json" small)
  n1=$(jget "$WORK/info.json" big_events)
  deep=$(jget "$WORK/info.json" deep_page_id); sdeep=$(jget "$WORK/info.json" small_deep_page_id)
  gte=$(jget "$WORK/info.json" window_gte); lt=$(jget "$WORK/info.json" window_lt)
  ids=$(python3 -c 'import json,sys; print("&".join("id=" + i for i in json.load(open(sys.argv[1]))["batch_ids"]))' "$WORK/info.json")
  local B="$addr/api/v1/conversation/$big/events" S="$addr/api/v1/conversation/$small/events"
  echo
  echo "-- HTTP on loopback (oha, 1 client, sequential; conversation of $n1 events unless noted)"
  q() { # label, requests, url
    oha --no-tui -n "$2" -c 1 -H "X-Access-Token: $key" --output-format json "$3" | summarize "$1"
  }
  q "search: first page" 3000 "$B/search?limit=100"
  q "search: page after cursor ~500k in" 3000 "$B/search?limit=100&page_id=$deep"
  q "search: kind__eq=MessageEvent (1%)" 3000 "$B/search?limit=100&kind__eq=MessageEvent"
  q "search: TIMESTAMP_DESC first page" 3000 "$B/search?limit=100&sort_order=TIMESTAMP_DESC"
  q "search: time window (~1000 events)" 3000 "$B/search?limit=100&timestamp__gte=$gte&timestamp__lt=$lt"
  q "count: whole conversation" 100 "$B/count"
  q "count: kind__eq=MessageEvent" 3000 "$B/count?kind__eq=MessageEvent"
  q "count: time window" 3000 "$B/count?timestamp__gte=$gte&timestamp__lt=$lt"
  q "get: 100 ids" 3000 "$B?$ids"
  q "1k conversation: search first page" 3000 "$S/search?limit=100"
  q "1k conversation: page after cursor ~500 in" 3000 "$S/search?limit=100&page_id=$sdeep"
  python3 "$WORK/scan.py" "$addr" "$key" "$big" "$n1"

  echo
  echo "-- ingest through POST /api/v1/webhooks/events/{id} (wrk, 2 threads, ${INGEST_CONNS} connections, fresh ids, ${INGEST_SECONDS}s)"
  local batch tag out reqs rps stored expect
  for batch in 5 100; do
    tag=$((0xa0 + batch))
    sed -e "s/TAG/$tag/g" -e "s/BATCH/$batch/" -e "s/KEY/\"$sess\"/" "$WORK/ingest.lua" > "$WORK/ingest-$batch.lua"
    out=$(wrk -t2 -c"${INGEST_CONNS}" -d"${INGEST_SECONDS}s" --latency -s "$WORK/ingest-$batch.lua" "$addr")
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    stored=0
    for t in 1 2; do
      stored=$((stored + $(curl -sf -H "X-Access-Token: $key" "$addr/api/v1/conversation/$(printf '%08x-0000-4000-a000-%012x' "$tag" "$t")/events/count")))
    done
    expect=$((reqs * batch))
    python3 -c '
import sys
b, rps, stored, expect = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print("batches of %3d: %7.0f batches/s  %7.0f events/s  (stored %d, acknowledged %d%s)" % (
    b, rps, rps * b, stored, expect, "" if stored >= expect else "  MISSING EVENTS"))' "$batch" "$rps" "$stored" "$expect"
    echo "$out" | grep -E "Latency |50%|99%|Non-2xx|Socket errors" | sed 's/^/    /'
  done
  echo "-- server RSS after the run: $(awk '/VmRSS/ {print $2}' /proc/$SERVER_PID/status) kB"
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
}

for backend in $BACKENDS; do
  case $backend in
    sqlite) run_backend sqlite "sqlite://$WORK/bench.sqlite" ;;
    postgres)
      DB="sb_bench_events_$$"
      if psql "$PG_ADMIN_URL" -qc "CREATE DATABASE $DB" 2>/dev/null; then
        run_backend postgres "${PG_ADMIN_URL%/*}/$DB"
        psql "$PG_ADMIN_URL" -qc "DROP DATABASE $DB WITH (FORCE)" >/dev/null
      else
        echo "== postgres: no server at $PG_ADMIN_URL (set SWITCHBOARD_BENCH_PG_URL)" >&2
      fi
      DB= ;;
  esac
done
echo
echo "total time: $(( $(date +%s) - T0 )) s"
