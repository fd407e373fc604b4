#!/usr/bin/env python3
"""Event delivery benchmark with the real agent server (`just bench-catch-up`; results in
docs/benchmarks.md, "Event delivery and catch-up"). Not a test; a few minutes; never in CI.

Switchboard (SWITCHBOARD_BIN, default target/release/switchboard) serves a temporary SQLite
database with the real agent server (openhands-agent-server 1.58.2 from $VENV) as its sandbox
spec and the fake LLM of scripts/e2e/fake_llm.py. One conversation is started through the
start pipeline, then:

1. Latency (with the stream path, unless --no-event-streams): runs follow one another (a user message each, `run: true`) until at least
   --events events were persisted. For every event of those runs (the agent server's own
   search gives its `timestamp`, naive UTC, taken when the agent created it):
   - to the store: the first moment Switchboard's event search shows it (a poller asks for the
     newest 20 every 5 ms, so add up to ~5 ms of sampling);
   - to the frame: the moment a `/sockets/session` subscriber gets its `durable` frame.
   p50, p90, p99 and max of each; and which path stored each event (the stream's and the
   pull path's debug lines name the ids they stored; the rest came by the webhook), with the
   latency to the store per path.
2. Catch-up: Switchboard is killed (SIGKILL); --missing user messages (`run: false`, one
   persisted MessageEvent each) are sent to the agent server while it is down, and the outage
   lasts at least --outage seconds; Switchboard starts again on the same port (the webhooks
   name it). Measured: from the restarted server's `listening` line to the moment its count of
   the conversation's events reaches the agent server's (the agent server's webhook retries
   still run too, and deliver at most their queue of 1,000), and the rate.

Run it with the agent server's venv Python (it has httpx and websockets):
  $VENV/bin/python scripts/bench-catch-up.py [--events 200] [--missing 10000] [--outage 60]
(--missing 0: the latency part only).
Prints a JSON summary on its last line; `uptime` before and after.
"""

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import websockets

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("VENV", Path(tempfile.gettempdir()) / "agent-server-venv"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def parse_ts(text):
    """An agent server timestamp (naive local time; this machine runs in UTC) as epoch s."""
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.timestamp()


def pct(values, p):
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


def summary(ms):
    return {
        "n": len(ms),
        "p50_ms": round(pct(ms, 50), 1),
        "p90_ms": round(pct(ms, 90), 1),
        "p99_ms": round(pct(ms, 99), 1),
        "max_ms": round(max(ms), 1),
        "mean_ms": round(statistics.mean(ms), 1),
    }


# The server's log: warnings, and the debug lines naming the events the stream path and the
# pull path stored (an event in neither was stored by its webhook).
SERVE_LOG = ("warn,switchboard_domain::services::event_streaming=debug,"
             "switchboard_domain::services::event_catch_up=debug")
BY_STREAM = "stored from the agent server's event stream"
BY_PULL = "stored by the pull path"


class Switchboard:
    def __init__(self, binary, work, bind, specs, llm_base, streams=True):
        self.binary, self.work, self.bind = binary, work, bind
        self.specs, self.llm_base = specs, llm_base
        self.streams = streams
        self.proc = None
        self.key = None
        self.listening_at = None

    def start(self):
        env = dict(os.environ, LLM_API_KEY="fake-key", SWITCHBOARD_LOG=SERVE_LOG, NO_COLOR="1")
        self.proc = subprocess.Popen(
            [self.binary, "--data-dir", str(self.work / "data"), "serve", "--bind", self.bind,
             "--sandbox-specs", str(self.specs), "--sandbox-start-timeout", "240",
             "--llm-model", "openai/fake-model", "--llm-base-url", self.llm_base,
             "--sandbox-url-form", "path",
             # The fake LLM is on the host's loopback, out of a sandbox's own network.
             "--sandbox-host-port", self.llm_base.rsplit(":", 1)[1].split("/")[0]]
            + ([] if self.streams else ["--no-event-streams"]),
            stdout=subprocess.PIPE, stderr=open(self.work / "serve.log", "a"), text=True, env=env)
        for line in self.proc.stdout:
            event = json.loads(line)
            if event.get("event") == "bootstrapped":
                self.key = event["api_key"]
            if event.get("event") == "listening":
                self.listening_at = time.time()
                return
        raise SystemExit("switchboard did not start; see serve.log")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def url(self, path):
        return f"http://{self.bind}{path}"

    def get(self, client, path):
        r = client.get(self.url(path), headers={"X-Access-Token": self.key})
        r.raise_for_status()
        return r.json()


def start_conversation(sb, client):
    body = {"initial_message": {"role": "user", "content": [{"type": "text", "text": "say hello"}]}}
    r = client.post(sb.url("/api/v1/app-conversations"), json=body,
                    headers={"X-Access-Token": sb.key})
    r.raise_for_status()
    task_id = r.json()["id"]
    deadline = time.time() + 300
    while time.time() < deadline:
        t = sb.get(client, f"/api/v1/app-conversations/start-tasks?ids={task_id}")[0]
        if t["status"] == "READY":
            s = sb.get(client, f"/api/v1/sandboxes?id={t['sandbox_id']}")[0]
            return (t["app_conversation_id"], t["sandbox_id"],
                    direct_url(t["sandbox_id"], s["exposed_urls"][0]["url"]), s["session_api_key"])
        if t["status"] == "ERROR":
            raise SystemExit(f"start failed: {t}")
        time.sleep(0.2)
    raise SystemExit("start timed out")


def direct_url(sandbox_id, shown):
    """The agent server's own address: the API shows Switchboard's proxy
    (`…/sandboxes/{id}/agent_server`, issue 22), which is gone while Switchboard is killed; its
    process (working in the sandbox's folder, command line ending `--port N`) names the port."""
    if "/sandboxes/" not in shown:
        return shown
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().rstrip(b"\0").split(b"\0")
        except OSError:
            continue
        if f"/{sandbox_id}" in cwd and len(args) >= 2 and args[-2] == b"--port" \
                and not args[0].endswith(b"bwrap"):
            return f"http://127.0.0.1:{args[-1].decode()}"
    raise SystemExit(f"no agent server process for sandbox {sandbox_id}")


class Agent:
    def __init__(self, url, key, conversation):
        self.base = f"{url}/api/conversations/{conversation.replace('-', '')}"
        # The agent server's own event socket: what any reader of its events could get at best.
        self.socket = (url.replace("http://", "ws://", 1) +
                       f"/sockets/events/{conversation.replace('-', '')}?session_api_key={key}")
        self.client = httpx.Client(headers={"X-Session-API-Key": key}, timeout=60)

    def events(self):
        out, page = [], None
        while True:
            params = {"limit": 100}
            if page:
                params["page_id"] = page
            body = self.client.get(f"{self.base}/events/search", params=params).json()
            out += body["items"]
            page = body.get("next_page_id")
            if not page:
                return out

    def count(self):
        return int(self.client.get(f"{self.base}/events/count").text)

    def send(self, text, run):
        r = self.client.post(f"{self.base}/events", json={
            "role": "user", "content": [{"type": "text", "text": text}], "run": run})
        r.raise_for_status()

    def wait_finished(self, runs):
        while True:
            n = sum(1 for e in self.events()
                    if e.get("key") == "execution_status" and e.get("value") == "finished")
            if n >= runs:
                return
            time.sleep(0.2)


def latency(sb, agent, conversation, want_events):
    seen_search, seen_frame, seen_agent = {}, {}, {}
    stop = threading.Event()

    def poll():
        with httpx.Client(timeout=10) as c:
            path = (f"/api/v1/conversation/{conversation}/events/search"
                    "?sort_order=TIMESTAMP_DESC&limit=20")
            while not stop.is_set():
                try:
                    items = sb.get(c, path)["items"]
                except httpx.HTTPError:
                    continue
                now = time.time()
                for e in items:
                    seen_search.setdefault(e["id"], now)
                time.sleep(0.005)

    async def subscribe():
        url = f"ws://{sb.bind}/sockets/session/{conversation}?after_seq=-1"
        async with websockets.connect(url, additional_headers={"X-Access-Token": sb.key},
                                      max_size=None) as ws:
            while not stop.is_set():
                try:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
                except asyncio.TimeoutError:
                    continue
                if frame.get("type") == "durable":
                    seen_frame.setdefault(frame["event"]["id"], time.time())

    async def subscribe_agent():
        async with websockets.connect(agent.socket, max_size=None) as ws:
            while not stop.is_set():
                try:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
                except asyncio.TimeoutError:
                    continue
                if isinstance(frame, dict) and "id" in frame:
                    seen_agent.setdefault(frame["id"], time.time())

    def watch(subscriber):
        try:
            asyncio.run(subscriber())
        except websockets.ConnectionClosed:
            pass  # the catch-up phase kills the server

    threads = [threading.Thread(target=poll, daemon=True),
               threading.Thread(target=watch, args=(subscribe,), daemon=True),
               threading.Thread(target=watch, args=(subscribe_agent,), daemon=True)]
    for t in threads:
        t.start()
    time.sleep(1)
    began = time.time()
    before = len(agent.events())
    runs = 1
    while len(agent.events()) - before < want_events:
        runs += 1
        agent.send(f"run: echo run {runs}", True)
        agent.wait_finished(runs)
    time.sleep(2)
    stop.set()
    events = [e for e in agent.events() if parse_ts(e["timestamp"]) >= began]
    store = [(seen_search[e["id"]] - parse_ts(e["timestamp"])) * 1000
             for e in events if e["id"] in seen_search]
    frame = [(seen_frame[e["id"]] - parse_ts(e["timestamp"])) * 1000
             for e in events if e["id"] in seen_frame]
    at_agent = [(seen_agent[e["id"]] - parse_ts(e["timestamp"])) * 1000
                for e in events if e["id"] in seen_agent]
    missing = [e["id"] for e in events if e["id"] not in seen_frame]
    paths = stored_by(sb, events)
    by_path = {}
    for path in ("stream", "pull", "webhook"):
        ms = [(seen_search[e["id"]] - parse_ts(e["timestamp"])) * 1000
              for e in events if paths[e["id"]] == path and e["id"] in seen_search]
        by_path[path] = summary(ms) if ms else {"n": 0}
    return {"events": len(events), "runs": runs - 1, "to_store": summary(store),
            "to_frame": summary(frame), "never_framed": len(missing),
            "to_agent_socket": summary(at_agent) if at_agent else {"n": 0},
            "to_store_by_path": by_path, "webhook_handling": webhook_handling(sb)}


def stored_by(sb, events):
    """Which path stored each event: the stream's or the pull path's debug line names its
    id; an event in neither was stored by its webhook."""
    log = (sb.work / "serve.log").read_text(errors="replace").splitlines()
    stream = [line for line in log if BY_STREAM in line]
    pull = [line for line in log if BY_PULL in line]
    paths = {}
    for e in events:
        if any(e["id"] in line for line in stream):
            paths[e["id"]] = "stream"
        elif any(e["id"] in line for line in pull):
            paths[e["id"]] = "pull"
        else:
            paths[e["id"]] = "webhook"
    return paths


def webhook_handling(sb):
    """Switchboard's own share: its webhook route's requests and their mean and bucketed
    duration (its latency histogram), from authentication to the commit and the answer."""
    text = httpx.get(sb.url("/metrics")).text
    count = total = 0.0
    buckets = {}
    for line in text.splitlines():
        if "webhooks/events" not in line or 'status="200"' not in line:
            continue
        name, value = line.rsplit(" ", 1)
        if name.startswith("http_request_duration_seconds_count"):
            count += float(value)
        elif name.startswith("http_request_duration_seconds_sum"):
            total += float(value)
        elif name.startswith("http_request_duration_seconds_bucket"):
            le = name.split('le="')[1].split('"')[0]
            buckets[le] = buckets.get(le, 0) + float(value)
    return {"posts": int(count), "mean_ms": round(total / count * 1000, 1) if count else None,
            "share_within_ms": {k: round(v / count, 3) for k, v in buckets.items()
                                if count and k in ("0.01", "0.025", "0.05", "0.1")}}


def catch_up(sb, agent, conversation, missing, outage):
    client = httpx.Client(timeout=60)
    sb.kill()
    killed = time.time()
    posted = 0

    def post(i):
        agent.send(f"note {i}", False)

    with ThreadPoolExecutor(4) as pool:
        for _ in pool.map(post, range(missing)):
            posted += 1
    generated = time.time() - killed
    time.sleep(max(0.0, outage - (time.time() - killed)))
    target = agent.count()
    sb.start()
    down = sb.listening_at - killed
    t0 = sb.listening_at
    while True:
        n = sb.get(client, f"/api/v1/conversation/{conversation}/events/count")
        if n >= target:
            break
        time.sleep(0.02)
    took = time.time() - t0
    # What is stored is what the agent server has: each id once.
    ids = set()
    page = None
    while True:
        path = f"/api/v1/conversation/{conversation}/events/search?limit=100"
        if page:
            path += f"&page_id={page}"
        body = sb.get(client, path)
        ids.update(e["id"] for e in body["items"])
        page = body.get("next_page_id")
        if not page:
            break
    agent_ids = {e["id"] for e in agent.events()}
    return {"missing_posted": posted, "generate_s": round(generated, 1), "outage_s": round(down, 1),
            "agent_events": target, "caught_up_s": round(took, 2),
            "events_per_s": round(posted / took), "all_stored": agent_ids <= ids}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--missing", type=int, default=10000)
    ap.add_argument("--outage", type=float, default=60)
    ap.add_argument("--no-event-streams", action="store_true",
                    help="serve with --no-event-streams (webhooks and the pull path only)")
    args = ap.parse_args()
    binary = os.environ.get("SWITCHBOARD_BIN", str(ROOT / "target/release/switchboard"))
    work = Path(tempfile.mkdtemp(prefix="bench-catch-up-"))
    print(f"uptime before: {uptime()}", flush=True)
    llm_port = free_port()
    llm = subprocess.Popen([sys.executable, str(ROOT / "scripts/e2e/fake_llm.py"),
                            "--port", str(llm_port)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    specs = work / "specs.json"
    specs.write_text(json.dumps([{"id": "agent", "command": [str(VENV / "bin/agent-server")],
                                  "initial_env": {"LITELLM_LOCAL_MODEL_COST_MAP": "True",
                                                  "OPENHANDS_SUPPRESS_BANNER": "1",
                                                  "OH_ENABLE_VSCODE": "false",
                                                  "OH_ENABLE_VNC": "false",
                                                  "OH_PRELOAD_TOOLS": "false",
                                                  "OH_ENABLE_BROWSER": "false"}}]))
    sb = Switchboard(binary, work, f"127.0.0.1:{free_port()}", specs,
                     f"http://127.0.0.1:{llm_port}/v1", streams=not args.no_event_streams)
    sandbox = None
    try:
        sb.start()
        client = httpx.Client(timeout=60)
        conversation, sandbox, url, key = start_conversation(sb, client)
        agent = Agent(url, key, conversation)
        agent.wait_finished(1)
        result = {"latency": latency(sb, agent, conversation, args.events)}
        print(json.dumps(result["latency"]), flush=True)
        if args.missing > 0:
            result["catch_up"] = catch_up(sb, agent, conversation, args.missing, args.outage)
            print(json.dumps(result["catch_up"]), flush=True)
        print(f"uptime after: {uptime()}", flush=True)
        print(json.dumps(result))
    finally:
        if sandbox and sb.proc and sb.proc.poll() is None:
            httpx.delete(sb.url(f"/api/v1/sandboxes/{sandbox}"),
                         headers={"X-Access-Token": sb.key})
            time.sleep(12)  # the cleanup drains, then stops the agent server
        if sb.proc and sb.proc.poll() is None:
            sb.proc.terminate()
            sb.proc.wait()
        llm.terminate()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
