#!/usr/bin/env bash
# End-to-end run of the real OpenHands agent server against Switchboard (`just e2e`).
#
# Builds the release binary, starts Switchboard on a free loopback port over a temporary SQLite
# database (`switchboard bootstrap` for an organization, an owner and an API key;
# `switchboard sandboxes register` for the session key), then runs the shared harness
# (/work/shared/tools/agent-server-e2e/run_e2e.sh, or $E2E_HARNESS) with its webhooks pointed at
# http://127.0.0.1:PORT/api/v1/webhooks and SESSION_API_KEY set to the sandbox's session key:
# the agent server runs one conversation against a fake LLM and POSTs its events to Switchboard.
# Finally it checks through Switchboard's search API that every event the agent server
# persisted (its own /events/search, saved by the harness) arrived, and that the conversation's
# run state is `finished` (the last `execution_status` event in Switchboard's search, and the
# conversation's stored state).
#
# Needs Python >= 3.12 for the agent server (openhands-agent-server 1.58.2, installed from PyPI
# into $VENV on first use, with the certifi override of the harness's notes). Without one it
# prints "e2e skipped: no Python 3.12+ on this machine" and exits 0.
#
# It also installs the SDK's client workspace (openhands-workspace 1.58.2) into $SDK_VENV for the
# catch-up tests, the OpenHands CLI (openhands 1.16.0) into $CLI_VENV for the one-address and
# login tests, and OpenHands' automation service (openhands-automation 1.26.0) into
# $AUTOMATION_VENV for the automation test.
#
# Knobs: VENV [${TMPDIR:-/tmp}/agent-server-venv], SDK_VENV [${TMPDIR:-/tmp}/openhands-workspace-venv],
# CLI_VENV [${TMPDIR:-/tmp}/openhands-cli-venv], AUTOMATION_VENV [${TMPDIR:-/tmp}/openhands-automation-venv], SWITCHBOARD_BIN [the release build], E2E_HARNESS, TIMEOUT [180] (passed to the
# harness), E2E_MAIN=0 (skip the main job), KEEP_WORK=1 (keep the temporary folder: database, logs, captured files).
# Then, unless E2E_MAIN=0, it runs the main job (scripts/e2e-main.sh, `just e2e-main`) with the
# same binary and venv: Switchboard starts the agent server as a sandbox, an app conversation
# runs twice, is listed, paused and resumed, and deleted (about 20 s of agent-server start-up).
# `scripts/e2e.sh sandbox` runs the sandbox mode instead (scripts/e2e-sandbox.sh): Switchboard
# starts the agent server itself. `scripts/e2e.sh prepare` only installs the four venvs and
# exits (CI runs it in the background while it compiles).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = sandbox ]; then exec scripts/e2e-sandbox.sh; fi

HARNESS="${E2E_HARNESS:-/work/shared/tools/agent-server-e2e/run_e2e.sh}"
VENV="${VENV:-${TMPDIR:-/tmp}/agent-server-venv}"
export TIMEOUT="${TIMEOUT:-180}"

# ---------------------------------------------------------------- Python >= 3.12
PY312=
# On PATH, or installed by pyenv but not the active version (its shims then refuse).
candidates=()
for cand in python3.14 python3.13 python3.12 python3; do
  p=$(command -v "$cand" 2>/dev/null) && candidates+=("$p")
done
for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
  [ -x "$p" ] && candidates+=("$p")
done
for p in "${candidates[@]}"; do
  if "$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
    PY312=$p
    break
  fi
done
if [ -z "$PY312" ] && [ ! -x "$VENV/bin/agent-server" ]; then
  echo "e2e skipped: no Python 3.12+ on this machine"
  exit 0
fi
[ -f "$HARNESS" ] || { echo "e2e: harness not found at $HARNESS (set E2E_HARNESS)" >&2; exit 1; }

log() { printf '[switchboard e2e] %s\n' "$*" >&2; }

# ---------------------------------------------------------------- agent server venv
# Every venv is installed with its bytecode compiled (--compile-bytecode): a sandbox runs the
# agent server as a user of its own that cannot write __pycache__ into the venv, and would
# otherwise compile every module it imports at each start (importing the agent server: 12.9
# CPU-seconds without its bytecode, 7.2 with it).
if [ ! -x "$VENV/bin/agent-server" ]; then
  log "installing openhands-agent-server 1.58.2 into $VENV (Python $("$PY312" -c 'import platform; print(platform.python_version())'))"
  "$PY312" -m venv "$VENV"
  "$VENV/bin/pip" install -q uv
  echo "certifi>=2026.1.4" > "$VENV/overrides.txt"
  "$VENV/bin/uv" pip install -q --compile-bytecode --python "$VENV/bin/python" --override "$VENV/overrides.txt" \
    openhands-agent-server==1.58.2 openhands-sdk==1.58.2 openhands-tools==1.58.2
fi

# ---------------------------------------------------------------- the SDK's client workspace
# The catch-up tests (bins/switchboard/tests/event_catch_up) drive Switchboard with the
# OpenHands SDK's own OpenHandsCloudWorkspace (issue 19); they find this venv through
# switchboard_testkit::sdk_workspace_python. openhands-tools lets the client read the agent's
# tool definitions back.
SDK_VENV="${SDK_VENV:-${TMPDIR:-/tmp}/openhands-workspace-venv}"
if [ -n "$PY312" ] && [ -x "$VENV/bin/uv" ] && [ ! -x "$SDK_VENV/bin/python" ]; then
  log "installing openhands-workspace 1.58.2 into $SDK_VENV"
  "$PY312" -m venv "$SDK_VENV"
  "$VENV/bin/uv" pip install -q --compile-bytecode --python "$SDK_VENV/bin/python" --override "$VENV/overrides.txt" \
    openhands-workspace==1.58.2 openhands-tools==1.58.2
fi

# ---------------------------------------------------------------- the OpenHands CLI
# The one-address test (bins/switchboard/tests/one_address) runs `openhands cloud -t TASK`
# against Switchboard from a network namespace; it finds this venv through
# switchboard_testkit::openhands_cli. Its own venv: the CLI pins another SDK than the agent
# server's.
CLI_VENV="${CLI_VENV:-${TMPDIR:-/tmp}/openhands-cli-venv}"
if [ -n "$PY312" ] && [ -x "$VENV/bin/uv" ] && [ ! -x "$CLI_VENV/bin/openhands" ]; then
  log "installing the OpenHands CLI (openhands 1.16.0) into $CLI_VENV"
  "$PY312" -m venv "$CLI_VENV"
  "$VENV/bin/uv" pip install -q --compile-bytecode --python "$CLI_VENV/bin/python" --override "$VENV/overrides.txt" \
    openhands==1.16.0
fi

# ---------------------------------------------------------------- the automation service
# The automation test (bins/switchboard/tests/automation_service.rs) runs OpenHands' automation
# service with Switchboard as its backend; it finds this venv through
# switchboard_testkit::automation_service_python. Its own venv: it pins SDK 1.58.1.
AUTOMATION_VENV="${AUTOMATION_VENV:-${TMPDIR:-/tmp}/openhands-automation-venv}"
if [ -n "$PY312" ] && [ -x "$VENV/bin/uv" ] && [ ! -x "$AUTOMATION_VENV/bin/uvicorn" ]; then
  log "installing the automation service (openhands-automation 1.26.0) into $AUTOMATION_VENV"
  "$PY312" -m venv "$AUTOMATION_VENV"
  "$VENV/bin/uv" pip install -q --compile-bytecode --python "$AUTOMATION_VENV/bin/python" --override "$VENV/overrides.txt" \
    openhands-automation==1.26.0
fi

if [ "${1:-}" = prepare ]; then
  log "venvs ready: $VENV $SDK_VENV $CLI_VENV $AUTOMATION_VENV"
  exit 0
fi

# ---------------------------------------------------------------- Switchboard
if [ -n "${SWITCHBOARD_BIN:-}" ]; then
  BIN="$SWITCHBOARD_BIN"
else
  cargo build --release -p switchboard >/dev/null
  BIN="$PWD/target/release/switchboard"
fi
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  local rc=$?
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; fi
  if [ "${KEEP_WORK:-0}" = 1 ] || [ "$rc" != 0 ]; then log "files kept in $WORK"; else scripts/unmount-under.sh "$WORK"; rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
export SWITCHBOARD_DATABASE_URL="sqlite://$WORK/switchboard.sqlite"
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

BOOT=$("$BIN" --data-dir "$WORK/data" bootstrap --org-name e2e --email e2e@localhost)
ORG=$(field "$BOOT" org_id); USER_ID=$(field "$BOOT" user_id); API_KEY=$(field "$BOOT" api_key)
SANDBOX=$("$BIN" --data-dir "$WORK/data" sandboxes register --org-id "$ORG" --user-id "$USER_ID")
SESSION_KEY=$(field "$SANDBOX" session_api_key)

SWITCHBOARD_LOG=info "$BIN" --data-dir "$WORK/data" serve --bind 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.log" &
SERVER_PID=$!
for _ in $(seq 300); do grep -q listening "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
ADDR=$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]["address"])' "$WORK/serve.out")
log "Switchboard at $ADDR (org $ORG, sandbox $(field "$SANDBOX" sandbox_id))"

# ---------------------------------------------------------------- the agent server run
mkdir -p "$WORK/captured"
log "running $HARNESS $ADDR/api/v1/webhooks"
SESSION_API_KEY="$SESSION_KEY" VENV="$VENV" OUT_DIR="$WORK/captured" \
  "$HARNESS" "$ADDR/api/v1/webhooks"

# ---------------------------------------------------------------- what arrived in Switchboard
SEARCH=$(ls "$WORK"/captured/run-*-search.jsonl | head -1)
SUMMARY=$(ls "$WORK"/captured/run-*-summary.json | head -1)
CONV=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["conversation_id"])' "$SUMMARY")
log "checking conversation $CONV in Switchboard"
python3 - "$ADDR" "$API_KEY" "$CONV" "$SEARCH" "${SWITCHBOARD_DATABASE_URL#sqlite://}" <<'PY'
import json, sqlite3, sys, time, urllib.parse, urllib.request
addr, key, conv, search_file, db = sys.argv[1:6]
expected = [json.loads(l)["id"] for l in open(search_file) if l.strip()]

def get(path, **q):
    url = f"{addr}/api/v1/conversation/{conv}/{path}?{urllib.parse.urlencode(q)}"
    req = urllib.request.Request(url, headers={"X-Access-Token": key})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)

def all_events():
    items, page = [], None
    while True:
        q = {"limit": 100}
        if page:
            q["page_id"] = page
        p = get("events/search", **q)
        items += p["items"]
        page = p["next_page_id"]
        if not page:
            return items

# The agent server flushes its webhook queue on shutdown; give the last POSTs a moment.
deadline = time.time() + 30
while True:
    items = all_events()
    got = {e["id"] for e in items}
    missing = [i for i in expected if i not in got]
    status_events = [e for e in items if e.get("kind") == "ConversationStateUpdateEvent"
                     and e.get("key") == "execution_status"]
    last_status = status_events[-1]["value"] if status_events else None
    row = sqlite3.connect(db).execute(
        "SELECT execution_status FROM conversations WHERE id = ?", (conv,)).fetchone()
    stored_status = row[0] if row else None
    if (not missing and last_status == "finished" and stored_status == "finished") or time.time() > deadline:
        break
    time.sleep(0.5)
count = get("events/count")
print(json.dumps({
    "conversation_id": conv,
    "agent_server_events": len(expected),
    "switchboard_events": len(items),
    "switchboard_count": count,
    "missing_in_switchboard": missing,
    "last_execution_status_event": last_status,
    "conversation_execution_status": stored_status,
}, indent=2))
ok = True
if not expected:
    print("CHECK FAILED: the agent server reported no events"); ok = False
if missing:
    print("CHECK FAILED: events missing from Switchboard:", missing); ok = False
if last_status != "finished":
    print(f"CHECK FAILED: last execution_status event in Switchboard is {last_status!r}"); ok = False
if stored_status != "finished":
    print(f"CHECK FAILED: conversation status in Switchboard is {stored_status!r}"); ok = False
if count != len(items):
    print(f"CHECK FAILED: count {count} != search {len(items)}"); ok = False
print("SWITCHBOARD E2E:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY

# ---------------------------------------------------------------- the main job
if [ "${E2E_MAIN:-1}" = 0 ]; then
  log "E2E_MAIN=0: the main job (scripts/e2e-main.sh) skipped"
else
  log "running the main job (scripts/e2e-main.sh)"
  # Its own database in its own data directory, not this run's.
  env -u SWITCHBOARD_DATABASE_URL SWITCHBOARD_BIN="$BIN" VENV="$VENV" scripts/e2e-main.sh
fi
