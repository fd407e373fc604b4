#!/usr/bin/env python3
"""Checks the agent-server image (scripts/agent-server-image.sh) on the local Docker daemon.

Runs real containers of the image and the shared harness's fake LLM and webhook receiver
(shared/tools/agent-server-e2e: fake_llm.py, receiver.py) on the host, and checks:

  cold-start   N fresh containers (--cold-runs): `docker run` -> `GET /alive` answers; the
               times (seconds) are printed with their median.
  ports        the agent server's port is published on 127.0.0.1 of the host only: in
               `docker inspect` and in the host's listening sockets (`ss`).
  conversation (bridge network) a conversation with the fake LLM runs to `finished`; its LLM is
               reached and its webhooks (OH_WEBHOOKS_0_BASE_URL) delivered through
               `host.docker.internal` (`--add-host host.docker.internal:host-gateway`), with the
               fake LLM and the receiver bound to the bridge's gateway address; every persisted
               event arrives at the receiver, with the session key header.
  pause        `docker pause`: `/alive` stops answering; `docker unpause`: it answers again.
  host-network (--network host) the server on 127.0.0.1:<free port> (`--host 127.0.0.1
               --port P`), fake LLM and receiver on 127.0.0.1: the same conversation check.

Ends with a line `N passed, M failed`; exit status 1 when any check failed, 2 when it could not
run (no daemon, no image, no harness). Every container it starts is labelled
`io.switchboard.check=agent-server-image` and removed at the end (--keep leaves them).

Usage: scripts/agent-server-image-check.py [--image TAG] [--cold-runs N] [--timeout SECONDS]
       [--harness DIR] [--skip-host-network] [--keep]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LABEL = "io.switchboard.check=agent-server-image"
RESULTS = []  # (name, ok, detail)
CONTAINERS = []
PROCESSES = []


def log(msg):
    print(f"[image check] {msg}", flush=True)


def record(name, ok, detail):
    RESULTS.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def docker(*args, check=True):
    """Runs `docker ARGS`; returns stdout stripped. Raises CalledProcessError when check."""
    p = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, ["docker", *args], p.stdout, p.stderr)
    return p.stdout.strip()


def free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def http(method, url, body=None, key=None, timeout=5.0):
    """One HTTP request; returns (status, parsed JSON or None). Raises on connection errors."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("X-Session-API-Key", key)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        return e.code, None


def alive(base, timeout=1.0):
    try:
        status, body = http("GET", f"{base}/alive", timeout=timeout)
        return status == 200 and body == {"status": "ok"}
    except OSError:
        return False


def wait_alive(base, deadline):
    while time.monotonic() < deadline:
        if alive(base):
            return True
        time.sleep(0.1)
    return False


def run_container(image, env, network="bridge", args=()):
    """Starts a detached container; returns its id."""
    cmd = ["run", "-d", "--init", "--label", LABEL,
           "--add-host", "host.docker.internal:host-gateway"]
    if network == "host":
        cmd += ["--network", "host"]
    else:
        cmd += ["-p", "127.0.0.1::8000"]
    for k, v in env.items():
        cmd += ["-e", f"{k}={v}"]
    cid = docker(*cmd, image, *args)
    CONTAINERS.append(cid)
    return cid


def bridge_gateway():
    """The host's address on Docker's default bridge: what `host-gateway` resolves to inside
    containers (the daemon's default --host-gateway-ip). From the network's IPAM config when
    it names a gateway, else the address of the bridge interface (docker0)."""
    net = json.loads(docker("network", "inspect", "bridge", "--format", "{{json .}}"))
    for conf in net.get("IPAM", {}).get("Config") or []:
        if conf.get("Gateway"):
            return conf["Gateway"]
    name = net.get("Options", {}).get("com.docker.network.bridge.name", "docker0")
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", name],
                         capture_output=True, text=True, check=True).stdout.split()
    return out[out.index("inet") + 1].split("/")[0]


def published_port(cid):
    ports = json.loads(docker("inspect", "--format", "{{json .NetworkSettings.Ports}}", cid))
    bindings = ports.get("8000/tcp") or []
    return bindings


def start_helpers(harness, host, work, tag):
    """Starts the fake LLM and the receiver bound on HOST; returns (llm_port, receiver_port)."""
    llm_port, rec_port = free_port(host), free_port(host)
    prefix = work / f"{tag}-receiver"
    for cmd in (
        [sys.executable, str(harness / "fake_llm.py"), "--host", host, "--port", str(llm_port),
         "--log", str(work / f"{tag}-llm.jsonl")],
        [sys.executable, str(harness / "receiver.py"), "--host", host, "--port", str(rec_port),
         "--prefix", str(prefix)],
    ):
        PROCESSES.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                          stderr=open(work / f"{tag}-helpers.log", "a")))
    deadline = time.monotonic() + 10
    for port in (llm_port, rec_port):
        while True:
            try:
                socket.create_connection((host, port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"helper on {host}:{port} did not start")
                time.sleep(0.1)
    return llm_port, rec_port, prefix


def conversation(name, base, key, llm_url, rec_url, prefix, timeout):
    """Creates one conversation and checks its run and its webhook delivery."""
    body = {
        "agent": {"kind": "Agent",
                  "llm": {"model": "openai/fake-model", "base_url": llm_url,
                          "api_key": "fake-key", "usage_id": "agent", "stream": False,
                          "api_mode": "auto", "num_retries": 0},
                  "tools": [{"name": "terminal"}]},
        "workspace": {"working_dir": "/workspace/project"},
        "autotitle": True,
        "initial_message": {"role": "user", "content": [{"type": "text", "text": "say hello"}]},
    }
    t0 = time.monotonic()
    status, info = http("POST", f"{base}/api/conversations", body, key, timeout=30)
    if status not in (200, 201) or not info:
        return record(name, False, f"create answered {status}")
    cid = info["id"]
    deadline = t0 + timeout
    state = None
    while time.monotonic() < deadline:
        _, c = http("GET", f"{base}/api/conversations/{cid}", key=key)
        state = c and c.get("execution_status")
        if state in ("finished", "error", "stuck"):
            break
        time.sleep(0.3)
    run_s = time.monotonic() - t0
    if state != "finished":
        return record(name, False, f"execution_status {state!r} after {run_s:.1f}s")
    _, page = http("GET", f"{base}/api/conversations/{cid}/events/search?limit=100", key=key)
    persisted = [e["id"] for e in page["items"]]
    observations = [e for e in page["items"] if e.get("kind") == "ObservationEvent"
                    and e["observation"].get("kind") == "TerminalObservation"]
    # Every persisted event plus the final full_state snapshot must reach the receiver.
    got, final_state = set(), False
    while time.monotonic() < deadline:
        events_file = Path(f"{prefix}-events.jsonl")
        lines = events_file.read_text().splitlines() if events_file.exists() else []
        events = [json.loads(line)["event"] for line in lines]
        got = {e.get("id") for e in events}
        final_state = any(e.get("kind") == "ConversationStateUpdateEvent"
                          and e.get("key") == "full_state"
                          and e["value"].get("execution_status") == "finished" for e in events)
        if set(persisted) <= got and final_state:
            break
        time.sleep(0.3)
    missing = [i for i in persisted if i not in got]
    requests_file = Path(f"{prefix}-requests.jsonl")
    reqs = [json.loads(line) for line in requests_file.read_text().splitlines()] \
        if requests_file.exists() else []
    keyed = all(r["headers"].get("X-Session-API-Key") == key for r in reqs)
    conv_posts = sum(1 for r in reqs if r["path"].rstrip("/").endswith("/conversations"))
    exit_ok = bool(observations) and observations[0]["observation"].get("exit_code") == 0
    # The output itself is only reported: the terminal tool can lose it (harness notes §6).
    output = "".join(c.get("text", "") for c in observations[0]["observation"].get("content", [])) \
        if observations else ""
    ok = not missing and final_state and keyed and conv_posts >= 1 and exit_ok
    record(name, ok,
           f"finished in {run_s:.1f}s; {len(persisted)} persisted events, "
           f"{len(got)} received at {rec_url} in {len(reqs)} POSTs "
           f"(missing {len(missing)}, final full_state {final_state}, "
           f"/conversations POSTs {conv_posts}, session key on all {keyed}, "
           f"terminal exit_code 0 {exit_ok}, output {output.strip()[:40]!r})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--image", default=os.environ.get("AGENT_SERVER_IMAGE",
                                                      "switchboard/agent-server:local"))
    ap.add_argument("--cold-runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120.0, help="per wait, seconds")
    ap.add_argument("--harness", type=Path, default=None,
                    help="folder with fake_llm.py and receiver.py "
                         "[../shared/tools/agent-server-e2e beside the repository]")
    ap.add_argument("--skip-host-network", action="store_true")
    ap.add_argument("--keep", action="store_true", help="leave containers and files")
    a = ap.parse_args()

    harness = a.harness
    if harness is None:
        for cand in (REPO.parent / "shared/tools/agent-server-e2e",
                     Path("/work/shared/tools/agent-server-e2e")):
            if (cand / "receiver.py").exists():
                harness = cand
                break
    if harness is None or not (harness / "receiver.py").exists():
        print("image check: harness (fake_llm.py, receiver.py) not found; pass --harness",
              file=sys.stderr)
        return 2
    try:
        docker("image", "inspect", a.image)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"image check: no image {a.image} or no Docker daemon: "
              f"{getattr(e, 'stderr', e)}".strip(), file=sys.stderr)
        return 2
    gateway = bridge_gateway()
    work = Path(tempfile.mkdtemp(prefix="agent-server-image-check."))
    log(f"image {a.image}; bridge gateway {gateway}; files in {work}")
    try:
        checks(a, harness, gateway, work)
    finally:
        if not a.keep:
            for cid in CONTAINERS:
                docker("rm", "-f", cid, check=False)
        for p in PROCESSES:
            p.terminate()
        for p in PROCESSES:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
    passed = sum(1 for _, ok, _ in RESULTS if ok)
    print(f"{passed} passed, {len(RESULTS) - passed} failed")
    return 0 if passed == len(RESULTS) else 1


def checks(a, harness, gateway, work):
    key = "check-" + uuid.uuid4().hex
    llm_port, rec_port, prefix = start_helpers(harness, gateway, work, "bridge")
    rec_url = f"http://host.docker.internal:{rec_port}/api/v1/webhooks"
    env = {"OH_SESSION_API_KEYS_0": key, "OH_WEBHOOKS_0_BASE_URL": rec_url,
           "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE": "1", "OH_WEBHOOKS_0_FLUSH_DELAY": "0.5"}

    # cold start: the last container is kept for the other checks
    times, base, cid = [], None, None
    for i in range(a.cold_runs):
        t0 = time.monotonic()
        cid = run_container(a.image, env)
        bindings = published_port(cid)
        base = f"http://127.0.0.1:{bindings[0]['HostPort']}"
        if not wait_alive(base, t0 + a.timeout):
            logs = docker("logs", "--tail", "20", cid, check=False)
            record("cold-start", False, f"no /alive within {a.timeout}s; logs:\n{logs}")
            return
        times.append(time.monotonic() - t0)
        log(f"cold start {i + 1}: {times[-1]:.1f}s")
        if i < a.cold_runs - 1:
            docker("rm", "-f", cid)
            CONTAINERS.remove(cid)
    record("cold-start", True,
           f"docker run -> /alive: {', '.join(f'{t:.1f}' for t in times)} s "
           f"(median {statistics.median(times):.1f} s)")

    # ports: 127.0.0.1 only, in Docker's view and in the host's listening sockets
    bindings = published_port(cid)
    host_port = bindings[0]["HostPort"]
    ss = subprocess.run(["ss", "-ltnH", f"sport = :{host_port}"], capture_output=True, text=True)
    listeners = sorted({line.split()[3] for line in ss.stdout.splitlines() if line.strip()})
    ok = all(b["HostIp"] == "127.0.0.1" for b in bindings) and \
        listeners == [f"127.0.0.1:{host_port}"]
    record("ports", ok, f"docker: {[(b['HostIp'], b['HostPort']) for b in bindings]}; "
                        f"listening: {listeners}")

    conversation("conversation", base, key, f"http://host.docker.internal:{llm_port}/v1",
                 rec_url, prefix, a.timeout)

    # pause / unpause
    docker("pause", cid)
    paused_state = docker("inspect", "--format", "{{.State.Status}}", cid)
    answered = alive(base, timeout=2.0)
    docker("unpause", cid)
    t0 = time.monotonic()
    back = wait_alive(base, t0 + 10)
    record("pause", paused_state == "paused" and not answered and back,
           f"state while paused {paused_state!r}, /alive answered while paused: {answered}; "
           f"after unpause /alive in {time.monotonic() - t0:.2f}s")

    if a.skip_host_network:
        return
    llm_port, rec_port, prefix = start_helpers(harness, "127.0.0.1", work, "host")
    rec_url = f"http://127.0.0.1:{rec_port}/api/v1/webhooks"
    env = dict(env, OH_WEBHOOKS_0_BASE_URL=rec_url)
    port = free_port("127.0.0.1")
    t0 = time.monotonic()
    run_container(a.image, env, network="host", args=("--host", "127.0.0.1", "--port", str(port)))
    base = f"http://127.0.0.1:{port}"
    if not wait_alive(base, t0 + a.timeout):
        record("host-network", False, f"no /alive within {a.timeout}s")
        return
    log(f"host network: /alive after {time.monotonic() - t0:.1f}s")
    conversation("host-network", base, key, f"http://127.0.0.1:{llm_port}/v1", rec_url, prefix,
                 a.timeout)


if __name__ == "__main__":
    sys.exit(main())
