#!/usr/bin/env bash
# Limit and hostile-input probe of the server from outside (issue 7 §1-§4; issue 13 "limits").
#
# Builds the release binary and runs scripts/probe/limits.py (Python standard library) on a
# SQLite file and on a fresh PostgreSQL database (created on the admin URL, dropped afterwards):
#   - RSS of the server (VmRSS, MiB) at idle, at its peak during, once answered, and 2 s / 10 s
#     after 64 and 200 concurrent unauthenticated POSTs of 8 MiB to the webhook
#     /api/v1/webhooks/events/<uuid>, and of 1 MiB to /api/organizations/app (no key; a fresh
#     server per burst);
#   - how long a body (and, for comparison, headers) trickled at 1 byte/s with no key is kept
#     open (capped by --slow-cap seconds);
#   - the status of each NUL (U+0000) input of issue 7 §1 on each backend;
#   - whether a 405 carries `Allow`, and the media type of `…/events/count` declared against served.
# Prints a markdown table (backends as columns) on stdout; progress goes to stderr. Every server
# and database it starts is stopped or dropped on exit. About 3 minutes on 2 cores; a 200-burst
# moves 1.6 GiB over loopback and can take the server near 2 GiB of RSS.
#
# Usage: scripts/probe-limits.sh [limits.py options: --backends sqlite,postgres --bursts 64,200
#                                  --slow-cap 120 --skip-rss --skip-slow --pg-url URL]
# Needs: cargo, python3 (3.10+), psql for PostgreSQL (skipped with a message when no server answers).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p switchboard --locked >/dev/null
exec python3 scripts/probe/limits.py --bin target/release/switchboard \
  --pg-url "${SWITCHBOARD_PROBE_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}" "$@"
