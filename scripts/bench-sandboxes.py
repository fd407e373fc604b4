#!/usr/bin/env python3
"""Sandbox benchmark (`just bench-sandboxes`; numbers go in docs/benchmarks.md).

Runs `switchboard serve` (SWITCHBOARD_BIN, default target/release/switchboard) over a temporary
SQLite database with the stand-in agent server as the default spec and a warm pool, then:

1. warm starts: 50 x POST /api/v1/sandboxes, each answered RUNNING from the warm pool (the
   script waits for a ready pool sandbox before each start); latency p50/p99;
2. 50 more sandboxes of a spec whose command does not exist (ERROR at once), so the owner has
   100; then GET /api/v1/sandboxes/search?limit=100 500 times: latency p50/p99 (the statuses
   come from the database: no agent server is called on the request path);
3. RSS of the Switchboard process supervising the 50 running stand-ins (after a few
   reconciliation passes), and the RSS of the sandboxes' own processes per running sandbox
   (the stand-in, and when confined its bwrap and namespace init).

PROCESS_ISOLATION=none runs the sandboxes unconfined (`--process-isolation`, default bwrap).
Python 3 standard library only. Prints a JSON summary.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SWITCHBOARD_BIN", os.path.join(ROOT, "target/release/switchboard"))
STANDIN = os.path.join(ROOT, "crates/testkit/fixtures/standin_agent_server.py")
WARM = int(os.environ.get("WARM", "5"))
STARTS = int(os.environ.get("STARTS", "50"))
SEARCHES = int(os.environ.get("SEARCHES", "500"))
ISOLATION = os.environ.get("PROCESS_ISOLATION", "bwrap")


def sandbox_rss_kib(work):
    """The summed RSS of the processes that belong to sandboxes under `work`: running in a
    sandbox's directory, or naming one on their command line (bwrap and its init)."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
            status = open(f"/proc/{pid}/status").read()
        except OSError:
            continue
        if cwd.startswith(work + "/data/sandboxes") or (work + "/data/sandboxes") in cmd:
            m = re.search(r"^VmRSS:\s+(\d+)", status, re.M)
            total += int(m.group(1)) if m else 0
    return total


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    work = tempfile.mkdtemp(prefix="bench-sandboxes-")
    specs = os.path.join(work, "specs.json")
    with open(specs, "w") as f:
        json.dump([
            {"id": "standin", "command": [sys.executable, STANDIN]},
            {"id": "broken", "command": ["no-such-program-xyz"]},
        ], f)
    out = open(os.path.join(work, "serve.out"), "w+")
    err = open(os.path.join(work, "serve.log"), "w")
    server = subprocess.Popen(
        [BIN, "--data-dir", os.path.join(work, "data"), "serve", "--bind", "127.0.0.1:0",
         "--sandbox-specs", specs, "--warm-sandboxes", str(WARM),
         "--max-running-sandboxes", "1000", "--max-sandboxes-per-user", "1000",
         "--process-isolation", ISOLATION],
        stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    try:
        for _ in range(300):
            out.seek(0)
            lines = [json.loads(l) for l in out.read().splitlines() if l.strip()]
            if any(l.get("event") == "listening" for l in lines):
                break
            time.sleep(0.1)
        addr = [l for l in lines if l.get("event") == "listening"][0]["address"]
        key = [l for l in lines if l.get("event") == "bootstrapped"][0]["api_key"]

        def call(method, path):
            req = urllib.request.Request(addr + path, method=method,
                                         headers={"X-Access-Token": key})
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.load(r)

        def warm_ready():
            with urllib.request.urlopen(addr + "/metrics", timeout=10) as r:
                m = re.search(r"^sandbox_warm_pool_ready (\d+)", r.read().decode(), re.M)
            return int(m.group(1)) if m else 0

        def wait(check, limit=120):
            deadline = time.time() + limit
            while time.time() < deadline:
                if check():
                    return
                time.sleep(0.02)
            raise SystemExit("timed out; see " + work)

        wait(lambda: warm_ready() >= WARM)
        warm, cold_answers = [], 0
        for _ in range(STARTS):
            wait(lambda: warm_ready() >= 1)
            t = time.perf_counter()
            s = call("POST", "/api/v1/sandboxes")
            elapsed = (time.perf_counter() - t) * 1000
            if s["status"] == "RUNNING":
                warm.append(elapsed)
            else:
                cold_answers += 1  # the pool was empty after all (the gauge lags a claim)
            time.sleep(0.25)  # the claim wakes the pool job, which updates the gauge
        for _ in range(100 - STARTS):
            call("POST", "/api/v1/sandboxes?sandbox_spec_id=broken")
        time.sleep(8)  # a few reconciliation passes over everything
        page = call("GET", "/api/v1/sandboxes/search?limit=100")
        statuses = {}
        for item in page["items"]:
            statuses[item["status"]] = statuses.get(item["status"], 0) + 1
        search = []
        for _ in range(SEARCHES):
            t = time.perf_counter()
            call("GET", "/api/v1/sandboxes/search?limit=100")
            search.append((time.perf_counter() - t) * 1000)
        with open(f"/proc/{server.pid}/status") as f:
            rss_kib = int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1))
        running = statuses.get("RUNNING", 0) + WARM
        print(json.dumps({
            "binary": BIN,
            "process_isolation": ISOLATION,
            "warm_pool": WARM,
            "warm_start_ms": {"n": len(warm), "not_from_pool": cold_answers, "p50": round(pct(warm, 50), 2),
                               "p99": round(pct(warm, 99), 2), "max": round(max(warm), 2)},
            "search_100_ms": {"n": len(search), "items": len(page["items"]),
                              "statuses": statuses, "p50": round(pct(search, 50), 2),
                              "p99": round(pct(search, 99), 2),
                              "mean": round(statistics.mean(search), 2)},
            "rss_mib_with_running_sandboxes": {"running": running,
                                               "rss_mib": round(rss_kib / 1024, 1)},
            "sandbox_rss_mib_per_running": round(sandbox_rss_kib(work) / 1024 / max(running, 1), 2),
        }, indent=2))
        for item in call("GET", "/api/v1/sandboxes/search?limit=100")["items"]:
            call("DELETE", f"/api/v1/sandboxes/{item['id']}")
        time.sleep(3)
    finally:
        server.terminate()
        server.wait(timeout=30)
        # The warm pool (and anything not yet cleaned up) outlives Switchboard by design.
        import sqlite3
        db = os.path.join(work, "data", "switchboard.sqlite")
        for (handle,) in sqlite3.connect(db).execute(
                "SELECT handle FROM sandboxes WHERE handle IS NOT NULL"):
            pid = json.loads(handle)["data"]["pid"]
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if STANDIN.encode() in f.read():
                        os.killpg(pid, 9)
            except (OSError, ProcessLookupError):
                pass


if __name__ == "__main__":
    main()
