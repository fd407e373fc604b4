#!/usr/bin/env python3
"""Soak test of the real binary (`just soak`: 30 minutes; CI: 2 minutes). Python 3 stdlib only.

Starts `switchboard serve` on a fresh SQLite database (or the PostgreSQL URL given), registers
a sandbox, then for DURATION seconds runs, concurrently and without pause:
  - 2 webhook ingesters (batches of 5 new events into 20 conversations, round robin),
  - 2 searchers (event search of a random conversation, limit 50, and the sandboxes search),
  - 1 settings writer (alternating budget values),
  - 2 websocket subscribers (`/sockets/session/{id}`): each watches a random conversation for
    10 s, then disconnects and later resumes it with `after_seq` = the last seq it received;
    every `durable` frame must carry the next seq (no gap, no duplicate, across resumes), and
    the `sync` frame must start right after the resume point. Its connect-to-`sync` time is the
    `ws` operation.
Every response must be 2xx (any other status or a transport error fails the run). Each minute
it records per operation the request count and p50/p99 latency, and the server's RSS (from
/proc). At the end: fails when an error occurred, when RSS grew more than RSS_GROWTH_LIMIT
(default 1.5x) from the end of the first minute to the end, or when the last minute's p99 of an
operation is more than P99_DRIFT_LIMIT (default 3x) its first minute's p99 (with a floor of
20 ms so tiny p99s do not trip it; an operation with fewer than 100 samples in either minute is
held to its median instead, its p99 being one sample). Prints a Markdown table for docs/benchmarks.md.

Usage: scripts/soak.py BINARY DURATION_SECONDS [DATABASE_URL]
"""

import base64
import http.client
import json
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid

BIN, DURATION = sys.argv[1], float(sys.argv[2])
RSS_GROWTH_LIMIT = float(os.environ.get("RSS_GROWTH_LIMIT", "1.5"))
P99_DRIFT_LIMIT = float(os.environ.get("P99_DRIFT_LIMIT", "3"))
P99_MIN_SAMPLES = 100
work = tempfile.mkdtemp(prefix="switchboard-soak-")
db_url = sys.argv[3] if len(sys.argv) > 3 else f"sqlite://{work}/soak.sqlite"

env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
env["SWITCHBOARD_LOG"] = "warn"
# The per-conversation event quotas lifted (0: no limit, still judged on every append): the
# 30-minute soak puts more events into each of its 20 conversations than the default 100,000.
server = subprocess.Popen(
    [BIN, "serve", "--bind", "127.0.0.1:0", "--database-url", db_url, "--data-dir", work,
     "--max-events-per-conversation", "0", "--max-event-bytes-per-conversation", "0"],
    stdout=subprocess.PIPE, stderr=open(os.path.join(work, "server.stderr"), "w"), env=env, text=True)
boot = addr = None
for line in server.stdout:
    v = json.loads(line)
    if v.get("event") == "bootstrapped":
        boot = v
    if v.get("event") == "listening":
        addr = v["address"]
        break
host, port = addr.replace("http://", "").split(":")
key = boot["api_key"]
reg = json.loads(subprocess.check_output(
    [BIN, "--database-url", db_url, "sandboxes", "register", "--org-id", boot["org_id"],
     "--user-id", boot["user_id"]], env=env))
session = reg["session_api_key"]
conversations = [str(uuid.uuid4()) for _ in range(20)]
created = []  # conversations that exist (an ingest into them was answered 2xx)

stop = threading.Event()
lock = threading.Lock()
samples = {}  # (minute, op) -> [latency seconds]
errors = []
started = time.monotonic()
deadline = started + DURATION


def record(op, seconds):
    if time.monotonic() >= deadline:
        return  # a partial last minute would make a meaningless p99
    minute = int((time.monotonic() - started) // 60)
    with lock:
        samples.setdefault((minute, op), []).append(seconds)


def call(conn, op, method, path, headers, body=None):
    t = time.monotonic()
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    record(op, time.monotonic() - t)
    if not 200 <= r.status < 300:
        errors.append(f"{op}: {r.status} {data[:200]!r}")
        return False
    return True


def worker(fn):
    def run():
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        n = 0
        while not stop.is_set():
            try:
                fn(conn, n)
            except Exception as e:  # noqa: BLE001 - any failure is a soak failure
                errors.append(f"{fn.__name__}: {e!r}")
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
            n += 1
    return threading.Thread(target=run, daemon=True)


def ingest(conn, n):
    conv = conversations[n % len(conversations)]
    now = time.time()
    batch = [{"id": str(uuid.uuid4()),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{i:06d}",
              "source": "agent", "kind": "PauseEvent"} for i in range(5)]
    if call(conn, "ingest", "POST", f"/api/v1/webhooks/events/{conv}",
            {"X-Session-API-Key": session, "Content-Type": "application/json"},
            json.dumps(batch)) and conv not in created:
        with lock:
            created.append(conv)


def search(conn, n):
    if n % 5 == 4:
        call(conn, "sandboxes", "GET", "/api/v1/sandboxes/search", {"X-Access-Token": key})
        return
    with lock:
        conv = random.choice(created)
    call(conn, "search", "GET",
         f"/api/v1/conversation/{conv}/events/search?limit=50&sort_order=TIMESTAMP_DESC",
         {"X-Access-Token": key})


def settings(conn, n):
    call(conn, "settings", "POST", "/api/organizations/app",
         {"X-Access-Token": key, "Content-Type": "application/json"},
         json.dumps({"max_budget_per_task": 10 + n % 7}))


class WebSocket:
    """A minimal websocket client (RFC 6455) over a socket: text frames, ping/pong, close."""

    def __init__(self, path):
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        nonce = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {nonce}\r\n"
                           f"Sec-WebSocket-Version: 13\r\nX-Access-Token: {key}\r\n\r\n").encode())
        self.buf = b""
        head = self._until(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError(f"upgrade refused: {head[:100]!r}")

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("socket closed by the server")
        self.buf += data

    def _until(self, sep):
        while sep not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(sep, 1)
        return head

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        """The next frame as (opcode, payload); socket.timeout when none came in time."""
        b0, b1 = self._take(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._take(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._take(8))[0]
        return b0 & 0x0F, self._take(n)

    def send(self, opcode, payload=b""):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def close(self):
        try:
            self.send(8, struct.pack(">H", 1000))
        except OSError:
            pass
        self.sock.close()


durable_frames = [0]


def subscribe(_conn, _n, resume_at={}):  # noqa: B006 - one dict per process: seqs per conversation
    with lock:
        conv = random.choice(created)
    after = resume_at.get(conv, -1)
    t = time.monotonic()
    ws = WebSocket(f"/sockets/session/{conv}?after_seq={after}")
    try:
        op, data = ws.recv()
        sync = json.loads(data)
        record("ws", time.monotonic() - t)
        if sync.get("type") != "sync" or sync["from_seq"] != after + 1:
            errors.append(f"ws: expected sync from {after + 1}, got {data[:200]!r}")
            return
        expect = after + 1
        ws.sock.settimeout(1)
        end = time.monotonic() + 10
        while time.monotonic() < end and not stop.is_set():
            try:
                op, data = ws.recv()
            except socket.timeout:
                continue
            if op == 9:
                ws.send(10, data)
            elif op == 8:
                errors.append(f"ws: closed by the server: {data[:100]!r}")
                return
            elif op == 1:
                frame = json.loads(data)
                if frame.get("type") == "durable":
                    if frame["seq"] != expect:
                        errors.append(f"ws: {conv} seq {frame['seq']} where {expect} was due")
                        return
                    expect += 1
                    with lock:
                        durable_frames[0] += 1
        resume_at[conv] = expect - 1
    finally:
        ws.close()


def rss_kib():
    with open(f"/proc/{server.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# The searchers start once the first conversation exists.
ingest(http.client.HTTPConnection(host, int(port), timeout=30), 0)
threads = [worker(ingest), worker(ingest), worker(search), worker(search), worker(settings),
           worker(subscribe), worker(subscribe)]
for t in threads:
    t.start()
rss = []  # (minute, KiB) at the end of each minute
next_mark = started + 60
while time.monotonic() < deadline and not errors:
    time.sleep(min(1, max(0, deadline - time.monotonic())))
    if time.monotonic() >= next_mark or time.monotonic() >= deadline:
        rss.append((len(rss), rss_kib()))
        next_mark += 60
stop.set()
for t in threads:
    t.join(timeout=35)
server.terminate()
server.wait(timeout=60)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


ops = ["ingest", "search", "sandboxes", "settings", "ws"]
minutes = sorted({m for m, _ in samples})
print(f"| minute | RSS MiB | " + " | ".join(f"{o} n / p50 / p99 ms" for o in ops) + " |")
print("| --- | --- | " + " | ".join("---" for _ in ops) + " |")
for m in minutes:
    r = dict(rss).get(m)
    cells = []
    for o in ops:
        xs = samples.get((m, o), [])
        cells.append(f"{len(xs)} / {pct(xs, .5) * 1000:.1f} / {pct(xs, .99) * 1000:.1f}")
    print(f"| {m + 1} | {r / 1024 if r else float('nan'):.1f} | " + " | ".join(cells) + " |")

failed = []
if errors:
    failed.append(f"{len(errors)} errors, first: {errors[:3]}")
if len(rss) >= 2 and rss[-1][1] > RSS_GROWTH_LIMIT * rss[0][1]:
    failed.append(f"RSS grew from {rss[0][1]} KiB to {rss[-1][1]} KiB")
if len(minutes) >= 2:
    first, last = minutes[0], minutes[-1]
    for o in ops:
        xa, xb = samples.get((first, o), []), samples.get((last, o), [])
        # A p99 of fewer than P99_MIN_SAMPLES samples is their maximum (one slow sample on a
        # busy machine decides it): such an operation (the websocket resumes, about a dozen a
        # minute) is held to its median instead.
        q = .99 if min(len(xa), len(xb)) >= P99_MIN_SAMPLES else .5
        a, b = pct(xa, q), pct(xb, q)
        if b > P99_DRIFT_LIMIT * max(a, 0.020):
            failed.append(f"{o} p{round(q * 100)} drifted from {a * 1000:.1f} ms to {b * 1000:.1f} ms")
total = sum(len(v) for v in samples.values())
print(f"\n{total} requests and websocket connections in {DURATION:.0f} s, "
      f"{durable_frames[0]} durable frames received in order, {len(errors)} errors")
if failed:
    print("SOAK FAILED: " + "; ".join(failed), file=sys.stderr)
    sys.exit(1)
print("soak ok")
