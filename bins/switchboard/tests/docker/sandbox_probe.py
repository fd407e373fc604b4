"""What a sandbox's agent tries against what is not its own (issue 18), run inside a sandbox
through its agent server's command API (`POST /api/bash/execute_bash_command`), as an attacker
would. Standard library only (the image's Python). The first argument is a JSON object,
hex-encoded (so that the secrets it names are nowhere in plain text):

  data_paths     Switchboard's data directory and files (database, secret.key, LLM key file)
  secrets        strings that must appear in no file or environment this sandbox can read
                 (another sandbox's session key and file content, Switchboard's variables)
  markers        strings that must appear in no visible process's command line
  repository     an allowed local repository directory (bound read-only)
  other_agent    another sandbox's agent server URL on the Docker network
  refused        "host:port" addresses that must refuse a connection (the Docker host's
                 PostgreSQL, another sandbox's published port, the Docker API)
  pids           how many processes to try to start (0: skip), to hit the pids limit

Prints one JSON object: for each attempt, {"blocked": bool, "detail": "..."}; `blocked` is
true when the attempt failed as it must. Facts the caller asserts otherwise are under "facts".
"""

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request

ARGS = json.loads(bytes.fromhex(sys.argv[1]))
RESULT = {}
FACTS = {}


def attempt(name, action):
    """Runs `action`; an exception (or a falsy result) means the attempt was blocked."""
    try:
        outcome = action()
    except Exception as e:  # noqa: BLE001 - any failure is the expected outcome
        RESULT[name] = {"blocked": True, "detail": f"{type(e).__name__}: {e}"[:300]}
        return
    RESULT[name] = {"blocked": not outcome, "detail": repr(outcome)[:300]}


def read(path):
    with open(path, "rb") as f:
        return f.read(64)


def listdir(path):
    return os.listdir(path)


def run(*command):
    """Runs `command`; its output when it succeeds, else an exception with its words."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=20)
    if done.returncode != 0:
        raise RuntimeError(f"exit {done.returncode}: {(done.stderr or done.stdout).strip()}")
    return done.stdout or "succeeded"


# 1. Switchboard's data directory: database, secret.key, the LLM key file.
for i, path in enumerate(ARGS["data_paths"]):
    attempt(f"read {path}", lambda p=path: listdir(p) if i == 0 else read(p))


# 2. Secrets in any file this sandbox can read (outside /proc, /sys, /dev and the image's
# own read-only software) and in any visible process's environment.
def readable_files():
    roots = ["/workspace", "/tmp", "/home", "/root", "/var", "/run", "/srv", "/mnt", "/etc"]
    for root in roots:
        for base, dirs, files in os.walk(root, onerror=lambda e: None):
            for name in files:
                yield os.path.join(base, name)


def find_secrets_in_files():
    found = []
    for path in readable_files():
        try:
            if os.path.getsize(path) > 4 << 20:
                continue
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        found += [f"{s[:6]}… in {path}" for s in ARGS["secrets"] if s.encode() in data]
    return found


def processes():
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out.append((int(pid), f.read().replace(b"\0", b" ").decode(errors="replace")))
            except OSError:
                pass
    return out


def find_secrets_in_environments():
    found = []
    for pid, _ in processes():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                data = f.read()
        except OSError:
            continue
        found += [f"{s[:6]}… in /proc/{pid}/environ" for s in ARGS["secrets"] if s.encode() in data]
    return found


attempt("find secrets in files", find_secrets_in_files)
attempt("find secrets in process environments", find_secrets_in_environments)

# 3. Processes of others: Switchboard's, another sandbox's; signals to Switchboard's pid.
visible = processes()
FACTS["processes"] = [c[:80] for _, c in visible]
attempt("see another's process", lambda: [c for _, c in visible if any(m in c for m in ARGS["markers"])])


def signal_switchboard():
    pid = ARGS["switchboard_pid"]
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            own = f.read()
    except OSError:
        own = b""
    if own and b"switchboard" not in own:
        return False  # that number is one of this sandbox's own processes
    os.kill(pid, 0)
    return True


attempt("signal Switchboard's pid", signal_switchboard)


# 4. The Docker socket, and the Docker API over TCP.
def docker_socket():
    paths = ["/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock"]
    present = [p for p in paths if os.path.exists(p)]
    with open("/proc/net/unix") as f:
        present += [line.split()[-1] for line in f if "docker" in line or "containerd" in line]
    for p in present:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(2)
        s.connect(p)
        return present
    return []


attempt("reach the Docker socket", docker_socket)


def connect(address):
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=3):
        return address


for address in ARGS["refused"]:
    attempt(f"connect to {address}", lambda a=address: connect(a))

# 5. Privileges: capabilities, setuid, mount, chown of others' files, raw sockets, the root
# filesystem and other users' files.
with open("/proc/self/status") as f:
    status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
FACTS["uid"] = os.getuid()
FACTS["CapEff"] = status.get("CapEff")
FACTS["CapBnd"] = status.get("CapBnd")
FACTS["NoNewPrivs"] = status.get("NoNewPrivs")
FACTS["root_read_only"] = bool(os.statvfs("/").f_flag & os.ST_RDONLY)
attempt("setuid(0)", lambda: os.setuid(0) or True)
attempt("mount a tmpfs", lambda: run("mount", "-t", "tmpfs", "none", "/tmp"))
attempt("unshare a user namespace", lambda: run("unshare", "-r", "true"))
attempt("chown a root file", lambda: os.chown("/etc/hostname", os.getuid(), os.getgid()) or True)
attempt("open a raw socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
# /var/tmp is writable by everyone on a writable root: only a read-only root refuses it.
attempt("write /var/tmp on the root filesystem", lambda: open("/var/tmp/implant", "w").close() or True)
attempt("write under /usr", lambda: open("/usr/local/bin/implant", "w").close() or True)
attempt("write /etc/passwd", lambda: open("/etc/passwd", "a").close() or True)
attempt("write the allowed repository", lambda: open(os.path.join(ARGS["repository"], "implant"), "w").close() or True)


# 6. Another sandbox's agent server over the Docker network (without its session key).
def other_agent():
    try:
        with urllib.request.urlopen(ARGS["other_agent"] + "/api/conversations/search", timeout=5) as r:
            return f"HTTP {r.status}"
    except urllib.error.HTTPError as e:
        FACTS["other_agent_status"] = e.code
        return None


if ARGS.get("other_agent"):
    attempt("reach another sandbox's agent server over the network", other_agent)


# 7. The pids limit: start processes until refused.
def spawn(n):
    children = []
    try:
        for _ in range(n):
            children.append(subprocess.Popen(["sleep", "60"]))
    except OSError as e:
        FACTS["spawned_before_refusal"] = len(children)
        FACTS["spawn_error"] = str(e)
        return None
    finally:
        for c in children:
            c.kill()
            c.wait()
    return f"{n} processes started"


if ARGS["pids"]:
    attempt("start processes beyond the pids limit", lambda: spawn(ARGS["pids"]))

print(json.dumps({"attempts": RESULT, "facts": FACTS}))
