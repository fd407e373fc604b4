#!/usr/bin/env bash
# The main job in one go (`just demo`, the README's quick start): Switchboard on a temporary
# SQLite database runs the OpenHands agent server as a sandbox (process runtime), a fake LLM
# (scripts/e2e/fake_llm.py) answers it, and ONE curl starts a conversation:
#
#   curl -X POST $SWITCHBOARD/api/v1/app-conversations -H "X-Access-Token: $KEY" \
#        -H 'Content-Type: application/json' \
#        -d '{"initial_message": {"role": "user", "content": [{"type": "text", "text": "say hello"}]}}'
#
# The script then prints the start task's steps, reads the conversation from its agent server
# through Switchboard's sandbox proxy (the sandbox's own port is never used), prints every
# event of the conversation as it arrives and the final status, then where its logs are.
#
# Needs: jq, curl, python3, bwrap (bubblewrap) and, as root, pasta (passt) and nft (nftables);
# cargo to build Switchboard unless SWITCHBOARD_BIN names a binary. It checks them first and
# names the packages of what is missing.
#
# The agent server: $VENV/bin/agent-server (openhands-agent-server 1.58.2, installed there from
# PyPI on first use when a Python 3.12+ is found). Without Python 3.12+ the demo says so and
# runs the project's stand-in agent server instead (crates/testkit/fixtures/
# standin_agent_server.py: same API, no LLM, a canned reply).
#
# A real LLM instead of the fake one: LLM_MODEL=anthropic/claude-sonnet-4-5 LLM_API_KEY=sk-...
# [LLM_BASE_URL=...] scripts/demo.sh (the key is read from the environment, never printed).
# LLM_STREAM=1 has the LLM stream (`serve --llm-stream`): the agent server sends token deltas,
# which Switchboard relays to live subscribers as transient frames.
# Knobs: VENV [${TMPDIR:-/tmp}/agent-server-venv], SWITCHBOARD_BIN [target/debug/switchboard,
# built with `cargo build -p switchboard`], MESSAGE ["say hello"], TIMEOUT [300], KEEP_WORK=1
# (keep the temporary directory and its logs), KEEP_RUNNING=1 (after the conversation, keep
# Switchboard serving, print its address and admin key, until Ctrl-C), WEB_CLIENT=DIR (serve a
# browser client's built files at /, e.g. Agent Canvas's `package/build`), DEMO_AGENT=standin
# (skip the real agent server), LLM_STREAM=1.
set -euo pipefail
# WEB_CLIENT may be relative to where the demo was started.
if [ -n "${WEB_CLIENT:-}" ]; then WEB_CLIENT=$(cd "$WEB_CLIENT" && pwd); fi
cd "$(dirname "$0")/.."
VENV="${VENV:-${TMPDIR:-/tmp}/agent-server-venv}"
TIMEOUT="${TIMEOUT:-300}"
MESSAGE="${MESSAGE:-say hello}"
log() { printf '[demo] %s\n' "$*" >&2; }

# What the demo needs, checked before anything is built or installed.
missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$1 (Debian package $2)"); }
need jq jq
need curl curl
need python3 python3
need bwrap bubblewrap
if [ "$(id -u)" = 0 ]; then
  # As root each sandbox gets a network of its own (pasta) with egress rules (nft).
  need pasta passt
  need nft nftables
fi
if [ -z "${SWITCHBOARD_BIN:-}" ] && ! command -v cargo >/dev/null 2>&1; then
  missing+=("cargo (Rust: https://rustup.rs)")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  log "missing: ${missing[*]}"
  log "install them (README, Quick start), e.g.: sudo apt-get install -y jq curl python3 python3-venv bubblewrap passt nftables"
  exit 1
fi

PY312=
for p in python3.14 python3.13 python3.12 python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
  p=$(command -v "$p" 2>/dev/null) || continue
  if "$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
    PY312=$p; break
  fi
done
AGENT=real
if [ "${DEMO_AGENT:-}" = standin ]; then
  AGENT=standin
  log "DEMO_AGENT=standin: using the stand-in agent server (no LLM is called)"
elif [ ! -x "$VENV/bin/agent-server" ]; then
  if [ -n "$PY312" ]; then
    log "installing openhands-agent-server 1.58.2 into $VENV (first run only; a few minutes)"
    "$PY312" -m venv "$VENV"
    "$VENV/bin/pip" install -q uv
    echo "certifi>=2026.1.4" > "$VENV/overrides.txt"
    "$VENV/bin/uv" pip install -q --compile-bytecode --python "$VENV/bin/python" --override "$VENV/overrides.txt" \
      openhands-agent-server==1.58.2 openhands-sdk==1.58.2 openhands-tools==1.58.2
  else
    AGENT=standin
    log "no Python 3.12+ here: using the stand-in agent server (no LLM is called)"
  fi
fi

if [ -z "${SWITCHBOARD_BIN:-}" ]; then
  log "building switchboard: cargo build -p switchboard (the first build takes several minutes)"
  cargo build -p switchboard >/dev/null
  SWITCHBOARD_BIN="$PWD/target/debug/switchboard"
fi
log "Switchboard binary: $SWITCHBOARD_BIN"
PY=$(python3 -c 'import sys; print(sys.executable)')
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  local rc=$?
  # Sandboxes outlive serve by design (a restart finds them running): stop the demo's own. A
  # sandbox's process group holds its bwrap and its pid namespace's init, whose end ends every
  # process of the sandbox (its tmux server too).
  [ -f "$WORK/data/switchboard.sqlite" ] && "$PY" - "$WORK/data/switchboard.sqlite" <<'KILL' || true
import json, os, signal, sqlite3, sys
for (h,) in sqlite3.connect(sys.argv[1]).execute("SELECT handle FROM sandboxes WHERE handle IS NOT NULL"):
    try:
        os.killpg(json.loads(h)["data"]["pid"], signal.SIGKILL)
    except Exception:
        pass
KILL
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  if [ "${KEEP_WORK:-0}" = 1 ] || [ "$rc" != 0 ]; then log "files kept in $WORK (the server's log: $WORK/serve.log)"; else scripts/unmount-under.sh "$WORK"; rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [ -z "${LLM_MODEL:-}" ]; then
  LLM_PORT=$(free_port)
  "$PY" scripts/e2e/fake_llm.py --host 127.0.0.1 --port "$LLM_PORT" --log "$WORK/llm.jsonl" \
    >"$WORK/fake_llm.log" 2>&1 &
  PIDS+=("$!")
  export LLM_MODEL=openai/fake-model LLM_BASE_URL="http://127.0.0.1:$LLM_PORT/v1" LLM_API_KEY=fake-key
  log "fake LLM on 127.0.0.1:$LLM_PORT"
else
  log "LLM: $LLM_MODEL${LLM_BASE_URL:+ at $LLM_BASE_URL}"
fi

if [ "$AGENT" = real ]; then
  cat >"$WORK/specs.json" <<EOF
[{"id": "agent-server", "command": ["$VENV/bin/agent-server"], "initial_env": {
  "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1",
  "OH_ENABLE_VSCODE": "false", "OH_ENABLE_VNC": "false", "OH_PRELOAD_TOOLS": "false",
  "OH_ENABLE_BROWSER": "false", "PYTHONUNBUFFERED": "1",
  "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE": "1", "OH_WEBHOOKS_0_FLUSH_DELAY": "0.5"}}]
EOF
else
  cat >"$WORK/specs.json" <<EOF
[{"id": "standin", "command": ["$PY", "$PWD/crates/testkit/fixtures/standin_agent_server.py"]}]
EOF
fi
SERVE_FLAGS=()
if [ "${LLM_STREAM:-0}" = 1 ]; then
  SERVE_FLAGS+=(--llm-stream)
  log "the LLM streams (--llm-stream)"
fi
case "${LLM_BASE_URL:-}" in
  # Process sandboxes have a network of their own: an LLM on the host's loopback is a port
  # they must be given.
  http://127.0.0.1:*|http://localhost:*)
    llm_port=${LLM_BASE_URL#http://*:}
    SERVE_FLAGS+=(--sandbox-host-port "${llm_port%%/*}")
    ;;
esac
if [ -n "${E2E_REPO:-}" ]; then
  # A local repository is cloned only from a directory the operator allows.
  SERVE_FLAGS+=(--allow-local-repositories "$(dirname "$E2E_REPO")")
fi
if [ -n "${WEB_CLIENT:-}" ]; then
  SERVE_FLAGS+=(--web-client "$WEB_CLIENT")
fi
log "starting Switchboard (SQLite in $WORK/data; its log: $WORK/serve.log)"
"$SWITCHBOARD_BIN" --data-dir "$WORK/data" serve --bind 127.0.0.1:0 \
  --sandbox-specs "$WORK/specs.json" --sandbox-start-timeout 180 ${SERVE_FLAGS[@]+"${SERVE_FLAGS[@]}"} \
  >"$WORK/serve.out" 2>"$WORK/serve.log" &
SERVE_PID=$!
PIDS+=("$SERVE_PID")
for _ in $(seq 300); do
  grep -q listening "$WORK/serve.out" 2>/dev/null && break
  kill -0 "$SERVE_PID" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q listening "$WORK/serve.out" 2>/dev/null; then
  log "Switchboard did not start; the end of its log ($WORK/serve.log):"
  tail -n 20 "$WORK/serve.log" >&2
  exit 1
fi
SWITCHBOARD=$(jq -r 'select(.event=="listening") | .address' "$WORK/serve.out")
KEY=$(jq -r 'select(.event=="bootstrapped") | .api_key' "$WORK/serve.out")
log "Switchboard on $SWITCHBOARD (agent server: $AGENT); starting a conversation"

BODY=$(jq -cn --arg m "$MESSAGE" '{initial_message: {role: "user", content: [{type: "text", text: $m}]}}')
if [ -n "${E2E_REPO:-}" ]; then
  BODY=$(echo "$BODY" | jq -c --arg r "$E2E_REPO" '. + {selected_repository: $r, selected_branch: "work"}')
fi
E2E_SECRET=
if [ -n "${E2E_REPO:-}" ]; then
  # A request secret: the agent server takes secrets as SecretSource objects (issue 24 item 1).
  E2E_SECRET="e2e_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  BODY=$(echo "$BODY" | jq -c --arg s "$E2E_SECRET" '. + {secrets: {E2E_SECRET: $s}}')
fi
echo "\$ curl -X POST $SWITCHBOARD/api/v1/app-conversations -H 'X-Access-Token: ...' -d '$(echo "$BODY" | jq -c 'if .secrets then .secrets[] = "**********" else . end')'"
TASK=$(curl -sS -X POST "$SWITCHBOARD/api/v1/app-conversations" -H "X-Access-Token: $KEY" \
  -H 'Content-Type: application/json' -d "$BODY")
echo "$TASK" | jq -c '{id, status}'

E2E_REPO="${E2E_REPO:-}" E2E_DATA_DIR="$WORK/data" E2E_SECRET="$E2E_SECRET" E2E_AGENT="$AGENT" "$PY" - "$SWITCHBOARD" "$KEY" "$(echo "$TASK" | jq -r .id)" "$TIMEOUT" <<'PY'
import json, os, sys, time, urllib.parse, urllib.request
base, key, task_id, timeout = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
deadline = time.time() + timeout
def get(path):
    req = urllib.request.Request(base + path, headers={"X-Access-Token": key})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)
status = None
while time.time() < deadline:
    t = get(f"/api/v1/app-conversations/start-tasks?ids={task_id}")[0]
    if t["status"] != status:
        status = t["status"]
        print(f"task: {status}" + (f" ({t['detail']})" if t.get("detail") else ""))
    if status in ("READY", "ERROR"):
        break
    time.sleep(0.1)
if status != "READY":
    sys.exit(f"the start did not reach READY: {status}")
cid = t["app_conversation_id"]
# The sandbox is reached through Switchboard alone (issue 22): its agent server's URL is
# Switchboard's (by default a port of Switchboard's own on its host, `http://<host>:<port>`; or
# under its address, /sandboxes/{id}/agent_server), and the API key is the credential: the
# agent server itself takes only its session key, which Switchboard presents upstream, so the
# read below succeeds only through Switchboard.
agent = t["agent_server_url"].rstrip("/")
base_host = urllib.parse.urlsplit(base).hostname
shown = urllib.parse.urlsplit(agent)
if not (agent.startswith(base + "/sandboxes/")
        or (shown.hostname == base_host and shown.path in ("", "/"))):
    sys.exit(f"CHECK FAILED: the agent server URL {agent} is not Switchboard's ({base})")
req = urllib.request.Request(f"{agent}/api/conversations/{cid.replace('-', '')}",
                             headers={"X-Access-Token": key})
with urllib.request.urlopen(req, timeout=10) as r:
    info = json.load(r)
print(f"agent server through Switchboard: {agent}")
secret = os.environ.get("E2E_SECRET")
if secret:
    # e2e-main: the request secret is never echoed, and reached the agent server.
    if secret in json.dumps(t):
        sys.exit("CHECK FAILED: the request secret is in the start task")
    if os.environ.get("E2E_AGENT") == "real":
        sources = (info.get("secret_registry") or {}).get("secret_sources") or {}
        if (sources.get("E2E_SECRET") or {}).get("kind") != "StaticSecret":
            sys.exit(f"CHECK FAILED: the agent server has no StaticSecret E2E_SECRET: {sources}")
        print("the request secret reached the agent server as a StaticSecret")
print(f"conversation {cid}: events as they arrive")
seen, run_state = set(), None
def text_of(e):
    msg = e.get("llm_message") or {}
    parts = [p.get("text", "") for p in msg.get("content") or [] if isinstance(p, dict)]
    if parts:
        return " ".join(parts)[:100]
    if e.get("kind") == "ConversationStateUpdateEvent":
        v = e.get("value")
        return f"{e.get('key')} = {v if not isinstance(v, (dict, list)) else '{...}'}"
    if e.get("kind") == "ActionEvent":
        return json.dumps((e.get("action") or {}).get("command") or e.get("tool_name"))
    if e.get("kind") == "ObservationEvent":
        obs = e.get("observation") or {}
        c = obs.get("content") or []
        return " ".join(p.get("text", "") for p in c if isinstance(p, dict))[:100]
    return ""
while time.time() < deadline:
    page = get(f"/api/v1/conversation/{cid}/events/search?limit=100&sort_order=TIMESTAMP")
    for e in page["items"]:
        if e["id"] in seen:
            continue
        seen.add(e["id"])
        print(f"  {e.get('timestamp', '')[11:23]} {e.get('source', ''):11} {e['kind']:32} {text_of(e)}")
        if e.get("key") == "execution_status":
            run_state = e.get("value")
    if run_state in ("finished", "error", "stuck"):
        break
    time.sleep(0.3)
print(f"final: execution_status = {run_state}, {len(seen)} events")
if run_state != "finished":
    sys.exit(1)
if os.environ.get("E2E_REPO"):
    # e2e-main: the reply, the clone, the setup script, the task listed and counted.
    obs = [e for e in page["items"] if e["kind"] == "ObservationEvent"]
    if not obs:
        sys.exit("CHECK FAILED: no observation (agent reply) arrived")
    workdir = None
    for e in page["items"]:
        if e.get("key") == "full_state":
            workdir = ((e.get("value") or {}).get("workspace") or {}).get("working_dir")
    # On the host: a confined process sandbox's /workspace is its directory's workspace/
    # (DATA_DIR/sandboxes/{sandbox id}/workspace); the agent server may send no full_state
    # through the webhooks, and then the start's directory is /workspace/project.
    t = get(f"/api/v1/app-conversations/start-tasks?ids={task_id}")[0]
    sandbox_dir = os.path.join(os.environ["E2E_DATA_DIR"], "sandboxes", t["sandbox_id"])
    workdir = workdir or "/workspace/project"
    if workdir == "/workspace" or workdir.startswith("/workspace/"):
        workdir = os.path.join(sandbox_dir, "workspace", workdir[len("/workspace/"):])
    if open(os.path.join(workdir, "README")).read() != "work\n":
        sys.exit("CHECK FAILED: the branch `work` is not checked out in " + workdir)
    if open(os.path.join(workdir, "setup-ran")).read() != "set-up\n":
        sys.exit("CHECK FAILED: .openhands/setup.sh did not run in " + workdir)
    print(f"clone of branch work and setup.sh output found in {workdir}")
    listed = get(f"/api/v1/app-conversations/start-tasks/search?conversation_id__eq={cid}")["items"]
    count = get(f"/api/v1/app-conversations/start-tasks/count?conversation_id__eq={cid}")
    if [t["id"] for t in listed] != [task_id] or count != 1:
        sys.exit(f"CHECK FAILED: the task is not listed/counted: {listed} {count}")
    print("the start task is listed and counted for its conversation")
PY
if [ -n "${E2E_REPO:-}" ] && [ "${LLM_STREAM:-0}" = 1 ] && [ "$AGENT" = real ]; then
  # e2e-main with a streaming LLM, before main_checks deletes the conversation: a Message over
  # the socket starts a run, its deltas arrive as transient frames before the final
  # MessageEvent, and a later subscriber gets the history without deltas (the websockets
  # package of the agent server's venv).
  "$VENV/bin/python" scripts/e2e/live_checks.py "$SWITCHBOARD" "$KEY" "$(echo "$TASK" | jq -r .id)" \
    "$TIMEOUT"
fi
if [ -n "${E2E_REPO:-}" ]; then
  # e2e-main, after the first run: batch get, a second message, search/count, pause/resume,
  # delete and the end of the agent server's process group.
  "$PY" scripts/e2e/main_checks.py "$SWITCHBOARD" "$KEY" "$(echo "$TASK" | jq -r .id)" \
    "$WORK/data/switchboard.sqlite" "$TIMEOUT"
fi

log "done. Where to look:"
log "  the server's log:          $WORK/serve.log"
log "  each sandbox's own log:    $WORK/data/sandboxes/<sandbox id>/agent-server.log"
[ -z "${LLM_PORT:-}" ] || log "  what the fake LLM was asked: $WORK/llm.jsonl"
if [ "${KEEP_RUNNING:-0}" = 1 ]; then
  log "Switchboard keeps running at $SWITCHBOARD until Ctrl-C; its admin key: $KEY"
  log "  e.g. curl -s -H 'X-Access-Token: $KEY' $SWITCHBOARD/api/v1/app-conversations/search"
  [ -z "${WEB_CLIENT:-}" ] || log "  the browser client: open $SWITCHBOARD (README, Agent Canvas)"
  KEEP_WORK=1
  wait "$SERVE_PID"
elif [ "${KEEP_WORK:-0}" != 1 ]; then
  log "  (removed at exit: KEEP_WORK=1 keeps them, KEEP_RUNNING=1 keeps the server running too)"
fi
