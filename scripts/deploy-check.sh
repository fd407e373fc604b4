#!/usr/bin/env bash
# Checks the packaging of docs/deployment.md against the real thing, in three parts (all by
# default; name some to run only those):
#
#   image    the Switchboard image (the Dockerfile's `prebuilt` target, from $SWITCHBOARD_BIN by
#            scripts/switchboard-image.sh, stripped, nothing compiled in Docker) serves: its
#            health check turns `healthy`, GET /health answers, its process runs as uid 10001,
#            its data directory is a volume holding the key the server made.
#   compose  deploy/compose/compose.yaml up with Debian's docker-compose (installed when
#            missing) and the stand-in images of scripts/standin-images.sh; every secret a
#            file made here (a self-signed TLS certificate for localhost among them). Through
#            the TLS proxy only: an org and key from the operator command `bootstrap` (run in
#            the container), an app conversation in a Docker sandbox answered by the fake LLM
#            (scripts/e2e/fake_llm.py), the agent server's run followed through Switchboard's
#            sandbox proxy to `finished`, every event read back from Switchboard, the live
#            websocket (/sockets/session) replaying them all, port 80 redirecting to https,
#            /metrics kept off the public side. Then everything is taken down.
#   systemd  `systemd-analyze verify` of deploy/systemd/switchboard.service, alone and with its
#            drop-in docker-runtime.conf, must print nothing (systemd's package is installed
#            when systemd-analyze is missing); their exposure scores are printed.
#
# Usage: scripts/deploy-check.sh [image] [compose] [systemd]
# Knobs: SWITCHBOARD_BIN [target/debug/switchboard], SWITCHBOARD_IMAGE
# [switchboard/switchboard:local], AGENT_SERVER_IMAGE [switchboard/agent-server:local],
# TIMEOUT [300] (seconds for the conversation), KEEP_WORK=1.
# Needs (image, compose): a Docker daemon and the images scripts/ci-docker.sh makes; root or
# password-less apt for missing packages. Prints `deploy-check: PART passed in N s` per part;
# any failure ends with `deploy-check: FAILED: <why>` and a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")/.."

SWITCHBOARD_BIN="${SWITCHBOARD_BIN:-target/debug/switchboard}"
IMAGE="${SWITCHBOARD_IMAGE:-switchboard/switchboard:local}"
AGENT_IMAGE="${AGENT_SERVER_IMAGE:-switchboard/agent-server:local}"
TIMEOUT="${TIMEOUT:-300}"
parts=("$@")
[ "${#parts[@]}" -gt 0 ] || parts=(image compose systemd)
for part in "${parts[@]}"; do
  case "$part" in
    image | compose | systemd) ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "deploy-check: unknown part: $part (image, compose, systemd)" >&2; exit 2 ;;
  esac
done

log() { printf '[deploy-check] %s\n' "$*" >&2; }
fail() { echo "deploy-check: FAILED: $*" >&2; exit 1; }
started=$SECONDS
WORK=$(mktemp -d "${TMPDIR:-/tmp}/deploy-check.XXXXXX")
chmod 0700 "$WORK"
RUN_ID="deploy-check-$$"
CLEANUPS=()
cleanup() {
  local rc=$?
  local i
  for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do eval "${CLEANUPS[$i]}" >/dev/null 2>&1 || true; done
  if [ "${KEEP_WORK:-0}" = 1 ] || [ "$rc" != 0 ]; then log "files kept in $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT

# apt_install PKG...: Debian packages, with no service started by their scripts.
apt_install() {
  command -v apt-get >/dev/null 2>&1 || fail "$* missing and no apt-get to install it"
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo -n)
  local policy=/usr/sbin/policy-rc.d created=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    created=1
  fi
  log "installing $* (Debian packages)"
  local status=0
  { "${sudo[@]}" apt-get update && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "$@"; } >"$WORK/apt.log" 2>&1 || status=$?
  [ -z "$created" ] || "${sudo[@]}" rm -f "$policy"
  if [ "$status" != 0 ]; then
    tail -n 20 "$WORK/apt.log" >&2
    fail "apt-get install $* failed"
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

need_docker() {
  docker info >/dev/null 2>&1 || fail "no Docker daemon answers (scripts/ci-docker.sh installs and starts one)"
  docker image inspect switchboard/debian:trixie-minbase >/dev/null 2>&1 ||
    fail "no base image switchboard/debian:trixie-minbase (scripts/ci-docker.sh or scripts/agent-server-image.sh makes it)"
  [ -x "$SWITCHBOARD_BIN" ] || fail "no executable $SWITCHBOARD_BIN (cargo build -p switchboard, or set SWITCHBOARD_BIN)"
}

# The image, built from the host's binary (cached by content).
build_image() {
  if [ -z "${IMAGE_BUILT:-}" ]; then
    SWITCHBOARD_IMAGE="$IMAGE" bash scripts/switchboard-image.sh --tag "$IMAGE" "$SWITCHBOARD_BIN" >"$WORK/image.log" 2>&1 ||
      { cat "$WORK/image.log" >&2; fail "scripts/switchboard-image.sh could not build $IMAGE"; }
    grep -E '^(==>|image )' "$WORK/image.log" >&2 || true
    IMAGE_BUILT=1
  fi
}

# The group of the daemon's socket, which Switchboard's container joins.
docker_gid() { stat -c %g /var/run/docker.sock; }

# ---------------------------------------------------------------- image
check_image() {
  local t=$SECONDS name="$RUN_ID-image"
  need_docker
  build_image
  local user volumes health
  user=$(docker image inspect --format '{{.Config.User}}' "$IMAGE")
  volumes=$(docker image inspect --format '{{json .Config.Volumes}}' "$IMAGE")
  health=$(docker image inspect --format '{{json .Config.Healthcheck.Test}}' "$IMAGE")
  [ "$user" = 10001:10001 ] || fail "the image's user is '$user', not 10001:10001"
  [[ "$volumes" == *'"/var/lib/switchboard"'* ]] || fail "the image declares no volume /var/lib/switchboard: $volumes"
  [[ "$health" == *'/health'* ]] || fail "the image has no health check against /health: $health"

  CLEANUPS+=("docker rm -f -v $name")
  CLEANUPS+=("docker ps -aq --filter label=io.switchboard.installation=$RUN_ID | xargs -r docker rm -f -v")
  local t_run=$SECONDS
  docker run -d --name "$name" -p 127.0.0.1::8080 --health-interval 1s \
    --group-add "$(docker_gid)" -v /var/run/docker.sock:/var/run/docker.sock \
    -e SWITCHBOARD_DOCKER_INSTALLATION="$RUN_ID" "$IMAGE" >/dev/null
  local status="" waited=0
  while [ "$waited" -lt 120 ]; do
    status=$(docker inspect --format '{{.State.Status}} {{.State.Health.Status}}' "$name")
    case "$status" in
      "running healthy") break ;;
      running*) ;;
      *) docker logs "$name" 2>&1 | tail -n 20 >&2; fail "the container ended ($status)" ;;
    esac
    sleep 0.5
    waited=$((waited + 1))
  done
  [ "$status" = "running healthy" ] || { docker logs "$name" 2>&1 | tail -n 20 >&2; fail "not healthy within 60 s ($status)"; }
  log "image: healthy $((SECONDS - t_run)) s after docker run (the health check's own verdict)"
  local port body uid files
  port=$(docker port "$name" 8080/tcp | head -n 1 | sed 's/.*://')
  body=$(curl -fsS "http://127.0.0.1:$port/health") || fail "GET /health on the published port failed"
  [[ "$body" == *'"ok"'* ]] || fail "GET /health answered $body"
  uid=$(docker exec "$name" grep '^Uid:' /proc/1/status | awk '{print $2, $3}')
  [ "$uid" = "10001 10001" ] || fail "the server runs as uid $uid, not 10001"
  files=$(docker exec "$name" ls -ln /var/lib/switchboard)
  [[ "$files" == *"-rw------- 1 10001 10001 "*secret.key* ]] || fail "no secret.key of uid 10001, mode 0600, in the data volume: $files"
  docker inspect --format '{{range .Mounts}}{{.Type}} {{.Destination}};{{end}}' "$name" |
    grep -q 'volume /var/lib/switchboard;' || fail "/var/lib/switchboard is not a volume"
  log "image: GET /health $body; process uid/gid $uid; /var/lib/switchboard a volume with the key (0600, uid 10001)"
  docker rm -f -v "$name" >/dev/null
  echo "deploy-check: image passed in $((SECONDS - t)) s"
}

# ---------------------------------------------------------------- compose
check_compose() {
  local t=$SECONDS
  need_docker
  docker image inspect "$AGENT_IMAGE" >/dev/null 2>&1 || fail "no agent-server image $AGENT_IMAGE (scripts/ci-docker.sh builds it)"
  command -v docker-compose >/dev/null 2>&1 || apt_install docker-compose
  command -v openssl >/dev/null 2>&1 || apt_install openssl
  build_image
  local standins
  standins=$(bash scripts/standin-images.sh 2>"$WORK/standin.log") ||
    { cat "$WORK/standin.log" >&2; fail "scripts/standin-images.sh could not build the stand-in images"; }
  export $(echo "$standins" | grep -E '^SWITCHBOARD_(POSTGRES|PROXY)_IMAGE=')
  log "compose: $(docker-compose version --short 2>/dev/null || echo docker-compose); stand-ins $SWITCHBOARD_POSTGRES_IMAGE, $SWITCHBOARD_PROXY_IMAGE"

  # Every secret a file, as deploy/compose/compose.yaml names them.
  local secrets="$WORK/secrets" password
  install -d -m 0700 "$secrets"
  password=$(openssl rand -hex 24)
  printf '%s\n' "$password" >"$secrets/postgres_password"
  printf 'postgres://switchboard:%s@postgres:5432/switchboard\n' "$password" >"$secrets/database_url"
  printf 'fake-key\n' >"$secrets/llm_api_key"
  chmod 0644 "$secrets/postgres_password" "$secrets/database_url" "$secrets/llm_api_key"
  (umask 077; openssl rand -hex 32 >"$secrets/secret_key")
  if [ "$(id -u)" = 0 ]; then
    chown 10001:10001 "$secrets/secret_key"
  else
    docker run --rm --user 0 --entrypoint chown -v "$secrets:/s" "$IMAGE" 10001:10001 /s/secret_key
  fi
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
    -addext 'subjectAltName=DNS:localhost,IP:127.0.0.1' \
    -keyout "$secrets/tls_private_key" -out "$secrets/tls_certificate" >/dev/null 2>&1 ||
    fail "openssl could not make the TLS certificate"
  chmod 0600 "$secrets/tls_private_key"

  # The fake LLM on the Docker bridge's gateway: sandboxes reach it as host.docker.internal.
  local subnet gateway llm_port https_port http_port
  subnet=$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Subnet}} {{end}}' | awk '{print $1}')
  gateway=$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | awk '{print $1}')
  [ -n "$gateway" ] || gateway=$(python3 -c 'import ipaddress,sys; print(next(ipaddress.ip_network(sys.argv[1], strict=False).hosts()))' "$subnet")
  llm_port=$(free_port)
  https_port=$(free_port)
  http_port=$(free_port)
  python3 scripts/e2e/fake_llm.py --host "$gateway" --port "$llm_port" --log "$WORK/llm.jsonl" \
    >"$WORK/fake_llm.log" 2>&1 &
  CLEANUPS+=("kill $!")

  cat >"$WORK/specs.json" <<EOF
[{"id": "$AGENT_IMAGE", "runtime": "docker", "command": ["--port", "8000"],
  "working_dir": "/workspace/project", "memory_mb": 2048, "initial_env": {
  "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENHANDS_SUPPRESS_BANNER": "1",
  "OH_ENABLE_VSCODE": "false", "OH_ENABLE_VNC": "false", "OH_PRELOAD_TOOLS": "false",
  "PYTHONUNBUFFERED": "1",
  "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE": "1", "OH_WEBHOOKS_0_FLUSH_DELAY": "0.5"}}]
EOF
  chmod 0644 "$WORK/specs.json"
  # What this check changes: its own LLM, sandbox spec, public URL and installation label.
  cat >"$WORK/override.yaml" <<EOF
services:
  switchboard:
    environment:
      SWITCHBOARD_PUBLIC_URL: https://localhost:$https_port
      SWITCHBOARD_DOCKER_INSTALLATION: $RUN_ID
      SWITCHBOARD_SANDBOX_SPECS: /etc/switchboard/specs.json
      SWITCHBOARD_SANDBOX_START_TIMEOUT: "240"
      LLM_MODEL: openai/fake-model
      LLM_BASE_URL: http://host.docker.internal:$llm_port/v1
    volumes:
      - $WORK/specs.json:/etc/switchboard/specs.json:ro
EOF
  export SWITCHBOARD_IMAGE="$IMAGE" SWITCHBOARD_SECRETS_DIR="$secrets" \
    SWITCHBOARD_HTTPS_PORT="$https_port" SWITCHBOARD_HTTP_PORT="$http_port" \
    SWITCHBOARD_SANDBOX_NETWORK="$RUN_ID-sandboxes" DOCKER_GID="$(docker_gid)"
  local project="${RUN_ID//-/}"
  local compose=(docker-compose -p "$project" -f deploy/compose/compose.yaml -f "$WORK/override.yaml")
  CLEANUPS+=("${compose[*]} down -v --remove-orphans --timeout 10")
  CLEANUPS+=("docker volume ls -q --filter label=io.switchboard.installation=$RUN_ID | xargs -r docker volume rm -f")
  CLEANUPS+=("docker ps -aq --filter label=io.switchboard.installation=$RUN_ID | xargs -r docker rm -f -v")
  CLEANUPS+=("${compose[*]} logs --no-color >$WORK/compose.log 2>&1")
  local tu=$SECONDS
  "${compose[@]}" up -d >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; "${compose[@]}" logs --no-color --tail 30 >&2 || true; fail "docker-compose up failed"; }
  log "compose: up (postgres healthy, switchboard healthy, proxy started) in $((SECONDS - tu)) s"

  local base="https://localhost:$https_port" waited=0
  until curl -fsS --cacert "$secrets/tls_certificate" "$base/health" >/dev/null 2>&1; do
    [ "$waited" -lt 60 ] || { "${compose[@]}" logs --no-color --tail 30 >&2; fail "$base/health does not answer through the proxy"; }
    sleep 0.5
    waited=$((waited + 1))
  done
  local key
  key=$("${compose[@]}" exec -T switchboard switchboard bootstrap --org-name deploy-check \
    --email admin@deploy-check.example 2>"$WORK/bootstrap.log" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])') ||
    { cat "$WORK/bootstrap.log" >&2; fail "switchboard bootstrap in the container failed"; }
  log "compose: bootstrap in the container gave an API key; the conversation goes through $base"

  python3 - "$base" "$key" "$secrets/tls_certificate" "$TIMEOUT" "$http_port" <<'PY' ||
import base64, hashlib, json, os, socket, ssl, sys, time, urllib.error, urllib.parse, urllib.request
base, key, cafile, timeout, http_port = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
ctx = ssl.create_default_context(cafile=cafile)
deadline = time.time() + timeout

def fail(why):
    sys.exit(f"deploy-check: FAILED: {why}")

def call(method, url, body=None, headers=None, t=15):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=t, context=ctx) as r:
        return json.load(r)

def sb(method, path, body=None):
    return call(method, base + path, body, {"X-Access-Token": key})

def wait(what, check, step=0.3):
    while time.time() < deadline:
        v = check()
        if v:
            return v
        time.sleep(step)
    fail(f"timed out waiting for {what}")

# Through the proxy: TLS with the site's certificate, and the public side has no /metrics.
try:
    urllib.request.urlopen(base + "/metrics", timeout=10, context=ctx)
    fail("/metrics answers through the proxy")
except urllib.error.HTTPError as e:
    if e.code != 404:
        fail(f"/metrics through the proxy answered {e.code}, not 404")
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None
try:
    urllib.request.build_opener(NoRedirect).open(f"http://localhost:{http_port}/health", timeout=10)
    fail("port 80 answers without redirecting to https")
except urllib.error.HTTPError as e:
    if e.code != 301 or not e.headers.get("Location", "").startswith("https://"):
        fail(f"port 80 answered {e.code} {e.headers.get('Location')}, not a redirect to https")

t0 = time.time()
task = sb("POST", "/api/v1/app-conversations", {
    "initial_message": {"role": "user", "content": [{"type": "text", "text": "say hello"}]}})
def task_done():
    t = sb("GET", f"/api/v1/app-conversations/start-tasks?ids={task['id']}")[0]
    return t if t["status"] in ("READY", "ERROR") else None
task = wait("the start task", task_done)
if task["status"] != "READY":
    fail(f"the start ended {task['status']}: {task.get('detail')}")
cid, sid = task["app_conversation_id"], task["sandbox_id"]
sandbox = sb("GET", f"/api/v1/sandboxes?id={sid}")[0]
url = sandbox["exposed_urls"][0]["url"]
if not url.startswith(base + "/sandboxes/"):
    fail(f"the sandbox's URL {url} is not under the proxy's address")
print(f"[deploy-check] start task READY after {time.time() - t0:.1f} s; agent server at {url}", file=sys.stderr)
auth = {"X-Session-API-Key": sandbox["session_api_key"]}
final = wait("the run to end", lambda: (s := call("GET", f"{url}/api/conversations/{cid}", None, auth)
                                        ["execution_status"]) in ("finished", "error", "stuck") and s)
if final != "finished":
    fail(f"the run ended {final}")

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
    got = [e["id"] for e in pages(lambda q: sb("GET", f"/api/v1/conversation/{cid}/events/search?{q}"))]
    return got if set(expected) <= set(got) else None
stored = wait("every event in Switchboard", all_arrived)
print(f"[deploy-check] run finished after {time.time() - t0:.1f} s; {len(stored)} events read through the proxy", file=sys.stderr)

# The live websocket through the proxy: the replay of every stored event, in order.
u = urllib.parse.urlsplit(base)
sock = ctx.wrap_socket(socket.create_connection((u.hostname, u.port), timeout=30), server_hostname=u.hostname)
ws_key = base64.b64encode(os.urandom(16)).decode()
sock.sendall((f"GET /sockets/session/{cid}?after_seq=-1 HTTP/1.1\r\nHost: {u.netloc}\r\n"
              f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {ws_key}\r\n"
              f"Sec-WebSocket-Version: 13\r\nX-Access-Token: {key}\r\n\r\n").encode())
buf = b""
while b"\r\n\r\n" not in buf:
    chunk = sock.recv(4096)
    if not chunk:
        fail("the websocket handshake through the proxy got no answer")
    buf += chunk
head, buf = buf.split(b"\r\n\r\n", 1)
lines = head.decode("latin-1").split("\r\n")
accept = base64.b64encode(hashlib.sha1((ws_key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
if " 101 " not in lines[0] or f"sec-websocket-accept: {accept}".lower() not in [l.lower() for l in lines[1:]]:
    fail(f"the websocket handshake through the proxy answered: {lines[0]}")

def read(n):
    global buf
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            fail("the websocket closed before the replay ended")
        buf += chunk
    out, buf = buf[:n], buf[n:]
    return out

def frame():
    message = b""
    while True:
        b0, b1 = read(2)
        n = b1 & 0x7F
        if n == 126:
            n = int.from_bytes(read(2), "big")
        elif n == 127:
            n = int.from_bytes(read(8), "big")
        mask = read(4) if b1 & 0x80 else None
        payload = read(n)
        if mask:
            payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
        opcode = b0 & 0x0F
        if opcode == 9:  # ping: answer it (masked, as a client must)
            m = os.urandom(4)
            sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + m + bytes(c ^ m[i % 4] for i, c in enumerate(payload)))
            continue
        if opcode == 8:
            fail(f"the websocket closed: {payload[:2].hex()} {payload[2:].decode(errors='replace')}")
        message += payload
        if b0 & 0x80:
            return json.loads(message)

sync = frame()
if sync.get("type") != "sync" or sync.get("from_seq") != 0:
    fail(f"the first websocket frame is {sync}, not a sync from 0")
seqs, ids = [], []
while len(seqs) < sync["through_seq"] + 1:
    f = frame()
    if f.get("type") == "durable":
        seqs.append(f["seq"])
        ids.append(f["event"]["id"])
if seqs != list(range(len(seqs))) or not set(stored) <= set(ids):
    fail("the websocket's replay differs from the stored events")
sock.close()
print(f"[deploy-check] websocket through the proxy replayed all {len(seqs)} events (seq 0..{seqs[-1]})", file=sys.stderr)
PY
    fail "the conversation through the proxy (files in $WORK)"
  echo "deploy-check: compose passed in $((SECONDS - t)) s"
}

# ---------------------------------------------------------------- systemd
check_systemd() {
  local t=$SECONDS
  command -v systemd-analyze >/dev/null 2>&1 || apt_install systemd
  # A root of its own: systemd's units, the unit, a stand-in executable where ExecStart= looks.
  local root="$WORK/systemd-root" units
  units=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
  [ -d "$units" ] || units=/usr/lib/systemd/system
  mkdir -p "$root/usr/lib/systemd" "$root/etc/systemd/system/switchboard.service.d" "$root/usr/local/bin"
  cp -a "$units" "$root/usr/lib/systemd/system"
  printf '#!/bin/sh\n' >"$root/usr/local/bin/switchboard"
  chmod 0755 "$root/usr/local/bin/switchboard"
  cp deploy/systemd/switchboard.service "$root/etc/systemd/system/"
  local out score
  out=$(systemd-analyze verify --root="$root" switchboard.service 2>&1) ||
    fail "systemd-analyze verify deploy/systemd/switchboard.service: $out"
  [ -z "$out" ] || fail "systemd-analyze verify deploy/systemd/switchboard.service is not clean: $out"
  score=$(systemd-analyze security --offline=yes --root="$root" switchboard.service 2>&1 | grep -o 'exposure level.*' || true)
  log "systemd: switchboard.service verified clean (process runtime: $score)"
  cp deploy/systemd/docker-runtime.conf "$root/etc/systemd/system/switchboard.service.d/"
  out=$(systemd-analyze verify --root="$root" switchboard.service 2>&1) ||
    fail "systemd-analyze verify with docker-runtime.conf: $out"
  [ -z "$out" ] || fail "systemd-analyze verify with docker-runtime.conf is not clean: $out"
  score=$(systemd-analyze security --offline=yes --root="$root" switchboard.service 2>&1 | grep -o 'exposure level.*' || true)
  log "systemd: with docker-runtime.conf verified clean (Docker runtime: $score)"
  echo "deploy-check: systemd passed in $((SECONDS - t)) s"
}

for part in "${parts[@]}"; do
  "check_$part"
done
echo "deploy-check: passed (${parts[*]}) in $((SECONDS - started)) s"
