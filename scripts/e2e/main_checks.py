#!/usr/bin/env python3
"""The app-conversation lifecycle checks of `just e2e-main` (run by scripts/demo.sh after the
first run of the conversation reached `finished`), in order:

  1. GET /api/v1/app-conversations?ids= reports `execution_status` `finished`;
  2. POST /api/v1/app-conversations/{id}/send-message runs the agent again: new agent events
     arrive and a new `execution_status` = `finished`;
  3. the conversation is in /api/v1/app-conversations/search and counted by /count;
  4. POST /api/v1/sandboxes/{id}/pause -> `PAUSED`; /resume -> `RUNNING` again;
  5. DELETE /api/v1/app-conversations/{id} -> gone from the API, and the sandbox's agent-server
     process, its whole process group and its tmux server (which leaves the group) end.

Usage: main_checks.py BASE_URL API_KEY TASK_ID SQLITE_PATH [TIMEOUT_SECONDS]
Exits non-zero with a "CHECK FAILED: ..." line on the first failed check.
"""

import json
import os
import sqlite3
import sys
import time
import urllib.error
import urllib.request

BASE, KEY, TASK_ID, DB = sys.argv[1:5]
TIMEOUT = float(sys.argv[5]) if len(sys.argv) > 5 else 120.0


def call(method, path, body=None):
    """One request with the API key; returns (status, parsed JSON body or None)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method,
                                 headers={"X-Access-Token": KEY, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, (json.loads(raw) if raw else None)


def ok(method, path, body=None):
    status, out = call(method, path, body)
    if status != 200:
        fail(f"{method} {path} answered {status}: {out}")
    return out


def fail(msg):
    sys.exit(f"CHECK FAILED: {msg}")


def wait(what, cond, timeout=TIMEOUT):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.3)
    fail(f"timed out waiting for {what}")


def events(cid):
    items, page = [], None
    while True:
        q = f"/api/v1/conversation/{cid}/events/search?limit=100&sort_order=TIMESTAMP"
        out = ok("GET", q + (f"&page_id={page}" if page else ""))
        items += out["items"]
        page = out.get("next_page_id")
        if not page:
            return items


task = ok("GET", f"/api/v1/app-conversations/start-tasks?ids={TASK_ID}")[0]
cid, sid = task["app_conversation_id"], task["sandbox_id"]
hex_cid = cid.replace("-", "")

# 1. the batch get reports the finished run
conv = ok("GET", f"/api/v1/app-conversations?ids={cid}")[0]
if conv is None or conv.get("execution_status") != "finished":
    fail(f"GET ?ids= execution_status is {conv and conv.get('execution_status')!r}, not 'finished'")
print(f"1. GET /api/v1/app-conversations?ids=: execution_status = finished (sandbox {sid})")

# 2. a second message runs the agent again
before = {e["id"] for e in events(cid)}
sent = ok("POST", f"/api/v1/app-conversations/{cid}/send-message",
          {"role": "user", "content": [{"type": "text", "text": "say hello again"}]})
if sent.get("success") is not True:
    fail(f"send-message answered {sent}")


def second_run_finished():
    new = [e for e in events(cid) if e["id"] not in before]
    agent = [e for e in new if e.get("source") == "agent"]
    statuses = [e.get("value") for e in new if e.get("key") == "execution_status"]
    return (agent and statuses and statuses[-1] == "finished") and (new, agent)


new, agent = wait("the second run to finish", second_run_finished)
conv = ok("GET", f"/api/v1/app-conversations?ids={cid}")[0]
if conv.get("execution_status") != "finished":
    fail(f"after the second run execution_status is {conv.get('execution_status')!r}")
print(f"2. send-message: {len(new)} new events ({len(agent)} from the agent), finished again")

# 3. listed and counted
found = ok("GET", "/api/v1/app-conversations/search?limit=100")
ids = [c["id"].replace("-", "") for c in found["items"]]
count = ok("GET", "/api/v1/app-conversations/count")
if hex_cid not in ids or count != len(ids) or count < 1:
    fail(f"search/count: {ids} count {count}")
print(f"3. search lists the conversation, count = {count}")


# 4. pause and resume its sandbox
def sandbox_status():
    return ok("GET", f"/api/v1/sandboxes?id={sid}")[0]["status"]


ok("POST", f"/api/v1/sandboxes/{sid}/pause")
wait("PAUSED", lambda: sandbox_status() == "PAUSED")
ok("POST", f"/api/v1/sandboxes/{sid}/resume")
wait("RUNNING after resume", lambda: sandbox_status() == "RUNNING")
print("4. sandbox paused (PAUSED) and resumed (RUNNING)")

# 5. delete: gone from the API, the agent server's process group ends
row = None
for key in (sid, sid.replace("-", "")):
    row = row or sqlite3.connect(DB).execute(
        "SELECT handle FROM sandboxes WHERE id = ?", (key,)).fetchone()
if not row or not row[0]:
    fail(f"no process handle stored for sandbox {sid}")
handle = json.loads(row[0])
pid = handle["data"]["pid"]
ok("DELETE", f"/api/v1/app-conversations/{cid}")
if ok("GET", f"/api/v1/app-conversations?ids={cid}") != [None]:
    fail("a deleted conversation is still returned by GET ?ids=")
if call("GET", f"/api/v1/conversation/{cid}/events/search")[0] != 404:
    fail("the events of a deleted conversation are still served")


def live_in_group():
    """Pids (not zombies) whose process group is the agent server's."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            rest = open(f"/proc/{p}/stat").read().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if rest[0] != "Z" and int(rest[2]) == pid:
            out.append(int(p))
    return out


def live_in_sandbox_dir():
    """Live pids whose command line names the sandbox's directory: the agent server's tmux
    server leaves its process group (it daemonizes) but starts its sessions there."""
    needle = f"/sandboxes/{sid}/".encode()
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            cmd = open(f"/proc/{p}/cmdline", "rb").read()
            state = open(f"/proc/{p}/stat").read().rsplit(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if needle in cmd and state != "Z":
            out.append(int(p))
    return out


wait(f"the process group {pid} to end", lambda: not live_in_group())
wait("the sandbox's tmux server to end", lambda: not live_in_sandbox_dir())
print(f"5. DELETE: conversation and events gone, agent-server process group {pid} ended, "
      "no process left in the sandbox's directory (tmux server included)")
print("SWITCHBOARD E2E MAIN LIFECYCLE: PASS")
