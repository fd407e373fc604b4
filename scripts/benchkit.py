"""What the sandbox benchmarks share (scripts/bench-grouping.py, scripts/sandbox-memory.py):
a free loopback port, and ending every sandbox a benchmark's server left behind.

Imported by its neighbours (`import benchkit`: a script's own directory is on `sys.path`).
Python 3 standard library only.
"""

import json
import os
import signal
import socket
import sqlite3
import subprocess
import time


def free_port():
    """A port free on 127.0.0.1 now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def listening(out, tries=300):
    """The address and the bootstrapped API key a server printed on its stdout file `out`
    (opened for reading and writing), waiting for its `listening` line (`tries` × 0.1 s)."""
    lines = []
    for _ in range(tries):
        out.seek(0)
        lines = [json.loads(line) for line in out.read().splitlines() if line.strip()]
        if any(line.get("event") == "listening" for line in lines):
            break
        time.sleep(0.1)
    addr = [line for line in lines if line.get("event") == "listening"][0]["address"]
    key = [line for line in lines if line.get("event") == "bootstrapped"][0]["api_key"]
    return addr, key


def end_sandboxes(data, unmount=True):
    """Ends what the server with data directory `data` left running: the process group of
    every sandbox still holding a handle in its SQLite database, the processes that left
    their group but still work below `data` (the terminal tool's tmux server), and, with
    `unmount`, the file systems mounted below it (sandboxes the server's cleanup did not reach).
    """
    db = os.path.join(data, "switchboard.sqlite")
    if os.path.exists(db):
        for (handle,) in sqlite3.connect(db).execute(
                "SELECT handle FROM sandboxes WHERE handle IS NOT NULL"):
            try:
                os.killpg(json.loads(handle)["data"]["pid"], signal.SIGKILL)
            except (OSError, KeyError, ValueError):
                pass
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.readlink(f"/proc/{entry}/cwd").startswith(data):
                os.kill(int(entry), signal.SIGKILL)
        except OSError:
            pass
    if unmount:
        for line in open("/proc/mounts"):
            target = line.split()[1]
            if target.startswith(data + "/"):
                subprocess.run(["umount", "-l", target], stderr=subprocess.DEVNULL)
