#!/usr/bin/env python3
"""Conversation start benchmark (`just bench-start`; numbers go in docs/benchmarks.md).

Runs `switchboard serve` (SWITCHBOARD_BIN, default target/release/switchboard) over a temporary
SQLite database, the agent server as the default spec (AGENT=standin: the project's stand-in,
the default; AGENT=real: $VENV/bin/agent-server with the fake LLM of scripts/e2e/fake_llm.py),
and measures POST /api/v1/app-conversations/stream-start until the streamed array ends with
READY, RUNS times (argument 1, default 20) each:

- warm: a warm pool of WARM sandboxes; before each run the script waits for a ready one;
- cold: no pool, every start launches its sandbox.

Also the time from POST to the first event of the conversation in Switchboard's search (first
agent event). PROCESS_ISOLATION=none runs the sandboxes unconfined (`--process-isolation`,
default bwrap); SANDBOX_NETWORK=host on the host's network (`--sandbox-network`, default
isolated: a network namespace of its own each, connected by pasta). Python 3 standard library only. Prints a JSON summary.
"""

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SWITCHBOARD_BIN", os.path.join(ROOT, "target/release/switchboard"))
STANDIN = os.path.join(ROOT, "crates/testkit/fixtures/standin_agent_server.py")
AGENT = os.environ.get("AGENT", "standin")
VENV = os.environ.get("VENV", os.path.join(os.environ.get("TMPDIR", "/tmp"), "agent-server-venv"))
WARM = int(os.environ.get("WARM", "3"))
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
MODES = os.environ.get("MODES", "warm,cold").split(",")
ISOLATION = os.environ.get("PROCESS_ISOLATION", "bwrap")
NETWORK = os.environ.get("SANDBOX_NETWORK", "isolated")


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_mode(mode, work, llm_base):
    specs = os.path.join(work, f"specs-{mode}.json")
    if AGENT == "real":
        spec = {"id": "agent-server", "command": [os.path.join(VENV, "bin/agent-server")],
                "initial_env": {"LITELLM_LOCAL_MODEL_COST_MAP": "True",
                                "OPENHANDS_SUPPRESS_BANNER": "1", "OH_ENABLE_VSCODE": "false",
                                "OH_ENABLE_VNC": "false", "OH_PRELOAD_TOOLS": "false",
                                "OH_ENABLE_BROWSER": "false",
                                "OH_WEBHOOKS_0_EVENT_BUFFER_SIZE": "1",
                                "OH_WEBHOOKS_0_FLUSH_DELAY": "0.1"}}
    else:
        spec = {"id": "standin", "command": [sys.executable, STANDIN]}
    with open(specs, "w") as f:
        json.dump([spec], f)
    data = os.path.join(work, f"data-{mode}")
    out = open(os.path.join(work, f"serve-{mode}.out"), "w+")
    err = open(os.path.join(work, f"serve-{mode}.log"), "w")
    env = dict(os.environ, LLM_API_KEY="fake-key")
    server = subprocess.Popen(
        [BIN, "--data-dir", data, "serve", "--bind", "127.0.0.1:0", "--sandbox-specs", specs,
         "--warm-sandboxes", str(WARM if mode == "warm" else 0),
         "--max-running-sandboxes", "1000", "--max-sandboxes-per-user", "1000",
         "--sandbox-start-timeout", "180",
         "--llm-model", "openai/fake-model", "--llm-base-url", llm_base,
         "--process-isolation", ISOLATION, "--sandbox-network", NETWORK,
         # The fake LLM listens on the host's loopback, out of a sandbox's own network.
         "--sandbox-host-port", llm_base.rsplit(":", 1)[1].split("/")[0]],
        stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
    try:
        for _ in range(300):
            out.seek(0)
            lines = [json.loads(l) for l in out.read().splitlines() if l.strip()]
            if any(l.get("event") == "listening" for l in lines):
                break
            time.sleep(0.1)
        addr = [l for l in lines if l.get("event") == "listening"][0]["address"]
        key = [l for l in lines if l.get("event") == "bootstrapped"][0]["api_key"]

        def get(path):
            req = urllib.request.Request(addr + path, headers={"X-Access-Token": key})
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.load(r)

        def warm_ready():
            with urllib.request.urlopen(addr + "/metrics", timeout=10) as r:
                m = re.search(r"^sandbox_warm_pool_ready (\d+)", r.read().decode(), re.M)
            return int(m.group(1)) if m else 0

        def wait(check, limit=300):
            deadline = time.time() + limit
            while time.time() < deadline:
                if check():
                    return
                time.sleep(0.02)
            raise SystemExit("timed out; see " + work)

        ready, first_event, errors = [], [], 0
        body = json.dumps({"initial_message": {"role": "user", "content": [
            {"type": "text", "text": "say hello"}]}}).encode()
        for _ in range(RUNS):
            if mode == "warm":
                wait(lambda: warm_ready() >= 1)
                time.sleep(0.3)  # let the gauge settle after the previous claim
            req = urllib.request.Request(
                addr + "/api/v1/app-conversations/stream-start", data=body, method="POST",
                headers={"X-Access-Token": key, "Content-Type": "application/json"})
            t = time.perf_counter()
            with urllib.request.urlopen(req, timeout=300) as r:
                raw = b""
                try:
                    while chunk := r.read1(65536):
                        raw += chunk
                except Exception as e:
                    log = open(os.path.join(work, f"serve-{mode}.log")).read()[-3000:]
                    raise SystemExit(f"stream cut after {len(raw)} bytes: {e!r}\n{log}")
                snaps = json.loads(raw)
            elapsed = time.perf_counter() - t
            last = snaps[-1]
            if last["status"] != "READY":
                errors += 1
                continue
            ready.append(elapsed * 1000)
            cid = last["app_conversation_id"]

            def has_event():
                try:
                    return get(f"/api/v1/conversation/{cid}/events/count") > 0
                except Exception:
                    return False
            wait(has_event, 120)
            first_event.append((time.perf_counter() - t) * 1000)
        return {
            "runs": RUNS, "errors": errors,
            "ready_ms": {"p50": round(pct(ready, 50), 1), "p99": round(pct(ready, 99), 1),
                         "min": round(min(ready), 1), "max": round(max(ready), 1)},
            "first_event_ms": {"p50": round(pct(first_event, 50), 1),
                               "p99": round(pct(first_event, 99), 1)},
        }
    finally:
        server.terminate()
        server.wait(timeout=30)
        db = os.path.join(data, "switchboard.sqlite")
        if os.path.exists(db):
            for (handle,) in sqlite3.connect(db).execute(
                    "SELECT handle FROM sandboxes WHERE handle IS NOT NULL"):
                try:
                    os.killpg(json.loads(handle)["data"]["pid"], signal.SIGKILL)
                except (OSError, KeyError, ValueError):
                    pass


def main():
    work = tempfile.mkdtemp(prefix="bench-start-")
    llm = None
    llm_base = "http://127.0.0.1:9/v1"
    if AGENT == "real":
        port = free_port()
        llm = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts/e2e/fake_llm.py"),
                                "--host", "127.0.0.1", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        llm_base = f"http://127.0.0.1:{port}/v1"
    try:
        result = {"binary": BIN, "agent": AGENT, "warm_pool": WARM}
        for mode in MODES:
            result[mode] = run_mode(mode, work, llm_base)
        print(json.dumps(result, indent=2))
    finally:
        if llm:
            llm.terminate()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
