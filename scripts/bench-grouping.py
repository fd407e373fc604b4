#!/usr/bin/env python3
"""Sandbox grouping benchmark (`just bench-grouping`; numbers go in docs/benchmarks.md,
"Sandbox grouping: conversations per GiB"). Not a test; never run in CI.

For each strategy (NO_GROUPING, then GROUP_BY_NEWEST), a fresh `switchboard serve`
(SWITCHBOARD_BIN, default target/release/switchboard, built here unless SWITCHBOARD_BIN is
set) over a temporary SQLite database, the process runtime, the real agent server
($VENV/bin/agent-server, openhands-agent-server 1.58.2) as the only spec and the fake LLM of
scripts/e2e/fake_llm.py; no warm pool, limits out of the way:
  1. the bootstrap member's `sandbox_grouping_strategy` set;
  2. N conversations (argument 1, default 4) started one after the other, each without an
     initial message, waited for until READY;
  3. after SETTLE seconds (default 15): "idle", the memory of every sandbox's process tree
     (the sandbox's process and every descendant, by /proc PPid) summed over the sandboxes:
     RSS (VmRSS) and PSS (smaps_rollup: each shared page divided among the processes mapping
     it, so PSS added up is what the sandboxes cost the host together);
  4. one turn in each conversation (send-message `run: echo hello`: the agent runs it and
     finishes), each waited for until `finished`; after SETTLE seconds, "after one turn".
Conversations per GiB = N / (summed PSS in GiB). Python 3 standard library only. Prints JSON.
Usage: scripts/bench-grouping.py [N]
"""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

import benchkit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SWITCHBOARD_BIN")
VENV = os.environ.get("VENV", os.path.join(os.environ.get("TMPDIR", "/tmp"), "agent-server-venv"))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 4
SETTLE = float(os.environ.get("SETTLE", "15"))
STRATEGIES = ["NO_GROUPING", "GROUP_BY_NEWEST"]
MIB = 1024 * 1024
GIB = 1024 * MIB




def children():
    """Parent pid -> child pids, from /proc."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out.setdefault(ppid, []).append(int(entry))
    return out


def tree_memory(pid, kids):
    """RSS and PSS bytes, and the process count, of `pid` and all its descendants."""
    rss = pss = procs = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        todo.extend(kids.get(p, []))
        try:
            for line in open(f"/proc/{p}/smaps_rollup"):
                name, _, rest = line.partition(":")
                value = rest.split()
                if not value or not value[0].isdigit():
                    continue
                if name == "Rss":
                    rss += int(value[0]) * 1024
                elif name == "Pss":
                    pss += int(value[0]) * 1024
            procs += 1
        except OSError:
            continue
    return rss, pss, procs


def measure(db_path):
    """The summed memory of every live sandbox's process tree."""
    db = sqlite3.connect(db_path)
    rows = db.execute("SELECT id, handle FROM sandboxes "
                      "WHERE deleted_at IS NULL AND handle IS NOT NULL").fetchall()
    db.close()
    kids = children()
    rss = pss = procs = 0
    for _, handle in rows:
        r, p, n = tree_memory(json.loads(handle)["data"]["pid"], kids)
        rss, pss, procs = rss + r, pss + p, procs + n
    return {"sandboxes": len(rows), "processes": procs, "rss_mib": round(rss / MIB, 1),
            "pss_mib": round(pss / MIB, 1),
            "conversations_per_gib_pss": round(N / (pss / GIB), 2) if pss else None,
            "conversations_per_gib_rss": round(N / (rss / GIB), 2) if rss else None}


def run_strategy(strategy, work, llm_port):
    spec = {"id": "agent-server", "command": [os.path.join(VENV, "bin/agent-server")],
            "initial_env": {"LITELLM_LOCAL_MODEL_COST_MAP": "True",
                            "OPENHANDS_SUPPRESS_BANNER": "1", "OH_ENABLE_VSCODE": "false",
                            "OH_ENABLE_VNC": "false", "OH_PRELOAD_TOOLS": "false",
                            "OH_ENABLE_BROWSER": "false"}}
    specs = os.path.join(work, f"specs-{strategy}.json")
    with open(specs, "w") as f:
        json.dump([spec], f)
    data = os.path.join(work, f"data-{strategy}")
    out = open(os.path.join(work, f"serve-{strategy}.out"), "w+")
    err = open(os.path.join(work, f"serve-{strategy}.log"), "w")
    server = subprocess.Popen(
        [BIN, "--data-dir", data, "serve", "--bind", "127.0.0.1:0", "--sandbox-specs", specs,
         "--warm-sandboxes", "0", "--max-running-sandboxes", "1000",
         "--max-sandboxes-per-user", "1000", "--sandbox-start-timeout", "180",
         "--llm-model", "openai/fake-model", "--llm-base-url", f"http://127.0.0.1:{llm_port}/v1",
         # The fake LLM listens on the host's loopback, out of a sandbox's own network.
         "--sandbox-host-port", str(llm_port)],
        stdout=out, stderr=err, stdin=subprocess.DEVNULL,
        env=dict(os.environ, LLM_API_KEY="fake-key"))
    try:
        addr, key = benchkit.listening(out)

        def call(path, body=None, method=None):
            req = urllib.request.Request(
                addr + path, data=None if body is None else json.dumps(body).encode(),
                method=method or ("GET" if body is None else "POST"),
                headers={"X-Access-Token": key, "Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=300) as r:
                return json.load(r)

        def wait(check, what, limit=240):
            deadline = time.time() + limit
            while time.time() < deadline:
                if check():
                    return
                time.sleep(0.2)
            raise SystemExit(f"{strategy}: {what} timed out; see {work}")

        call("/api/v1/settings", {"sandbox_grouping_strategy": strategy})
        conversations, started = [], time.time()
        for _ in range(N):
            snaps = call("/api/v1/app-conversations/stream-start", {})
            if snaps[-1]["status"] != "READY":
                raise SystemExit(f"{strategy}: the start failed: {snaps[-1]}")
            conversations.append(snaps[-1]["app_conversation_id"])
        start_s = time.time() - started
        time.sleep(SETTLE)
        db = os.path.join(data, "switchboard.sqlite")
        idle = measure(db)
        for cid in conversations:
            call(f"/api/v1/app-conversations/{cid}/send-message",
                 {"role": "user", "content": [{"type": "text", "text": "run: echo hello"}],
                  "run": True})
        for cid in conversations:
            wait(lambda: call(f"/api/v1/app-conversations?ids={cid}")[0].get(
                "execution_status") == "finished", f"the turn of {cid}")
        time.sleep(SETTLE)
        turned = measure(db)
        # Deleted through the API, so that the server's cleanup stops them and releases their
        # file systems (a confined sandbox's is a mounted image).
        for (sid,) in sqlite3.connect(db).execute(
                "SELECT id FROM sandboxes WHERE deleted_at IS NULL").fetchall():
            call(f"/api/v1/sandboxes/{sid}", method="DELETE")
        wait(lambda: sqlite3.connect(db).execute(
            "SELECT count(*) FROM sandboxes WHERE handle IS NOT NULL").fetchone()[0] == 0,
            "the sandboxes' cleanup", 120)
        return {"conversations": N, "starts_s": round(start_s, 1), "idle": idle,
                "after_one_turn": turned}
    finally:
        server.terminate()
        server.wait(timeout=30)
        benchkit.end_sandboxes(data)


def main():
    global BIN
    if BIN is None:
        subprocess.run(["cargo", "build", "--release", "-p", "switchboard"], cwd=ROOT,
                       check=True, env=dict(os.environ, CARGO_INCREMENTAL="0"))
        BIN = os.path.join(ROOT, "target/release/switchboard")
    if not os.path.exists(os.path.join(VENV, "bin/agent-server")):
        sys.exit(f"no agent server in {VENV} (scripts/e2e.sh prepare makes it)")
    work = tempfile.mkdtemp(prefix="bench-grouping-")
    port = benchkit.free_port()
    llm = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts/e2e/fake_llm.py"),
                            "--host", "127.0.0.1", "--port", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        result = {"binary": BIN, "settle_s": SETTLE}
        for strategy in STRATEGIES:
            result[strategy] = run_strategy(strategy, work, port)
        print(json.dumps(result, indent=2))
    finally:
        llm.terminate()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
