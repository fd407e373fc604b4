#!/usr/bin/env bash
# Live delivery benchmark (`just bench-live`; results in docs/benchmarks.md, "Live delivery").
# Not a test; a few minutes. Never run it in CI.
#
# Starts `switchboard serve` (SWITCHBOARD_BIN, default target/release/switchboard) on SQLite,
# then with the benchmark client (crates/api/examples/live_bench.rs):
#   1. 10,000 idle sockets on the fresh server: its RSS before and with them, and its CPU
#      while they sit idle for 30 s;
#   2. webhook → frame latency with 1, 100 and 1,000 subscribers on one conversation;
#   3. a 100,000-event history replayed over one socket.
# Then the same 10,000 idle sockets against the stack alone (bins/switchboard/examples/
# ws_floor.rs: actix-web and actix-ws, nothing of Switchboard's), for what the stack costs.
# Then two servers on one PostgreSQL database (SWITCHBOARD_BENCH_PG_URL, default
# postgres://postgres@127.0.0.1:5432/postgres; a database is created and dropped): webhooks
# into A, subscribers on B, with 1, 100 and 1,000 subscribers.
# Knobs: SB_LIVE_IDLE (10000), SB_LIVE_REPLAY (100000), SB_LIVE_ROUNDS (200), SB_LIVE_PROFILE
# (release; dev uses target/debug), SB_LIVE_SKIP_BUILD (set: use the client already built).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${SWITCHBOARD_BIN:-target/release/switchboard}"
PROFILE="${SB_LIVE_PROFILE:-release}"
PG_ADMIN_URL="${SWITCHBOARD_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
IDLE="${SB_LIVE_IDLE:-10000}"
REPLAY="${SB_LIVE_REPLAY:-100000}"
ROUNDS="${SB_LIVE_ROUNDS:-200}"
CLIENT="target/$PROFILE/examples/live_bench"
[ "$PROFILE" = dev ] && CLIENT="target/debug/examples/live_bench"
FLOOR="target/$PROFILE/examples/ws_floor"
[ "$PROFILE" = dev ] && FLOOR="target/debug/examples/ws_floor"
[ -n "${SB_LIVE_SKIP_BUILD:-}" ] || {
  cargo build -q --profile "$PROFILE" -p switchboard-api --example live_bench
  cargo build -q --profile "$PROFILE" -p switchboard --example ws_floor
}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
WORK=$(mktemp -d /tmp/bench-live.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; scripts/unmount-under.sh "$WORK"; rm -rf "$WORK"; }
trap cleanup EXIT

# serve NAME URL: starts a server, sets ADDR and PID
serve() {
  SWITCHBOARD_LOG=warn "$BIN" --data-dir "$WORK/data-$1" serve --bind 127.0.0.1:0 --database-url "$2" --max-subscribers 50000 --max-sockets-per-member 50000 \
    >"$WORK/$1.out" 2>"$WORK/$1.err" &
  PID=$!; PIDS+=("$PID")
  for _ in $(seq 200); do grep -q listening "$WORK/$1.out" 2>/dev/null && break; sleep 0.1; done
  ADDR=$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]["address"])' "$WORK/$1.out")
}
# keys URL: sets KEY and SESSION (bootstrap + a registered sandbox)
keys() {
  local boot org user
  boot=$(SWITCHBOARD_DATABASE_URL="$1" "$BIN" bootstrap --org-name bench --email bench@localhost)
  org=$(echo "$boot" | python3 -c 'import json,sys; print(json.load(sys.stdin)["org_id"])')
  user=$(echo "$boot" | python3 -c 'import json,sys; print(json.load(sys.stdin)["user_id"])')
  KEY=$(echo "$boot" | python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')
  SESSION=$(SWITCHBOARD_DATABASE_URL="$1" "$BIN" sandboxes register --org-id "$org" --user-id "$user" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["session_api_key"])')
}
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# idle PID ADDR: holds $IDLE idle sockets on the server at ADDR (process PID), prints its RSS
# before and with them and its CPU while they sit idle for 30 s
idle() {
  local before c t0 t1
  before=$(rss_kib "$1")
  MODE=idle N=$IDLE HOLD=40 PUB=$2 KEY=$KEY SESSION=$SESSION "$CLIENT" >/dev/null &
  c=$!
  for _ in $(seq 600); do
    [ "$(ls /proc/"$1"/fd | wc -l)" -ge "$IDLE" ] && break; sleep 0.1
  done
  sleep 5
  t0=$(cpu_ticks "$1"); sleep 30; t1=$(cpu_ticks "$1")
  echo "{\"idle_sockets\":$IDLE,\"rss_before_kib\":$before,\"rss_kib\":$(rss_kib "$1"),\"cpu_percent_idle\":$(python3 -c "print(round(($t1-$t0)/$(getconf CLK_TCK)/30*100,2))")}"
  wait "$c" || true
}

echo "== SQLite"
DB="sqlite://$WORK/live.sqlite"
keys "$DB"
serve sqlite "$DB"
SQ_ADDR=$ADDR; SQ_PID=$PID
echo "-- $IDLE idle sockets on the fresh server (30 s)"
idle "$SQ_PID" "$SQ_ADDR"
for n in 1 100 1000; do
  MODE=latency N=$n ROUNDS=$ROUNDS PUB=$SQ_ADDR KEY=$KEY SESSION=$SESSION "$CLIENT"
done
echo "-- replay of $REPLAY events"
MODE=replay N=$REPLAY PUB=$SQ_ADDR KEY=$KEY SESSION=$SESSION "$CLIENT"
kill "$SQ_PID"

echo "== the stack alone (actix-web + actix-ws, examples/ws_floor.rs)"
"$FLOOR" >"$WORK/floor.out" &
FLOOR_PID=$!; PIDS+=("$FLOOR_PID")
for _ in $(seq 100); do [ -s "$WORK/floor.out" ] && break; sleep 0.1; done
FLOOR_ADDR=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["address"])' "$WORK/floor.out")
echo "-- $IDLE idle sockets (30 s)"
idle "$FLOOR_PID" "$FLOOR_ADDR"
kill "$FLOOR_PID"

echo "== PostgreSQL, two replicas (webhooks into A, subscribers on B)"
PGDB="bench_live_$$"
psql -q "$PG_ADMIN_URL" -c "CREATE DATABASE $PGDB"
trap 'cleanup; psql -q "$PG_ADMIN_URL" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)"' EXIT
PGURL="${PG_ADMIN_URL%/*}/$PGDB"
keys "$PGURL"
serve pga "$PGURL"; A=$ADDR
serve pgb "$PGURL"; B=$ADDR
for n in 1 100 1000; do
  MODE=latency N=$n ROUNDS=$ROUNDS PUB=$A SUB=$B KEY=$KEY SESSION=$SESSION "$CLIENT"
done
