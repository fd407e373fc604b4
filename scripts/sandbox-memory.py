#!/usr/bin/env python3
"""What sandboxes hold in memory (`just sandbox-memory`; numbers go in docs/benchmarks.md and the
sizing rule in docs/API.md, "Sandbox quotas and host sizing").

Runs `switchboard serve` (SWITCHBOARD_BIN, default target/release/switchboard) over a temporary
SQLite database with the real agent server ($VENV/bin/agent-server, openhands-agent-server
1.58.2; AGENT=standin measures the project's stand-in instead) as the only spec, the fake LLM of
scripts/e2e/fake_llm.py, `--max-running-sandboxes RUNNING` (default 2) and WARM warm-pool
sandboxes (default 1). It starts SANDBOXES sandboxes (argument 1, default 4) one after the
other, each waited for until RUNNING, so the running limit pauses the oldest; starts one
conversation (the fake LLM answers, the agent runs `echo hello` and finishes) in the newest;
lets everything settle, then reads each sandbox's process group from /proc: RSS (VmRSS), PSS and
private memory (smaps_rollup; PSS shares each shared page among the processes mapping it, so
PSS added over sandboxes is what they cost the host together). Also MemAvailable of the host
before and after (other work on the host moves it). Python 3 standard library only. Prints
JSON.
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
BIN = os.environ.get("SWITCHBOARD_BIN", os.path.join(ROOT, "target/release/switchboard"))
STANDIN = os.path.join(ROOT, "crates/testkit/fixtures/standin_agent_server.py")
AGENT = os.environ.get("AGENT", "real")
VENV = os.environ.get("VENV", os.path.join(os.environ.get("TMPDIR", "/tmp"), "agent-server-venv"))
SANDBOXES = int(sys.argv[1]) if len(sys.argv) > 1 else 4
RUNNING = int(os.environ.get("RUNNING", "2"))
WARM = int(os.environ.get("WARM", "1"))
SETTLE = float(os.environ.get("SETTLE", "20"))
MIB = 1024 * 1024




def mem_available():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def group_memory(pgid):
    """RSS, PSS and private bytes of every process of process group `pgid`."""
    rss = pss = private = procs = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
            if int(stat.rsplit(")", 1)[1].split()[2]) != pgid:
                continue
            procs += 1
            for line in open(f"/proc/{entry}/smaps_rollup"):
                name, _, rest = line.partition(":")
                value = rest.split()
                if not value or not value[0].isdigit():
                    continue
                kib = int(value[0]) * 1024
                if name == "Rss":
                    rss += kib
                elif name == "Pss":
                    pss += kib
                elif name in ("Private_Clean", "Private_Dirty"):
                    private += kib
        except (OSError, ValueError, IndexError):
            continue
    return {"processes": procs, "rss_mib": round(rss / MIB, 1), "pss_mib": round(pss / MIB, 1),
            "private_mib": round(private / MIB, 1)}


def main():
    work = tempfile.mkdtemp(prefix="sandbox-memory-")
    port = benchkit.free_port()
    llm = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts/e2e/fake_llm.py"),
                            "--host", "127.0.0.1", "--port", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if AGENT == "real":
        spec = {"id": "agent-server", "command": [os.path.join(VENV, "bin/agent-server")],
                "initial_env": {"LITELLM_LOCAL_MODEL_COST_MAP": "True",
                                "OPENHANDS_SUPPRESS_BANNER": "1", "OH_ENABLE_VSCODE": "false",
                                "OH_ENABLE_VNC": "false", "OH_PRELOAD_TOOLS": "false",
                                "OH_ENABLE_BROWSER": "false"}}
    else:
        spec = {"id": "standin", "command": [sys.executable, STANDIN]}
    specs = os.path.join(work, "specs.json")
    with open(specs, "w") as f:
        json.dump([spec], f)
    data = os.path.join(work, "data")
    out = open(os.path.join(work, "serve.out"), "w+")
    err = open(os.path.join(work, "serve.log"), "w")
    before = mem_available()
    server = subprocess.Popen(
        [BIN, "--data-dir", data, "serve", "--bind", "127.0.0.1:0", "--sandbox-specs", specs,
         "--warm-sandboxes", str(WARM), "--max-running-sandboxes", str(RUNNING),
         "--max-sandboxes-per-user", str(SANDBOXES + 1), "--sandbox-start-timeout", "180",
         "--llm-model", "openai/fake-model", "--llm-base-url", f"http://127.0.0.1:{port}/v1"],
        stdout=out, stderr=err, stdin=subprocess.DEVNULL,
        env=dict(os.environ, LLM_API_KEY="fake-key"))
    try:
        addr, key = benchkit.listening(out)

        def call(path, body=None):
            req = urllib.request.Request(
                addr + path, data=None if body is None else json.dumps(body).encode(),
                method="GET" if body is None else "POST",
                headers={"X-Access-Token": key, "Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=300) as r:
                return json.load(r)

        def wait_status(sid, want, limit=240):
            deadline = time.time() + limit
            while time.time() < deadline:
                if call(f"/api/v1/sandboxes?id={sid}")[0]["status"] == want:
                    return
                time.sleep(0.2)
            raise SystemExit(f"sandbox {sid} not {want}; see {work}")

        ids = []
        for _ in range(SANDBOXES):
            sid = call("/api/v1/sandboxes", {})["id"]
            wait_status(sid, "RUNNING")
            ids.append(sid)
        snaps = call("/api/v1/app-conversations/stream-start", {
            "sandbox_id": ids[-1],
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "say hello"}]}})
        if snaps[-1]["status"] != "READY":
            raise SystemExit(f"the conversation did not start: {snaps[-1]}")
        cid = snaps[-1]["app_conversation_id"]
        deadline = time.time() + 120
        while time.time() < deadline:
            if call(f"/api/v1/app-conversations?ids={cid}")[0].get("execution_status") == "finished":
                break
            time.sleep(0.5)
        time.sleep(SETTLE)
        db = sqlite3.connect(os.path.join(data, "switchboard.sqlite"))
        rows = db.execute("SELECT id, org_id, status, handle FROM sandboxes "
                          "WHERE deleted_at IS NULL AND handle IS NOT NULL").fetchall()
        sandboxes = []
        for sid, org, status, handle in rows:
            pid = json.loads(handle)["data"]["pid"]
            role = "warm pool" if org is None else (
                "ran a conversation" if sid == ids[-1] else "idle")
            sandboxes.append({"id": sid, "status": status, "role": role, **group_memory(pid)})
        after = mem_available()

        def mean(what, status, role=None):
            vals = [s[what] for s in sandboxes if s["status"] == status
                    and (role is None or s["role"] == role)]
            return round(sum(vals) / len(vals), 1) if vals else None

        print(json.dumps({
            "agent": AGENT, "sandboxes": sandboxes,
            "summary": {
                "running_idle_pss_mib": mean("pss_mib", "RUNNING", "idle"),
                "running_idle_rss_mib": mean("rss_mib", "RUNNING", "idle"),
                "paused_pss_mib": mean("pss_mib", "PAUSED"),
                "paused_rss_mib": mean("rss_mib", "PAUSED"),
                "after_a_conversation_pss_mib": mean("pss_mib", "RUNNING", "ran a conversation"),
                "warm_pool_pss_mib": mean("pss_mib", "RUNNING", "warm pool"),
                "all_sandboxes_pss_mib": round(sum(s["pss_mib"] for s in sandboxes), 1),
                "host_mem_available_drop_mib": round((before - after) / MIB, 1),
            },
        }, indent=2))
    finally:
        server.terminate()
        server.wait(timeout=30)
        llm.terminate()
        benchkit.end_sandboxes(data, unmount=False)
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
