#!/usr/bin/env bash
# Sandbox end-to-end run (`just e2e-sandbox`, or `scripts/e2e.sh sandbox`): Switchboard itself
# starts the real OpenHands agent server as a sandbox and everything goes through it.
#
#   1. serve over a temporary SQLite database with a specs file running $VENV/bin/agent-server;
#   2. POST /api/v1/sandboxes -> STARTING, then RUNNING (cold start time printed);
#   3. a conversation created directly on the sandbox's agent server (its URL and session key
#      from Switchboard's answer) runs against a fake LLM (scripts/e2e/fake_llm.py) until
#      `finished`, and every event the agent server persisted is found in Switchboard's search
#      (webhooks authenticated by the sandbox's key, no registration step);
#   4. pause -> PAUSED and the agent server stops answering; resume -> RUNNING and it answers;
#      delete -> the process is gone.
#
# Needs Python >= 3.12 (openhands-agent-server 1.58.2 from PyPI into $VENV on first use). Without
# one it prints "e2e sandbox skipped: no Python 3.12+ on this machine" and exits 0.
# Knobs: VENV [${TMPDIR:-/tmp}/agent-server-venv], SWITCHBOARD_BIN [target/release/switchboard,
# built], TIMEOUT [240], KEEP_WORK=1.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-${TMPDIR:-/tmp}/agent-server-venv}"
TIMEOUT="${TIMEOUT:-240}"

PY312=
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
  echo "e2e sandbox skipped: no Python 3.12+ on this machine"
  exit 0
fi
log() { printf '[switchboard e2e sandbox] %s\n' "$*" >&2; }
if [ ! -x "$VENV/bin/agent-server" ]; then
  log "installing openhands-agent-server 1.58.2 into $VENV"
  "$PY312" -m venv "$VENV"
  "$VENV/bin/pip" install -q uv
  echo "certifi>=2026.1.4" > "$VENV/overrides.txt"
  "$VENV/bin/uv" pip install -q --compile-bytecode --python "$VENV/bin/python" --override "$VENV/overrides.txt" \
    openhands-agent-server==1.58.2 openhands-sdk==1.58.2 openhands-tools==1.58.2
fi

if [ -z "${SWITCHBOARD_BIN:-}" ]; then
  cargo build --release -p switchboard >/dev/null
  SWITCHBOARD_BIN="$PWD/target/release/switchboard"
fi
PY=$(python3 -c 'import sys; print(sys.executable)')
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  if [ "${KEEP_WORK:-0}" = 1 ] || [ "$rc" != 0 ]; then log "files kept in $WORK"; else scripts/unmount-under.sh "$WORK"; rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

LLM_PORT=$(free_port)
"$PY" scripts/e2e/fake_llm.py --host 127.0.0.1 --port "$LLM_PORT" --log "$WORK/llm.jsonl" \
  >"$WORK/fake_llm.log" 2>&1 &
PIDS+=("$!")
cat >"$WORK/specs.json" <<EOF
[{"id": "agent-server", "command": ["$VENV/bin/agent-server"], "initial_env": {
  "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1",
  "OH_ENABLE_VSCODE": "false", "OH_ENABLE_VNC": "false", "OH_PRELOAD_TOOLS": "false",
  "OH_ENABLE_BROWSER": "false", "PYTHONUNBUFFERED": "1",
  "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE": "1", "OH_WEBHOOKS_0_FLUSH_DELAY": "0.5"}}]
EOF
SWITCHBOARD_LOG=info "$SWITCHBOARD_BIN" --data-dir "$WORK/data" serve --bind 127.0.0.1:0 \
  --sandbox-specs "$WORK/specs.json" --sandbox-start-timeout 180 --sandbox-host-port "$LLM_PORT" \
  >"$WORK/serve.out" 2>"$WORK/serve.log" &
PIDS+=("$!")
for _ in $(seq 200); do grep -q listening "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done

"$PY" - "$WORK" "$LLM_PORT" "$TIMEOUT" <<'PY'
import json, os, sqlite3, sys, time, urllib.error, urllib.request
work, llm_port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
lines = [json.loads(l) for l in open(f"{work}/serve.out")]
addr = [l for l in lines if l.get("event") == "listening"][0]["address"]
key = [l for l in lines if l.get("event") == "bootstrapped"][0]["api_key"]
deadline = time.time() + timeout

def call(method, url, body=None, headers=None, t=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=t) as r:
        return json.load(r)

def sb(method, path, body=None):
    return call(method, addr + path, body, {"X-Access-Token": key})

def wait(what, check, step=0.2):
    while time.time() < deadline:
        v = check()
        if v:
            return v
        time.sleep(step)
    sys.exit(f"CHECK FAILED: timed out waiting for {what}; see {work}/serve.log")

def status(sid):
    return sb("GET", f"/api/v1/sandboxes?id={sid}")[0]

def answers(url, t=2):
    try:
        return call("GET", url + "/alive", t=t).get("status") == "ok"
    except Exception:
        return False

t0 = time.time()
started = sb("POST", "/api/v1/sandboxes")
assert started["status"] == "STARTING", started
sid = started["id"]
running = wait("RUNNING", lambda: (s := status(sid))["status"] == "RUNNING" and s)
cold = time.time() - t0
print(f"sandbox {sid} RUNNING after {cold:.1f} s (cold start of the real agent server)")
url, skey = running["exposed_urls"][0]["url"], running["session_api_key"]
auth = {"X-Session-API-Key": skey}

conv = call("POST", url + "/api/conversations", {
    "agent": {"kind": "Agent", "llm": {"model": "openai/fake-model",
              "base_url": f"http://127.0.0.1:{llm_port}/v1", "api_key": "fake-key",
              "usage_id": "agent", "num_retries": 0}, "tools": [{"name": "terminal"}]},
    "workspace": {"working_dir": os.path.join(work, "data", "sandboxes", sid)},
    "initial_message": {"role": "user", "content": [{"type": "text", "text": "say hello"}]},
}, auth, t=60)
cid = conv["id"]
final = wait("the run to end", lambda: (s := call("GET", f"{url}/api/conversations/{cid}", None, auth)
                                        ["execution_status"]) in ("finished", "error", "stuck") and s, 0.3)
if final != "finished":
    sys.exit(f"CHECK FAILED: the run ended {final}")
def agent_events():
    items, page = [], None
    while True:
        q = "limit=100" + (f"&page_id={page}" if page else "")
        p = call("GET", f"{url}/api/conversations/{cid}/events/search?{q}", None, auth)
        items += p["items"]
        page = p.get("next_page_id")
        if not page:
            return items
def switchboard_events():
    items, page = [], None
    while True:
        q = "limit=100" + (f"&page_id={page}" if page else "")
        p = sb("GET", f"/api/v1/conversation/{cid}/events/search?{q}")
        items += p["items"]
        page = p["next_page_id"]
        if not page:
            return items
expected = [e["id"] for e in agent_events()]
def all_arrived():
    try:
        got = {e["id"] for e in switchboard_events()}
    except urllib.error.HTTPError:
        return False
    return all(i in got for i in expected) and got
got = wait("every event in Switchboard", all_arrived, 0.5)
print(f"conversation {cid}: {len(expected)} persisted events, all {len(got)} in Switchboard via the webhook")

sb("POST", f"/api/v1/sandboxes/{sid}/pause")
wait("PAUSED", lambda: status(sid)["status"] == "PAUSED")
if answers(url, 2):
    sys.exit("CHECK FAILED: the paused agent server still answers")
print("paused: PAUSED, the agent server does not answer")
sb("POST", f"/api/v1/sandboxes/{sid}/resume")
wait("RUNNING after resume", lambda: status(sid)["status"] == "RUNNING")
if not answers(url, 5):
    sys.exit("CHECK FAILED: the resumed agent server does not answer")
print("resumed: RUNNING, the agent server answers")
handle = json.loads(sqlite3.connect(f"{work}/data/switchboard.sqlite").execute(
    "SELECT handle FROM sandboxes WHERE id = ?", (sid,)).fetchone()[0])
pid = handle["data"]["pid"]
sb("DELETE", f"/api/v1/sandboxes/{sid}")
def gone():
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"
wait("the process to end", gone)
if status(sid) is not None:
    sys.exit("CHECK FAILED: a deleted sandbox is still listed")
print(f"deleted: process {pid} gone, the sandbox no longer listed")
print("SWITCHBOARD E2E SANDBOX: PASS")
PY
