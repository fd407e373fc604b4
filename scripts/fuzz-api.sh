#!/usr/bin/env bash
# Generated-input testing of the HTTP API with Schemathesis (`just fuzz-api`; issue 7, issue 13).
#
# Builds the release binary; then, for each backend (a SQLite file in a temporary folder; a fresh
# PostgreSQL database created on $SWITCHBOARD_FUZZ_PG_URL and dropped afterwards):
#   1. starts `switchboard serve --bind 127.0.0.1:0` over the empty database and reads its stdout:
#      the `bootstrapped` JSON line gives the owner's API key, org id and user id, the `listening`
#      line the address;
#   2. `switchboard sandboxes register` gives a sandbox session key (the webhooks' auth);
#   3. seeds one conversation with one event (through the webhooks) and one spare API key, so that
#      some generated requests hit existing resources (Schemathesis dictionaries bind the
#      `conversation_id` and `id` path parameters to them part of the time);
#   4. runs Schemathesis against `<address>/openapi.json` with `--checks all`, every phase
#      (examples, coverage, fuzzing, stateful; stateful links are inferred by Schemathesis, the
#      document declares none), authenticated per security scheme of the document through a
#      generated `schemathesis.toml`: `X-Access-Token` (scheme APIKeyHeader) for the API-key
#      routes, `X-Session-API-Key` (scheme SessionKeyHeader) for the webhooks;
#   5. stops the server and checks that the owner's key still worked at the end.
# One failure filter applies (scripts/probe/st_hooks.py, self-tested on the served document
# first): a "schema-valid request rejected" (ST202) counts only when the request as sent was
# valid by the document; Schemathesis's stateful links can copy a `null` into a required
# parameter and still call the request valid. Each failure set aside is listed in the report
# folder's dropped.ndjson and counted in the summary.
# Reports per backend (JUnit XML, VCR cassette, NDJSON events, Schemathesis's console output, the
# server's stderr, and failures.txt / failures.md: every distinct failure classified, with a curl
# reproduction, by scripts/probe/fuzz_summary.py) are kept in a folder printed at the end.
# Exits 1 when Schemathesis found a failure on any backend, 2 on a setup error.
#
# Usage: scripts/fuzz-api.sh [quick|long|prepare]
#   quick  CI-sized: a bounded number of examples per operation and a time budget per backend
#          (about 2 minutes each on 2 cores).
#   long   what `just fuzz-api` runs: more examples and a longer budget.
#   prepare  only installs Schemathesis into its venv (CI does it in the background).
# Knobs (environment):
#   SWITCHBOARD_FUZZ_MAX_EXAMPLES  examples per operation and phase [quick 200, long 1000]
#   SWITCHBOARD_FUZZ_MAX_TIME      seconds of Schemathesis per backend [quick 100, long 900];
#                                  fuzzing and stateful testing repeat until it is spent
#   SWITCHBOARD_FUZZ_BACKENDS      comma-separated: sqlite,postgres [both]
#   SWITCHBOARD_FUZZ_PG_URL        admin URL of the PostgreSQL server
#                                  [postgres://postgres@127.0.0.1:5432/postgres]
#   SWITCHBOARD_FUZZ_REPORT_DIR    where reports go [a new folder under ${TMPDIR:-/tmp}]
#   SWITCHBOARD_FUZZ_SEED          Schemathesis seed (reproduce a run) [random]
#   SWITCHBOARD_FUZZ_WORKERS       Schemathesis workers [1]
#   SCHEMATHESIS_VENV              venv with Schemathesis [${TMPDIR:-/tmp}/schemathesis-venv]
#   SCHEMATHESIS_VERSION           installed from PyPI into the venv when missing [4.32.5]
#   SWITCHBOARD_FUZZ_PROFILE       cargo profile of the server binary: release or debug [release]
#   SWITCHBOARD_FUZZ_BIN           a switchboard binary to test instead of building one
# Sandboxes: the server runs the stand-in agent server (crates/testkit/fixtures) as the command of
# its built-in spec, so generated POST /api/v1/sandboxes start a small Python stdlib process,
# never a real agent server; every sandbox still alive at the end is stopped with the server.
# Needs: cargo, curl, python3 >= 3.11 (or a pyenv Python 3.12+), psql for PostgreSQL (the
# backend is skipped with a message when no server answers).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE="${1:-quick}"
case "$MODE" in
  quick) DEF_EXAMPLES=200; DEF_TIME=100 ;;
  long) DEF_EXAMPLES=1000; DEF_TIME=900 ;;
  prepare) DEF_EXAMPLES=0; DEF_TIME=0 ;;
  *) echo "usage: $0 [quick|long|prepare]" >&2; exit 2 ;;
esac
MAX_EXAMPLES="${SWITCHBOARD_FUZZ_MAX_EXAMPLES:-$DEF_EXAMPLES}"
MAX_TIME="${SWITCHBOARD_FUZZ_MAX_TIME:-$DEF_TIME}"
BACKENDS="${SWITCHBOARD_FUZZ_BACKENDS:-sqlite,postgres}"
PG_ADMIN_URL="${SWITCHBOARD_FUZZ_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
WORKERS="${SWITCHBOARD_FUZZ_WORKERS:-1}"
VENV="${SCHEMATHESIS_VENV:-${TMPDIR:-/tmp}/schemathesis-venv}"
ST_VERSION="${SCHEMATHESIS_VERSION:-4.32.5}"
REPORT_DIR="${SWITCHBOARD_FUZZ_REPORT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/switchboard-fuzz-XXXXXX")}"
mkdir -p "$REPORT_DIR"
REPORT_DIR=$(cd "$REPORT_DIR" && pwd)

# ------------------------------------------------------------------ Schemathesis in a venv
# Python >= 3.11 (Schemathesis 4's floor): the active python3, else one installed by pyenv.
find_python() {
  local p cands=()
  for c in python3 python3.14 python3.13 python3.12 python3.11; do
    p=$(command -v "$c" 2>/dev/null) && cands+=("$p")
  done
  for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[1-9]*/bin/python3; do
    [ -x "$p" ] && cands+=("$p")
  done
  for p in "${cands[@]}"; do
    if "$p" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$p"; return 0
    fi
  done
  return 1
}
if ! "$VENV/bin/st" --version 2>/dev/null | grep -q "$ST_VERSION"; then
  PY=$(find_python) || { echo "no Python >= 3.11 found for Schemathesis" >&2; exit 2; }
  echo "== installing schemathesis $ST_VERSION into $VENV (with $PY)"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q "schemathesis==$ST_VERSION"
fi
ST="$VENV/bin/st"
if [ "$MODE" = prepare ]; then
  echo "== $("$ST" --version) ready in $VENV"
  exit 0
fi
echo "== $("$ST" --version); mode $MODE: $MAX_EXAMPLES examples per operation, ${MAX_TIME}s per backend"

# ------------------------------------------------------------------ build
PROFILE="${SWITCHBOARD_FUZZ_PROFILE:-release}"
if [ -n "${SWITCHBOARD_FUZZ_BIN:-}" ]; then
  BIN=$(realpath "$SWITCHBOARD_FUZZ_BIN")
else case "$PROFILE" in
  release) cargo build --release -p switchboard --locked >/dev/null; BIN="$PWD/target/release/switchboard" ;;
  debug) cargo build -p switchboard --locked >/dev/null; BIN="$PWD/target/debug/switchboard" ;;
  *) echo "SWITCHBOARD_FUZZ_PROFILE: release or debug" >&2; exit 2 ;;
esac; fi
STANDIN="$PWD/crates/testkit/fixtures/standin_agent_server.py"
HOOKS="$PWD/scripts/probe/st_hooks.py"

WORK=$(mktemp -d)
# Two specs running the stand-in (two, so that the specs search has a second page and a cursor),
# the interpreter named by its real path (a confined sandbox sees the installation of its
# program, not a version manager's shims on PATH).
SANDBOX_PY=$(python3 -c 'import sys; print(sys.executable)')
cat >"$WORK/specs.json" <<JSON
[
  {"id": "standin", "command": ["$SANDBOX_PY", "$STANDIN"]},
  {"id": "standin-2", "command": ["$SANDBOX_PY", "$STANDIN"]}
]
JSON
# The automation service's key (serve --service-api-key-file), so its routes answer 401, not 503.
head -c 24 /dev/urandom | base64 >"$WORK/service.key"
chmod 600 "$WORK/service.key"
# Two global skills (markdown with front matter, OpenHands' rule), so that the skill search has
# a second page and a cursor.
mkdir -p "$WORK/skills/global"
for n in fuzz-skill-a fuzz-skill-b; do
  printf -- '---\nname: %s\ntriggers:\n- %s\n---\nA skill for generated requests.\n' "$n" "$n" \
    >"$WORK/skills/global/$n.md"
done
SERVER_PID=
PG_DB=
stop_server() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  SERVER_PID=
  kill_sandboxes
}
# Sandboxes outlive the server by design: the stand-ins the generated requests started are
# killed by working directory (every sandbox process runs in its folder under $WORK), with
# their process group (a confined sandbox's bwrap and its namespace's init, which a paused
# sandbox would otherwise keep stopped).
kill_sandboxes() {
  local link pid pgid
  for link in /proc/[0-9]*/cwd; do
    pid=${link#/proc/}; pid=${pid%/cwd}
    case "$(readlink "$link" 2>/dev/null)" in
      "$WORK"/*)
        pgid=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f3)
        [ -n "$pgid" ] && kill -9 -- "-$pgid" 2>/dev/null
        kill -9 "$pid" 2>/dev/null || true ;;
    esac
  done
}
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  stop_server
  if [ -n "$PG_DB" ]; then psql "$PG_ADMIN_URL" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 || true; fi
  scripts/unmount-under.sh "$WORK"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Field $2 of the first JSON line of file $1 whose "event" is $3.
json_field() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try:
        v = json.loads(line)
    except ValueError:
        continue
    if v.get("event") == sys.argv[3]:
        print(v[sys.argv[2]]); break
' "$1" "$2" "$3"
}

# The next_page_id of the first page of the search at path $1 (with ?limit=1), as the server's
# owner ($key at $addr) reads it.
next_page_id() {
  curl -sf -H "X-Access-Token: $key" "$addr$1" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["next_page_id"])'
}

# Runs one backend; returns Schemathesis's exit code (0: no failure).
run_backend() {
  local name=$1 url=$2 out="$REPORT_DIR/$1"
  mkdir -p "$out"
  echo "== $name"
  SWITCHBOARD_LOG=warn "$BIN" serve --bind 127.0.0.1:0 --database-url "$url" \
    --data-dir "$WORK/$name-data" --secret-key-file "$WORK/$name.secret.key" \
    --sandbox-specs "$WORK/specs.json" --sandbox-start-timeout 10 \
    --skills-dir "$WORK/skills" --service-api-key-file "$WORK/service.key" \
    --llm-model openai/fuzz-model --llm-base-url http://127.0.0.1:9/v1 \
    >"$WORK/$name.out" 2>"$out/server.stderr" &
  SERVER_PID=$!
  for _ in $(seq 300); do
    grep -q '"listening"' "$WORK/$name.out" 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "server exited:" >&2; cat "$out/server.stderr" >&2; return 2; }
    sleep 0.1
  done
  local addr key org user session conv spare cursor
  addr=$(json_field "$WORK/$name.out" address listening)
  key=$(json_field "$WORK/$name.out" api_key bootstrapped)
  org=$(json_field "$WORK/$name.out" org_id bootstrapped)
  user=$(json_field "$WORK/$name.out" user_id bootstrapped)
  if [ -z "$addr" ] || [ -z "$key" ]; then
    echo "no listening/bootstrapped line from the server" >&2
    return 2
  fi
  session=$("$BIN" --database-url "$url" sandboxes register --org-id "$org" --user-id "$user" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["session_api_key"])') ||
    { echo "sandboxes register failed" >&2; return 2; }

  # A second registered sandbox, so that the sandboxes search has a second page and a cursor.
  "$BIN" --database-url "$url" sandboxes register --org-id "$org" --user-id "$user" >/dev/null ||
    { echo "sandboxes register failed" >&2; return 2; }

  # Seed: one conversation with one event, and a spare key.
  conv=$(python3 -c 'import uuid; print(uuid.uuid4())')
  curl -sf -o /dev/null -H "X-Session-API-Key: $session" -H 'Content-Type: application/json' \
    -d "{\"id\":\"$conv\",\"title\":\"fuzz seed\",\"execution_status\":\"idle\"}" \
    "$addr/api/v1/webhooks/conversations" || { echo "seeding the conversation failed" >&2; return 2; }
  curl -sf -o /dev/null -H "X-Session-API-Key: $session" -H 'Content-Type: application/json' \
    -d "[{\"id\":\"$(python3 -c 'import uuid; print(uuid.uuid4())')\",\"timestamp\":\"2026-11-23T10:00:00\",\"source\":\"user\",\"llm_message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]},\"kind\":\"MessageEvent\"}]" \
    "$addr/api/v1/webhooks/events/$conv" || { echo "seeding the event failed" >&2; return 2; }
  curl -sf -o /dev/null -H "X-Session-API-Key: $session" -H 'Content-Type: application/json' \
    -d "[{\"id\":\"$(python3 -c 'import uuid; print(uuid.uuid4())')\",\"timestamp\":\"2026-11-23T10:00:01\",\"kind\":\"PauseEvent\"}]" \
    "$addr/api/v1/webhooks/events/$conv" || { echo "seeding the second event failed" >&2; return 2; }
  spare=$(curl -sf -H "X-Access-Token: $key" -H 'Content-Type: application/json' -d '{"name":"fuzz spare"}' \
    "$addr/api/keys" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])') ||
    { echo "seeding the spare key failed" >&2; return 2; }
  # A real cursor: page_id must be a next_page_id the service returned (API.md, Events), which
  # JSON Schema cannot state; generated requests use this one.
  cursor=$(next_page_id "/api/v1/conversation/$conv/events/search?limit=1") ||
    { echo "reading a cursor failed" >&2; return 2; }

  # A second conversation and two start tasks, so that the app-conversation and start-task
  # searches have a second page and a cursor (of the default sort_order, CREATED_AT_DESC).
  curl -sf -o /dev/null -H "X-Session-API-Key: $session" -H 'Content-Type: application/json' \
    -d "{\"id\":\"$(python3 -c 'import uuid; print(uuid.uuid4())')\",\"title\":\"fuzz seed 2\"}" \
    "$addr/api/v1/webhooks/conversations" || { echo "seeding the second conversation failed" >&2; return 2; }
  for _ in 1 2; do
    curl -sf -o /dev/null -H "X-Access-Token: $key" -H 'Content-Type: application/json' -d '{}' \
      "$addr/api/v1/app-conversations" || { echo "seeding a start task failed" >&2; return 2; }
  done
  local app_cursor task_cursor
  app_cursor=$(next_page_id "/api/v1/app-conversations/search?limit=1") ||
    { echo "reading an app-conversation cursor failed" >&2; return 2; }
  task_cursor=$(next_page_id "/api/v1/app-conversations/start-tasks/search?limit=1") ||
    { echo "reading a start-task cursor failed" >&2; return 2; }

  # The sandbox and spec searches have cursors of their own kind.
  local sandbox_cursor spec_cursor
  sandbox_cursor=$(next_page_id "/api/v1/sandboxes/search?limit=1") ||
    { echo "reading a sandbox cursor failed" >&2; return 2; }
  spec_cursor=$(next_page_id "/api/v1/sandbox-specs/search?limit=1") ||
    { echo "reading a spec cursor failed" >&2; return 2; }

  # Two custom secrets, so that the secrets search has a second page and a cursor.
  local secret_cursor
  for n in FUZZ_SEED_A FUZZ_SEED_B; do
    curl -sf -o /dev/null -H "X-Access-Token: $key" -H 'Content-Type: application/json' \
      -d "{\"name\":\"$n\",\"value\":\"seed\"}" "$addr/api/v1/secrets" ||
      { echo "seeding a secret failed" >&2; return 2; }
  done
  secret_cursor=$(next_page_id "/api/v1/secrets/search?limit=1") ||
    { echo "reading a secrets cursor failed" >&2; return 2; }

  # The model, provider and skill searches have cursors of their own kind too (two global
  # skills are in $WORK/skills, so the skill search has a second page).
  local model_cursor provider_cursor skill_cursor
  model_cursor=$(next_page_id "/api/v1/config/models/search?limit=1") ||
    { echo "reading a model cursor failed" >&2; return 2; }
  provider_cursor=$(next_page_id "/api/v1/config/providers/search?limit=1") ||
    { echo "reading a provider cursor failed" >&2; return 2; }
  skill_cursor=$(next_page_id "/api/v1/skills/search?limit=1") ||
    { echo "reading a skill cursor failed" >&2; return 2; }

  # Two more members (issue 34), so that the members list and the audit log (each addition is
  # an entry) have a second page and a cursor.
  local member_cursor audit_cursor new_user
  for n in 1 2; do
    new_user=$("$BIN" --database-url "$url" users create --email "fuzz-member-$n@example.com" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["user_id"])') ||
      { echo "creating a member failed" >&2; return 2; }
    "$BIN" --database-url "$url" members add --org-id "$org" --user-id "$new_user" --role member >/dev/null ||
      { echo "adding a member failed" >&2; return 2; }
  done
  member_cursor=$(next_page_id "/api/organizations/$org/members?limit=1") ||
    { echo "reading a members cursor failed" >&2; return 2; }
  audit_cursor=$(next_page_id "/api/organizations/$org/audit-log?limit=1") ||
    { echo "reading an audit-log cursor failed" >&2; return 2; }

  cat >"$WORK/$name.toml" <<TOML
# Generated by scripts/fuzz-api.sh for one run; holds throwaway keys of a throwaway database.
[auth.openapi.APIKeyHeader]
api_key = "$key"

[auth.openapi.BearerAuth]
bearer = "$key"

[auth.openapi.SessionKeyHeader]
api_key = "$session"

[dictionaries.conversations]
values = ["$conv"]

[dictionaries.keys]
values = ["$spare"]

[parameters]
"path.conversation_id" = { dictionary = "conversations", probability = 0.5 }
"path.id" = { dictionary = "keys", probability = 0.3 }

# page_id must be a next_page_id of the same search (API.md), which JSON Schema cannot state.
[[operations]]
include-path = "/api/v1/conversation/{conversation_id}/events/search"
parameters = { "query.page_id" = "$cursor" }

[[operations]]
include-path = "/api/v1/sandboxes/search"
parameters = { "query.page_id" = "$sandbox_cursor" }

[[operations]]
include-path = "/api/v1/sandbox-specs/search"
parameters = { "query.page_id" = "$spec_cursor" }

# A cursor belongs to one sort_order (API.md, App conversations), which JSON Schema cannot state
# either: these two searches are fuzzed with the order their cursor was issued for.
[[operations]]
include-path = "/api/v1/app-conversations/search"
parameters = { "query.page_id" = "$app_cursor", "query.sort_order" = "CREATED_AT_DESC" }

[[operations]]
include-path = "/api/v1/app-conversations/start-tasks/search"
parameters = { "query.page_id" = "$task_cursor", "query.sort_order" = "CREATED_AT_DESC" }

# A start names a parent conversation that must exist, and a suggested_task excludes an
# initial_message: 400s the document states in prose; a conversation_id the caller sees is the
# documented 409 (issue 24 item 5).
[[operations]]
include-path-regex = "^/api/v1/app-conversations(/stream-start)?\$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"]

# A message goes to the conversation's sandbox, which must be running: the seeded
# conversation's sandbox was registered, not started, so it answers the documented 410 (MISSING).
[[operations]]
include-path = "/api/v1/app-conversations/{conversation_id}/send-message"
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "410", "429", "5xx"]

# A sandbox starts from a spec of this installation's configuration, which the document cannot
# enumerate: an unknown sandbox_spec_id is the documented 400 (API.md; OpenHands answers 500);
# past --max-sandboxes-per-user (20) a start is the documented 409 (issue 18, Quotas).
[[operations]]
include-path = "/api/v1/sandboxes"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"]

# Pausing, resuming or deleting a sandbox depends on its state (registered, ERROR or MISSING
# answer the documented 409), which no schema states either.
[[operations]]
include-path-regex = '^/api/v1/sandboxes/\{[a-z_]+\}(/pause|/resume)?\$'
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "429", "5xx"]

# The websocket endpoints answer a plain GET (Schemathesis speaks no websocket) with the
# documented 400 "Not a websocket upgrade"; the frames are tested in crates/api/tests.
[[operations]]
include-path-regex = "^/sockets/"
checks.positive_data_acceptance.expected-statuses = ["101", "400", "401", "403", "404", "429", "5xx"]

# Marketplace names must be unique in the list: a 400 the document states in prose (JSON Schema
# cannot say "unique by name"), so generated lists with a repeated name may get it.
[[operations]]
include-path = "/api/organizations/app"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

# Switching a running conversation's LLM to a profile depends on that profile (a profile with
# no model is the documented 400, an unknown one 404) and on the sandbox's state (409, 410).
[[operations]]
include-path = "/api/v1/app-conversations/{conversation_id}/switch_profile"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "410", "429", "5xx"]

[[operations]]
include-path = "/api/v1/secrets/search"
parameters = { "query.page_id" = "$secret_cursor" }

# The members list and the audit log of the seeded organization, with their own cursors.
[[operations]]
include-path = "/api/organizations/{org_id}/members"
parameters = { "query.page_id" = "$member_cursor", "path.org_id" = "$org" }

[[operations]]
include-path = "/api/organizations/{org_id}/audit-log"
parameters = { "query.page_id" = "$audit_cursor", "path.org_id" = "$org" }

[[operations]]
include-path = "/api/v1/config/models/search"
parameters = { "query.page_id" = "$model_cursor" }

[[operations]]
include-path = "/api/v1/config/providers/search"
parameters = { "query.page_id" = "$provider_cursor" }

[[operations]]
include-path = "/api/v1/skills/search"
parameters = { "query.page_id" = "$skill_cursor" }

# Issue 21's routes (settings, LLM profiles, secrets, git providers) answer what no schema
# states: an unknown profile or secret (404), a new name already taken (400 for a secret, 409
# for a profile), the profile and secret limits (409), no installation key (503 is not
# expected: the server here has one). Their bodies are in JSON Schema (derived from their
# declarations in the domain: crates/domain/src/user_settings/).
[[operations]]
include-path-regex = '^/api/v1/(secrets|settings)(/.*)?\$'
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"]

# The automation service's routes (issue 31) take the service key of --service-api-key-file in
# X-Service-API-Key, which Schemathesis does not have: 401 (and, past the key, 403/404) is
# their documented answer; never a 5xx (the server here has a service key, so no 503).
[[operations]]
include-path-regex = '^/api/service/'
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "429"]

[phases.stateful.inference]
algorithms = ["location-headers", "dependency-analysis"]
TOML

  local seed_args=()
  [ -n "${SWITCHBOARD_FUZZ_SEED:-}" ] && seed_args=(--seed "$SWITCHBOARD_FUZZ_SEED")
  # The failure filter (scripts/probe/st_hooks.py: an ST202 counts only when the request as
  # sent is valid by the document), checked first on the document this server serves.
  curl -sf "$addr/openapi.json" >"$out/openapi.json" || { echo "reading the document failed" >&2; return 2; }
  "$VENV/bin/python" "$HOOKS" "$out/openapi.json" || { echo "the failure filter's self-test failed" >&2; return 2; }
  local rc=0
  # From the temporary folder: Schemathesis and Hypothesis keep caches in the current directory.
  (cd "$WORK" && SCHEMATHESIS_HOOKS="$HOOKS" SWITCHBOARD_FUZZ_DROPPED="$out/dropped.ndjson" \
    "$ST" --config-file "$WORK/$name.toml" run "$addr/openapi.json" \
    --checks all \
    --phases examples,coverage,fuzzing,stateful \
    --max-examples "$MAX_EXAMPLES" \
    --max-time "$MAX_TIME" \
    --continue-on-failure \
    --workers "$WORKERS" \
    --request-timeout 30 \
    --suppress-health-check all \
    --no-color \
    --report junit,vcr,ndjson \
    --report-dir "$out" \
    "${seed_args[@]}" \
    >"$out/schemathesis.txt" 2>&1) || rc=$?
  # Schemathesis's closing counts, then every distinct failure, classified, with a reproduction
  # (from the NDJSON report: the console summary folds some stateful failures away).
  sed -n '/^=* SUMMARY/,$p' "$out/schemathesis.txt" | grep -vE '^=+ SUMMARY|^$' || true
  local reports=("$out"/ndjson-*.ndjson) ndjson
  ndjson=${reports[0]}
  if [ -f "$ndjson" ]; then
    python3 scripts/probe/fuzz_summary.py "$ndjson" | tee "$out/failures.txt"
    python3 scripts/probe/fuzz_summary.py "$ndjson" --markdown >"$out/failures.md"
  fi
  if [ -s "$out/dropped.ndjson" ]; then
    echo "  set aside: $(wc -l <"$out/dropped.ndjson") ST202 on requests that violated the document as sent (links that copied a null; $out/dropped.ndjson)"
  fi

  local still
  still=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Access-Token: $key" "$addr/api/v1/users/me")
  [ "$still" = 200 ] || echo "note: the owner's key answers $still after the run (revoked by a generated request?)"
  stop_server
  grep -iE 'panick|ERROR' "$out/server.stderr" | head -n 20 || true
  echo "== $name: schemathesis exit $rc (report: $out)"
  return "$rc"
}

status=0
IFS=, read -ra wanted <<<"$BACKENDS"
for b in "${wanted[@]}"; do
  case "$b" in
    sqlite)
      run_backend sqlite "sqlite://$WORK/fuzz.sqlite" || status=$((status > $? ? status : $?))
      stop_server
      ;;
    postgres)
      if ! psql "$PG_ADMIN_URL" -qAtc 'select 1' >/dev/null 2>&1; then
        echo "== postgres: no server at $PG_ADMIN_URL (set SWITCHBOARD_FUZZ_PG_URL): skipped" >&2
        continue
      fi
      PG_DB="sb_fuzz_$$"
      psql "$PG_ADMIN_URL" -qc "CREATE DATABASE $PG_DB" >/dev/null
      run_backend postgres "${PG_ADMIN_URL%/*}/$PG_DB" || status=$((status > $? ? status : $?))
      stop_server
      psql "$PG_ADMIN_URL" -qc "DROP DATABASE $PG_DB WITH (FORCE)" >/dev/null
      PG_DB=
      ;;
    *) echo "unknown backend: $b" >&2; exit 2 ;;
  esac
done
echo "== reports: $REPORT_DIR"
exit "$status"
