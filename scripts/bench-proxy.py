#!/usr/bin/env python3
"""The sandbox proxy's cost (issue 22): proxied versus direct, same request, same run.

Starts `switchboard serve` (the binary given, default target/release/switchboard) over a fresh
SQLite database with the stand-in agent server as its sandbox spec, starts one sandbox, and
measures against that sandbox's agent server, once directly (its own loopback port, found in
Switchboard's database) and once through Switchboard (`/sandboxes/{id}/agent_server`, with the
session key):

  * HTTP: `GET /alive` with wrk (closed loop, C connections, S seconds each): requests/s and
    the p50/p90/p99 latency wrk reports; the difference is the proxy's overhead;
  * a 100 MiB download (`/standin/blob/104857600`) with curl, 3 runs each: throughput, and the
    proxied run's share of the direct one;
  * websocket frames: N echo round trips (`echo:` text frames) on one socket, direct and
    proxied: median and p99 round trip;
  * idle websockets: W sockets opened through the proxy and left idle; Switchboard's RSS
    before and after, per socket;
  * an exposed worker (issue 22: the spec exposes WORKER_1): `python3 -m http.server
    "$WORKER_1"` started in the sandbox, `GET` of a small file with wrk and a 100 MiB file with
    curl, directly (the worker's loopback port, from the runtime handle) and through
    `/sandboxes/{id}/worker_1`.

Needs wrk and curl. Prints one report (Markdown lines) for docs/benchmarks.md.

Usage: scripts/bench-proxy.py [--bin PATH] [--seconds S] [--connections C] [--sockets W]
"""

import argparse
import base64
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STANDIN = os.path.join(ROOT, "crates/testkit/fixtures/standin_agent_server.py")


def http(method, url, key=None, body=None, session=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    if key:
        req.add_header("X-Access-Token", key)
    if session:
        req.add_header("X-Session-API-Key", session)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wrk(url, session, seconds, connections):
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-H", f"X-Session-API-Key: {session}", url],
        capture_output=True, text=True, check=True).stdout
    rps = next(l.split()[1] for l in out.splitlines() if l.startswith("Requests/sec"))
    lat = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("50%", "90%", "99%"):
            lat[parts[0]] = parts[1]
    errors = [l.strip() for l in out.splitlines() if "Non-2xx" in l or "Socket errors" in l]
    return float(rps), lat, errors


def curl_speed(url, session):
    out = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download} %{size_download}", "-H", f"X-Session-API-Key: {session}", url],
        capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), int(out[1])


class Ws:
    """A minimal RFC 6455 client: masked text frames out, unmasked in."""

    def __init__(self, host, port, path, session):
        self.s = socket.create_connection((host, port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                        f"X-Session-API-Key: {session}\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(4096)
            if not chunk:
                raise OSError("closed during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError(head.split(b"\r\n")[0].decode())
        self.buf = head.split(b"\r\n\r\n", 1)[1]

    def send_text(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big"))
        self.s.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise OSError("closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv_text(self):
        head = self._read(2)
        n = head[1] & 0x7F
        if n == 126:
            n = int.from_bytes(self._read(2), "big")
        elif n == 127:
            n = int.from_bytes(self._read(8), "big")
        return self._read(n).decode()


def round_trips(host, port, path, session, count):
    ws = Ws(host, port, path, session)
    times = []
    for i in range(count):
        t = time.perf_counter()
        ws.send_text(f"echo:{i}")
        got = ws.recv_text()
        times.append((time.perf_counter() - t) * 1e3)
        assert got == f"echo:{i}", got
    ws.s.close()
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def worker(db, info, session, agent, args):
    """The WORKER_1 rows: a real HTTP server in the sandbox, direct and through the proxy."""
    proxied = next(u["url"] for u in info["exposed_urls"] if u["name"] == "WORKER_1")
    with sqlite3.connect(db) as c:
        handle = json.loads(c.execute("SELECT handle FROM sandboxes WHERE handle IS NOT NULL").fetchone()[0])
    direct = next(s["url"] for s in handle["services"] if s["service"] == "WORKER_1")
    command = (f"mkdir -p site && echo hello > site/hello.txt && head -c {100 << 20} /dev/zero > site/blob && "
               f"nohup {sys.executable} -m http.server \"$WORKER_1\" --bind 127.0.0.1 --directory site "
               f"> worker.log 2>&1 &")
    http("POST", f"{agent}/api/bash/execute_bash_command", session=session,
         body={"command": command, "cwd": None, "timeout": 60})
    for _ in range(100):
        try:
            urllib.request.urlopen(f"{direct}/hello.txt", timeout=2).read()
            break
        except OSError:
            time.sleep(0.1)
    print(f"\nWORKER_1 (python3 -m http.server in the sandbox): direct {direct}; proxied {proxied}")
    rows = {name: wrk(f"{url}/hello.txt", session, args.seconds, args.connections)
            for name, url in (("direct", direct), ("proxied", proxied))}
    print(f"GET /hello.txt, wrk, {args.connections} connections, {args.seconds} s each:")
    print("| path | requests/s | p50 | p90 | p99 | errors |\n| --- | --- | --- | --- | --- | --- |")
    for name, (rps, lat, errors) in rows.items():
        print(f"| {name} | {rps:.0f} | {lat.get('50%')} | {lat.get('90%')} | {lat.get('99%')} | {'; '.join(errors) or 'none'} |")
    speeds = {}
    for name, url in (("direct", direct), ("proxied", proxied)):
        runs = []
        for _ in range(3):
            speed, got = curl_speed(f"{url}/blob", session)
            assert got == 100 << 20, got
            runs.append(speed)
        speeds[name] = statistics.median(runs)
    print("100 MiB file from the worker, curl, median of 3:")
    for name, s in speeds.items():
        print(f"- {name}: {s / (1 << 20):.0f} MiB/s")
    print(f"- proxied / direct: {speeds['proxied'] / speeds['direct'] * 100:.0f} %")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "target/release/switchboard"))
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--sockets", type=int, default=1000)
    p.add_argument("--frames", type=int, default=2000)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="bench-proxy-")
    specs = os.path.join(work, "specs.json")
    with open(specs, "w") as f:
        json.dump([{"id": "standin", "command": [sys.executable, STANDIN],
                    "exposed_services": ["WORKER_1"]}], f)
    db = os.path.join(work, "switchboard.sqlite")
    out = open(os.path.join(work, "out"), "w+")
    err = open(os.path.join(work, "err"), "w")
    server = subprocess.Popen(
        [args.bin, "serve", "--bind", "127.0.0.1:0", "--database-url", f"sqlite://{db}", "--data-dir", work,
         "--sandbox-specs", specs, "--workers", "2"],
        stdout=out, stderr=err, env={**os.environ, "SWITCHBOARD_LOG": "warn"})
    try:
        for _ in range(200):
            out.seek(0)
            lines = [json.loads(l) for l in out.read().splitlines() if l.strip()]
            if any(l.get("event") == "listening" for l in lines):
                break
            time.sleep(0.1)
        key = next(l["api_key"] for l in lines if l.get("event") == "bootstrapped")
        base = next(l["address"] for l in lines if l.get("event") == "listening")
        sid = http("POST", f"{base}/api/v1/sandboxes", key)["id"]
        for _ in range(300):
            info = http("GET", f"{base}/api/v1/sandboxes?id={sid}", key)[0]
            if info["status"] == "RUNNING":
                break
            time.sleep(0.1)
        session = info["session_api_key"]
        proxied = info["exposed_urls"][0]["url"]
        with sqlite3.connect(db) as c:
            direct = c.execute("SELECT agent_server_url FROM sandboxes WHERE agent_server_url IS NOT NULL").fetchone()[0]
        load = os.getloadavg()
        print(f"# bench-proxy {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; {os.cpu_count()} CPUs; "
              f"load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; binary {args.bin}")
        print(f"direct {direct}; proxied {proxied}")
        rows = {}
        for name, url in (("direct", direct), ("proxied", proxied)):
            rows[name] = wrk(f"{url}/alive", session, args.seconds, args.connections)
        print(f"\nHTTP GET /alive, wrk, {args.connections} connections, {args.seconds} s each:")
        print("| path | requests/s | p50 | p90 | p99 | errors |\n| --- | --- | --- | --- | --- | --- |")
        for name, (rps, lat, errors) in rows.items():
            print(f"| {name} | {rps:.0f} | {lat.get('50%')} | {lat.get('90%')} | {lat.get('99%')} | {'; '.join(errors) or 'none'} |")

        size = 100 << 20
        speeds = {}
        for name, url in (("direct", direct), ("proxied", proxied)):
            runs = []
            for _ in range(3):
                speed, got = curl_speed(f"{url}/standin/blob/{size}", session)
                assert got == size, got
                runs.append(speed)
            speeds[name] = statistics.median(runs)
        print("\n100 MiB download, curl, median of 3:")
        for name, s in speeds.items():
            print(f"- {name}: {s / (1 << 20):.0f} MiB/s")
        print(f"- proxied / direct: {speeds['proxied'] / speeds['direct'] * 100:.0f} %")

        conv = "0" * 32
        print(f"\nWebsocket echo round trips, {args.frames} on one socket:")
        for name, url in (("direct", direct), ("proxied", proxied)):
            host_port, _, prefix = url.split("://", 1)[1].partition("/")
            host, port = host_port.split(":")
            path = f"/{prefix}/sockets/events/{conv}" if prefix else f"/sockets/events/{conv}"
            med, p99 = round_trips(host, int(port), path, session, args.frames)
            print(f"- {name}: median {med:.3f} ms, p99 {p99:.3f} ms")

        before = rss_kib(server.pid)
        host_port, _, prefix = proxied.split("://", 1)[1].partition("/")
        host, port = host_port.split(":")
        sockets = []
        for i in range(args.sockets):
            sockets.append(Ws(host, int(port), f"/{prefix}/sockets/events/{conv}", session))
        time.sleep(2)
        after = rss_kib(server.pid)
        print(f"\nIdle proxied websockets: {args.sockets}; Switchboard RSS {before} KiB -> {after} KiB: "
              f"{(after - before) / args.sockets:.1f} KiB per socket (client side and upstream side together)")
        for s in sockets:
            s.s.close()

        worker(db, info, session, proxied, args)
        print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    finally:
        server.terminate()
        server.wait(timeout=30)
        # The sandbox outlives Switchboard by design: end the processes working in this run's
        # directory (the sandbox it started), by pid.
        subprocess.run(["bash", "-c", f"for p in /proc/[0-9]*; do case $(readlink $p/cwd) in {work}*) kill -9 ${{p#/proc/}};; esac; done"], check=False)


if __name__ == "__main__":
    main()
