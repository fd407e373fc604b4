#!/usr/bin/env python3
"""Limit and hostile-input probe of a running Switchboard binary (issue 7 §1-§4, issue 13).

For each backend (a SQLite file; a fresh PostgreSQL database, dropped afterwards) it starts
`switchboard serve --bind 127.0.0.1:0` and measures, from outside, over loopback:

1. Memory under unauthenticated bodies (§2). For each target (the webhook
   `POST /api/v1/webhooks/events/<uuid>` with 8 MiB bodies, its limit; `POST
   /api/organizations/app` with 1 MiB bodies, the default limit) and each burst size (64, 200
   concurrent connections, each on a fresh server): the server's RSS (VmRSS of
   /proc/<pid>/status, MiB) at idle, its peak while the bodies are sent (VmHWM, and VmRSS
   sampled every 20 ms),
   once every connection has its answer (still open), and 2 s and 10 s after they all closed;
   plus the status codes the clients got. No credential is sent.
2. Slow clients (§3): a body trickled at 1 byte/s with no key, and headers trickled at
   1 byte/s: how many seconds until the server answers or closes (capped; ">=" when capped).
3. NUL (U+0000) inputs (§1): event text, event id and parent_id in a webhook batch, `GET
   …/events?id=%00` on an existing conversation, a webhook conversation title, and an API key
   name: the status each gets, and for the event text whether it reads back unchanged.
4. The document (§4): the headers of a 405 (is `Allow` there?), and the media type declared for
   `…/events/count` against the one served.

Prints a table per backend (and a combined one at the end). Standard library only.

Usage: limits.py --bin target/release/switchboard [--backends sqlite,postgres]
                 [--pg-url postgres://postgres@127.0.0.1:5432/postgres] [--bursts 64,200]
                 [--slow-cap 90] [--skip-rss] [--skip-slow]
"""

import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

MIB = 1 << 20
WEBHOOK_LIMIT = 8 * MIB
DEFAULT_LIMIT = 1 * MIB


# ------------------------------------------------------------------------------------ server
class Server:
    """A `switchboard serve` child process over one database URL."""

    def __init__(self, binary: str, url: str, log_dir: str, name: str):
        self.binary, self.url = binary, url
        self.stdout_path = os.path.join(log_dir, f"{name}.out")
        self.stderr = open(os.path.join(log_dir, f"{name}.err"), "wb")
        env = dict(os.environ, SWITCHBOARD_LOG="warn")
        self.proc = subprocess.Popen(
            [binary, "serve", "--bind", "127.0.0.1:0", "--database-url", url],
            stdout=open(self.stdout_path, "wb"),
            stderr=self.stderr,
            env=env,
        )
        self.info: dict = {}
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {open(self.stderr.name).read()}")
            for line in open(self.stdout_path):
                try:
                    v = json.loads(line)
                except ValueError:
                    continue
                self.info[v.get("event")] = v
            if "listening" in self.info:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("server did not print its listening line")
        u = urllib.parse.urlparse(self.info["listening"]["address"])
        self.host, self.port = u.hostname, u.port
        boot = self.info.get("bootstrapped") or {}
        self.api_key = boot.get("api_key")
        self.org_id, self.user_id = boot.get("org_id"), boot.get("user_id")

    def rss_mib(self, field: str = "VmRSS") -> float:
        """A memory field of /proc/<pid>/status of the server, MiB: VmRSS (resident now) or
        VmHWM (the peak resident size since the process started)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def session_key(self) -> str:
        """Registers a sandbox (the CLI) and returns its session key."""
        out = subprocess.run(
            [self.binary, "--database-url", self.url, "sandboxes", "register",
             "--org-id", self.org_id, "--user-id", self.user_id],
            check=True, capture_output=True, text=True,
        ).stdout
        return json.loads(out)["session_api_key"]

    def request(self, method: str, path: str, body=None, headers=None, timeout=30):
        """One request; returns (status, headers dict lower-cased, body text)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        h = dict(headers or {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read().decode("utf-8", "replace")
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        conn.close()
        return r.status, hdrs, data

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


# ------------------------------------------------------------------------------ backends
class Backend:
    """A database for one server: a SQLite file or a fresh PostgreSQL database."""

    def __init__(self, kind: str, work: str, pg_url: str, tag: str):
        self.kind, self.pg_url, self.db = kind, pg_url, None
        self.tag = "".join(c if c.isalnum() else "_" for c in tag.lower())
        if kind == "sqlite":
            self.url = f"sqlite://{work}/{self.tag}.sqlite"
        else:
            self.db = f"sb_probe_{os.getpid()}_{self.tag}"
            psql(pg_url, f"CREATE DATABASE {self.db}")
            self.url = pg_url.rsplit("/", 1)[0] + "/" + self.db

    def drop(self):
        if self.db:
            psql(self.pg_url, f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")


def psql(url: str, sql: str):
    subprocess.run(["psql", url, "-qc", sql], check=True, capture_output=True)


# ------------------------------------------------------------------------ §2 body bursts
def burst(server: Server, path: str, size: int, n: int) -> dict:
    """n concurrent unauthenticated POSTs of `size`-byte bodies; RSS before, peak, after."""
    body = b"[" + b" " * (size - 2) + b"]"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
    ).encode()
    statuses: list[str] = []
    lock = threading.Lock()
    answered = threading.Barrier(n + 1)
    release = threading.Event()
    idle = server.rss_mib()

    def client():
        s = None
        status = "error"
        try:
            s = socket.create_connection((server.host, server.port), timeout=120)
            s.sendall(head)
            try:
                s.sendall(body)
            except OSError:
                pass  # the server may answer and close before the body is all sent
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            status = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "closed"
        except OSError as e:
            status = type(e).__name__
        with lock:
            statuses.append(status)
        try:
            answered.wait(300)
        except threading.BrokenBarrierError:
            pass
        release.wait(300)
        if s is not None:
            s.close()

    peak = idle
    threads = [threading.Thread(target=client, daemon=True) for _ in range(n)]
    t0 = time.time()
    for t in threads:
        t.start()
    while True:
        peak = max(peak, server.rss_mib())
        with lock:
            if len(statuses) == n:
                break
        if time.time() - t0 > 300:
            break
        time.sleep(0.02)
    elapsed = time.time() - t0
    try:
        answered.wait(10)
    except threading.BrokenBarrierError:
        pass
    time.sleep(0.5)
    held_open = server.rss_mib()
    # The sampling can miss a short peak; VmHWM cannot (a fresh server per burst).
    peak = max(peak, held_open, server.rss_mib("VmHWM"))
    release.set()
    for t in threads:
        t.join(30)
    time.sleep(2)
    after2 = server.rss_mib()
    time.sleep(8)
    after10 = server.rss_mib()
    counts: dict[str, int] = {}
    for st in statuses:
        counts[st] = counts.get(st, 0) + 1
    return {
        "idle": idle, "peak": peak, "answered_open": held_open, "after_close_2s": after2,
        "after_close_10s": after10, "statuses": counts, "seconds": elapsed,
    }


# ------------------------------------------------------------------------ §3 slow clients
def slow_client(server: Server, cap: float, results: dict, what: str):
    """Trickles a request at 1 byte/s (its body, or its headers); seconds until answer/close."""
    path = f"/api/v1/webhooks/events/{uuid.uuid4()}"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    ).encode()
    s = socket.create_connection((server.host, server.port), timeout=5)
    t0 = time.time()
    outcome = f">= {cap:.0f} s (still open at the cap)"
    try:
        if what == "body":
            s.sendall(head)
            trickle = b"[" + b" " * 998 + b"]"
        else:
            trickle = head
        s.settimeout(1.0)
        for i in range(len(trickle)):
            if time.time() - t0 > cap:
                break
            try:
                s.send(trickle[i : i + 1])
            except OSError as e:
                outcome = f"{time.time() - t0:.1f} s ({type(e).__name__} on send)"
                break
            try:
                data = s.recv(4096)
                if not data:
                    outcome = f"{time.time() - t0:.1f} s (closed, no answer)"
                    break
                status = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "?"
                outcome = f"{time.time() - t0:.1f} s (answered {status})"
                break
            except socket.timeout:
                pass
            except OSError as e:
                outcome = f"{time.time() - t0:.1f} s ({type(e).__name__})"
                break
    finally:
        s.close()
    results[what] = outcome


# ------------------------------------------------------------------------------ §1 NUL
def message_event(text: str, eid: str | None = None, parent: str | None = None) -> dict:
    return {
        "id": eid or str(uuid.uuid4()),
        "timestamp": "2026-11-23T10:00:00",
        "source": "user",
        "parent_id": parent,
        "llm_message": {"role": "user", "content": [{"type": "text", "text": text}]},
        "kind": "MessageEvent",
    }


def nul_checks(server: Server) -> tuple[list[tuple[str, str]], str]:
    """Status of each NUL input (issue 7 §1), and the conversation they went to; the event text
    is also read back."""
    session = server.session_key()
    wh = {"X-Session-API-Key": session}
    key = {"X-Access-Token": server.api_key}
    conv = str(uuid.uuid4())
    rows = []
    st, _, _ = server.request("POST", "/api/v1/webhooks/conversations",
                              {"id": conv, "title": "probe", "execution_status": "idle"}, wh)
    if st != 200:
        rows.append(("setup: webhook conversation", str(st)))
    ok_id = str(uuid.uuid4())
    st, _, body = server.request("POST", f"/api/v1/webhooks/events/{conv}",
                                 [message_event("plain", ok_id)], wh)
    rows.append(("control: plain event", str(st)))

    text_id = str(uuid.uuid4())
    st, _, body = server.request("POST", f"/api/v1/webhooks/events/{conv}",
                                 [message_event("a\u0000b", text_id)], wh)
    readback = ""
    gst, _, gbody = server.request("GET", f"/api/v1/conversation/{conv}/events?id={text_id}",
                                   headers=key)
    if gst == 200:
        try:
            items = json.loads(gbody)
            items = items if isinstance(items, list) else items.get("items", items)
            got = [e for e in items if e and e.get("id") == text_id]
            readback = ("; read back unchanged" if got and
                        got[0]["llm_message"]["content"][0]["text"] == "a\u0000b"
                        else "; not stored" if not got else "; read back CHANGED")
        except (ValueError, KeyError, TypeError, AttributeError):
            readback = f"; read back: {gbody[:80]}"
    rows.append(("webhook event text \\u0000", f"{st} {short(body)}{readback}"))

    good_id = str(uuid.uuid4())
    st, _, body = server.request("POST", f"/api/v1/webhooks/events/{conv}",
                                 [message_event("fine", good_id), message_event("c\u0000d")], wh)
    gst, _, gbody = server.request("GET", f"/api/v1/conversation/{conv}/events?id={good_id}",
                                   headers=key)
    kept = "its other event stored" if gst == 200 and good_id in gbody else "its other event LOST"
    rows.append(("batch of 2, one with \\u0000 text", f"{st}; {kept}"))
    st, _, body = server.request("POST", f"/api/v1/webhooks/events/{conv}",
                                 [message_event("x", "ab\u0000cd")], wh)
    rows.append(("webhook event id \\u0000", f"{st} {short(body)}"))
    st, _, body = server.request("POST", f"/api/v1/webhooks/events/{conv}",
                                 [message_event("x", None, "p\u0000q")], wh)
    rows.append(("webhook event parent_id \\u0000", f"{st} {short(body)}"))
    st, _, body = server.request("GET", f"/api/v1/conversation/{conv}/events?id=%00", headers=key)
    rows.append(("GET …/events?id=%00", f"{st} {short(body)}"))
    st, _, body = server.request("POST", "/api/v1/webhooks/conversations",
                                 {"id": conv, "title": "t\u0000t"}, wh)
    rows.append(("webhook conversation title \\u0000", f"{st} {short(body)}"))
    st, _, body = server.request("POST", "/api/keys", {"name": "k\u0000k"}, key)
    rows.append(("POST /api/keys name \\u0000", f"{st} {short(body)}"))
    return rows, conv


def short(body: str, n: int = 70) -> str:
    body = " ".join(body.split())
    return body if len(body) <= n else body[: n - 1] + "…"


# -------------------------------------------------------------------------- §4 document
def document_checks(server: Server, conv: str) -> list[tuple[str, str]]:
    """405 headers, and the declared against the served media type of `…/events/count` on the
    existing conversation `conv`."""
    rows = []
    for method, path in (("PUT", "/api/keys"), ("TRACE", "/health")):
        st, h, _ = server.request(method, path, headers={"X-Access-Token": server.api_key})
        rows.append((f"{method} {path}", f"{st}; Allow: {h.get('allow', '(absent)')}"))
    st, _, doc = server.request("GET", "/openapi.json")
    spec = json.loads(doc)
    count = spec["paths"]["/api/v1/conversation/{conversation_id}/events/count"]["get"]
    declared = ",".join(count["responses"]["200"].get("content", {}).keys()) or "(none)"
    st, h, _ = server.request("GET", f"/api/v1/conversation/{conv}/events/count",
                              headers={"X-Access-Token": server.api_key})
    rows.append(("…/events/count media type",
                 f"declared {declared}; served {h.get('content-type')} (status {st})"))
    return rows


# ---------------------------------------------------------------------------------- main
def fmt_burst(r: dict) -> str:
    codes = " ".join(f"{k}x{v}" for k, v in sorted(r["statuses"].items()))
    return (f"idle {r['idle']:.0f} | peak {r['peak']:.0f} | answered, open {r['answered_open']:.0f}"
            f" | closed +2s {r['after_close_2s']:.0f} | +10s {r['after_close_10s']:.0f}"
            f" MiB  [{codes}; {r['seconds']:.1f} s]")


def run_backend(kind: str, args, work: str) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    dbs: list[Backend] = []
    servers: list[Server] = []

    def start(tag: str) -> Server:
        db = Backend(kind, work, args.pg_url, tag)
        dbs.append(db)
        s = Server(args.bin, db.url, work, f"{kind}-{db.tag}")
        servers.append(s)
        return s

    try:
        main = start("main")
        slow: dict = {}
        slow_threads = []
        if not args.skip_slow:
            for what in ("body", "headers"):
                t = threading.Thread(target=slow_client, args=(main, args.slow_cap, slow, what))
                t.start()
                slow_threads.append(t)
        nul_rows, conv = nul_checks(main)
        rows += nul_rows
        rows += document_checks(main, conv)
        if not args.skip_rss:
            targets = (
                ("webhook events, 8 MiB", f"/api/v1/webhooks/events/{uuid.uuid4()}", WEBHOOK_LIMIT),
                ("organizations/app, 1 MiB", "/api/organizations/app", DEFAULT_LIMIT),
            )
            for label, path, size in targets:
                for n in args.bursts:
                    s = start(f"{label.split(',')[0]}_{n}")
                    time.sleep(1)
                    r = burst(s, path, size, n)
                    rows.append((f"RSS MiB, {n} x {label}, no key", fmt_burst(r)))
                    s.stop()
        for t in slow_threads:
            t.join()
        for what in ("body", "headers"):
            if what in slow:
                rows.append((f"slow {what} 1 B/s, no key", slow[what]))
    finally:
        for s in servers:
            s.stop()
        for db in dbs:
            db.drop()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--backends", default="sqlite,postgres")
    ap.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--bursts", default="64,200")
    ap.add_argument("--slow-cap", type=float, default=90.0)
    ap.add_argument("--skip-rss", action="store_true")
    ap.add_argument("--skip-slow", action="store_true")
    args = ap.parse_args()
    args.bursts = [int(x) for x in args.bursts.split(",") if x]
    work = tempfile.mkdtemp(prefix="switchboard-probe-")
    results = {}
    try:
        for kind in args.backends.split(","):
            if kind == "postgres" and subprocess.run(
                    ["psql", args.pg_url, "-qAtc", "select 1"], capture_output=True).returncode:
                print(f"== postgres: no server at {args.pg_url}: skipped", file=sys.stderr)
                continue
            print(f"== {kind}", file=sys.stderr, flush=True)
            results[kind] = run_backend(kind, args, work)
            for k, v in results[kind]:
                print(f"   {k:<42} {v}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    kinds = list(results)
    print(f"\n| probe | {' | '.join(kinds)} |")
    print(f"|---|{'---|' * len(kinds)}")
    labels = list(dict.fromkeys(k for kind in kinds for k, _ in results[kind]))
    for label in labels:
        cells = [dict(results[kind]).get(label, "") for kind in kinds]
        print(f"| {label} | {' | '.join(c.replace('|', '/') for c in cells)} |")


if __name__ == "__main__":
    main()
