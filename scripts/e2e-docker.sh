#!/usr/bin/env bash
# The main job with the Docker runtime (`just e2e-docker`): Switchboard with
# `--sandbox-runtime docker` starts an app conversation (POST /api/v1/app-conversations) in a
# container of switchboard/agent-server:local; the conversation runs against the fake LLM
# (scripts/e2e/fake_llm.py, on the Docker bridge's gateway so the container reaches it as
# host.docker.internal) and every event the agent server persisted arrives in Switchboard
# through the webhooks (host.docker.internal too). Then the sandbox is deleted and its
# container and volume are gone.
#
# Needs a Docker daemon and the image (scripts/ci-docker.sh builds both); without them it
# prints "e2e docker skipped: <why>" and exits 0. Knobs: SWITCHBOARD_BIN
# [target/debug/switchboard, built when missing], TIMEOUT [300], KEEP_WORK=1.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${AGENT_SERVER_IMAGE:-switchboard/agent-server:local}"
TIMEOUT="${TIMEOUT:-300}"
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "e2e docker skipped: no Docker daemon or no image $IMAGE (run scripts/ci-docker.sh)"
  exit 0
fi
SWITCHBOARD_BIN="${SWITCHBOARD_BIN:-target/debug/switchboard}"
[ -x "$SWITCHBOARD_BIN" ] || cargo build -p switchboard
PY=$(command -v python3)
log() { printf '[switchboard e2e docker] %s\n' "$*" >&2; }

# The bridge's gateway: where the host is reachable from a bridged container.
subnet=$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Subnet}} {{end}}' | awk '{print $1}')
gateway=$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | awk '{print $1}')
if [ -z "$gateway" ]; then
  gateway=$("$PY" -c 'import ipaddress,sys; print(next(ipaddress.ip_network(sys.argv[1], strict=False).hosts()))' "$subnet")
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/e2e-docker.XXXXXX")
INSTALLATION="e2e-docker-$$"
PIDS=()
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  local ids
  ids=$(docker ps -aq --filter "label=io.switchboard.installation=$INSTALLATION")
  [ -z "$ids" ] || docker rm -f -v $ids >/dev/null 2>&1 || true
  ids=$(docker volume ls -q --filter "label=io.switchboard.installation=$INSTALLATION")
  [ -z "$ids" ] || docker volume rm -f $ids >/dev/null 2>&1 || true
  if [ "${KEEP_WORK:-0}" = 1 ] || [ "$rc" != 0 ]; then log "files kept in $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
LLM_PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$PY" scripts/e2e/fake_llm.py --host "$gateway" --port "$LLM_PORT" --log "$WORK/llm.jsonl" \
  >"$WORK/fake_llm.log" 2>&1 &
PIDS+=("$!")
cat >"$WORK/specs.json" <<EOF
[{"id": "$IMAGE", "runtime": "docker", "command": ["--port", "8000"],
  "working_dir": "/workspace/project", "memory_mb": 2048, "initial_env": {
  "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1",
  "OH_ENABLE_VSCODE": "false", "OH_ENABLE_VNC": "false", "OH_PRELOAD_TOOLS": "false",
  "PYTHONUNBUFFERED": "1",
  "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE": "1", "OH_WEBHOOKS_0_FLUSH_DELAY": "0.5"}}]
EOF
SWITCHBOARD_LOG=info LLM_API_KEY=fake-key "$SWITCHBOARD_BIN" --data-dir "$WORK/data" serve \
  --bind 127.0.0.1:0 --sandbox-specs "$WORK/specs.json" --sandbox-start-timeout 240 \
  --docker-installation "$INSTALLATION" \
  --llm-model openai/fake-model --llm-base-url "http://host.docker.internal:$LLM_PORT/v1" \
  --sandbox-host-port "$LLM_PORT" \
  >"$WORK/serve.out" 2>"$WORK/serve.log" &
PIDS+=("$!")
for _ in $(seq 300); do grep -q listening "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done

"$PY" - "$WORK" "$TIMEOUT" "$INSTALLATION" <<'PY'
import json, subprocess, sys, time, urllib.error, urllib.request
work, timeout, installation = sys.argv[1], float(sys.argv[2]), sys.argv[3]
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

def wait(what, check, step=0.3):
    while time.time() < deadline:
        v = check()
        if v:
            return v
        time.sleep(step)
    sys.exit(f"CHECK FAILED: timed out waiting for {what}; see {work}/serve.log")

t0 = time.time()
task = sb("POST", "/api/v1/app-conversations", {
    "initial_message": {"role": "user", "content": [{"type": "text", "text": "say hello"}]}})
def task_done():
    t = sb("GET", f"/api/v1/app-conversations/start-tasks?ids={task['id']}")[0]
    return t if t["status"] in ("READY", "ERROR") else None
task = wait("the start task", task_done)
if task["status"] != "READY":
    sys.exit(f"CHECK FAILED: the start ended {task['status']}: {task.get('detail')}")
print(f"start task READY after {time.time() - t0:.1f} s (cold container start included)")
cid, sid = task["app_conversation_id"], task["sandbox_id"]
sandbox = sb("GET", f"/api/v1/sandboxes?id={sid}")[0]
url, skey = sandbox["exposed_urls"][0]["url"], sandbox["session_api_key"]
auth = {"X-Session-API-Key": skey}
container = f"switchboard-sandbox-{sid}"
labels = json.loads(subprocess.check_output(
    ["docker", "inspect", "--format", "{{json .Config.Labels}}", container]))
assert labels["io.switchboard.installation"] == installation, labels
print(f"conversation {cid} runs in container {container} ({url})")

final = wait("the run to end", lambda: (s := call("GET", f"{url}/api/conversations/{cid}", None, auth)
                                        ["execution_status"]) in ("finished", "error", "stuck") and s)
if final != "finished":
    sys.exit(f"CHECK FAILED: the run ended {final}")

def pages(fetch):
    items, page = [], None
    while True:
        p = fetch("limit=100" + (f"&page_id={page}" if page else ""))
        items += p["items"]
        page = p.get("next_page_id")
        if not page:
            return items

expected = [e["id"] for e in pages(lambda q: call(
    "GET", f"{url}/api/conversations/{cid}/events/search?{q}", None, auth))]
def all_arrived():
    try:
        got = {e["id"] for e in pages(lambda q: sb(
            "GET", f"/api/v1/conversation/{cid}/events/search?{q}"))}
    except urllib.error.HTTPError:
        return False
    return all(i in got for i in expected) and got
got = wait("every event in Switchboard", all_arrived, 0.5)
print(f"conversation {cid}: finished; {len(expected)} persisted events, all in Switchboard "
      f"({len(got)} stored) through webhooks from the container")

sb("DELETE", f"/api/v1/sandboxes/{sid}")
def gone():
    c = subprocess.run(["docker", "inspect", container], capture_output=True)
    v = subprocess.run(["docker", "volume", "inspect", f"switchboard-workspace-{sid}"],
                       capture_output=True)
    return c.returncode != 0 and v.returncode != 0
wait("the container and its volume removed", gone)
print("deleted: the container and its volume are gone")
PY
log "passed"
