#!/usr/bin/env python3
"""Docker runtime benchmark (`just bench-docker-sandboxes`; numbers go in docs/benchmarks.md,
"Docker runtime", next to the process runtime's figures).

Needs a Docker daemon and the image `switchboard/agent-server:local`
(scripts/ci-docker.sh builds both). Runs `switchboard serve` (SWITCHBOARD_BIN, default
target/release/switchboard) over a temporary SQLite database with `--sandbox-runtime docker`,
an installation id of its own and a warm pool of WARM containers of the image, then:

1. cold starts: COLD x POST /api/v1/sandboxes of a spec the pool does not hold (the same image
   under a second tag, `switchboard/agent-server:bench-cold`), one at a time; time from the
   request to `RUNNING` in the API (polled every 50 ms): Docker's container start plus the
   agent server's own start-up;
2. warm-pool claims: CLAIMS x POST /api/v1/sandboxes of the default spec, each waiting first
   for a ready pool container; the answer is `RUNNING` at once (latency of the request);
3. a search over 100 Docker-runtime sandboxes: the running ones above plus sandboxes of a spec
   whose image is not on the host (`ERROR` at once), so the owner has 100; then
   GET /api/v1/sandboxes/search?limit=100 SEARCHES times (statuses come from the database:
   no Docker or agent-server call on the request path).

4. idle memory: IDLE_WAIT seconds after the last claim, the memory of each running container
   of the run: `docker stats` (the container's cgroup, less its inactive file cache) and the
   cgroup's anonymous plus shared memory (memory.stat); under gVisor the cgroup also holds the
   sandbox kernel and its gofer, and the guest's memory is the kernel's shared memory.

OCI_RUNTIME=runsc runs every container under that OCI runtime (`--docker-oci-runtime`, issue
18; the daemon must have it: scripts/ci-docker.sh registers runsc). SANDBOX_NETWORK=host
loads no egress rules on the bridge (`--sandbox-network host`; default isolated: as root, the
rules of issue 33 are loaded before each container starts), for a before/after of their cost.

Everything of the run's installation is removed at the end (containers and volumes), also on
failure. Python 3 standard library only. Prints a JSON summary.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SWITCHBOARD_BIN", os.path.join(ROOT, "target/release/switchboard"))
IMAGE = os.environ.get("AGENT_SERVER_IMAGE", "switchboard/agent-server:local")
COLD_IMAGE = "switchboard/agent-server:bench-cold"
ABSENT = "switchboard/absent-image:none"
WARM = int(os.environ.get("WARM", "2"))
COLD = int(os.environ.get("COLD", "5"))
CLAIMS = int(os.environ.get("CLAIMS", "8"))
SEARCHES = int(os.environ.get("SEARCHES", "300"))
OCI_RUNTIME = os.environ.get("OCI_RUNTIME", "")
SANDBOX_NETWORK = os.environ.get("SANDBOX_NETWORK", "isolated")
IDLE_WAIT = float(os.environ.get("IDLE_WAIT", "20"))


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def docker(*args):
    return subprocess.run(["docker", *args], capture_output=True, text=True)


def mib(text):
    """`123.4MiB` / `1.2GiB` / `900KiB` (docker stats) in MiB."""
    m = re.match(r"([\d.]+)\s*([KMG]i?B)", text)
    value, unit = float(m.group(1)), m.group(2)
    return value * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}.get(unit, 1)


def cgroup_memory_mib(container_id):
    """Anonymous plus shared memory of a container's cgroup: `total_rss` + `total_shmem` of
    cgroup v1's memory.stat (cgroupfs driver), or `anon` + `shmem` of cgroup v2's; None when
    neither is found. Under gVisor the guest's memory is shared memory of the sandbox kernel
    (its own anonymous memory is about 25 MiB), so anonymous memory alone would miss it."""
    for path, keys in ((f"/sys/fs/cgroup/memory/docker/{container_id}/memory.stat",
                        ("total_rss", "total_shmem")),
                       (f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/memory.stat",
                        ("anon", "shmem")),
                       (f"/sys/fs/cgroup/docker/{container_id}/memory.stat", ("anon", "shmem"))):
        try:
            with open(path) as f:
                stat = dict(line.split() for line in f)
            return round(sum(int(stat[k]) for k in keys) / 1024 / 1024, 1)
        except (OSError, KeyError, ValueError):
            continue
    return None


def idle_memory(installation):
    """The memory and task count of the run's running containers after IDLE_WAIT seconds
    without work: `docker stats` (the cgroup's usage less inactive file cache, and PIDs) and
    [`cgroup_memory_mib`]."""
    time.sleep(IDLE_WAIT)
    label = f"label=io.switchboard.installation={installation}"
    ids = docker("ps", "-q", "--no-trunc", "--filter", label).stdout.split()
    stats = docker("stats", "--no-stream", "--format", "{{.MemUsage}}|{{.PIDs}}",
                   *ids).stdout.split("\n")
    stats = [line.split("|") for line in stats if line.strip()]
    usage = sorted(round(mib(mem.split("/")[0].strip()), 1) for mem, _ in stats)
    pids = sorted(int(p) for _, p in stats if p.strip().isdigit())
    anon = sorted(a for a in (cgroup_memory_mib(i) for i in ids) if a is not None)
    return {"containers": len(usage), "pids": pids, "docker_stats": usage,
            "docker_stats_median": statistics.median(usage) if usage else None,
            "cgroup_anon_shmem": anon,
            "cgroup_anon_shmem_median": statistics.median(anon) if anon else None}


def main():
    if docker("image", "inspect", IMAGE).returncode != 0:
        raise SystemExit(f"the image {IMAGE} is not on the Docker host: run scripts/ci-docker.sh")
    docker("tag", IMAGE, COLD_IMAGE)
    installation = f"bench-{os.getpid()}"
    work = tempfile.mkdtemp(prefix="bench-docker-")
    specs = os.path.join(work, "specs.json")
    spec = {"runtime": "docker", "command": ["--port", "8000"], "working_dir": "/workspace/project"}
    with open(specs, "w") as f:
        json.dump([dict(spec, id=IMAGE), dict(spec, id=COLD_IMAGE), dict(spec, id=ABSENT)], f)
    out = open(os.path.join(work, "serve.out"), "w+")
    err = open(os.path.join(work, "serve.log"), "w")
    server = subprocess.Popen(
        [BIN, "--data-dir", os.path.join(work, "data"), "serve", "--bind", "127.0.0.1:0",
         "--sandbox-specs", specs, "--warm-sandboxes", str(WARM),
         "--max-running-sandboxes", "1000", "--max-sandboxes-per-user", "1000",
         "--docker-installation", installation, "--sandbox-network", SANDBOX_NETWORK]
        + (["--docker-oci-runtime", OCI_RUNTIME] if OCI_RUNTIME else []),
        stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    succeeded = False
    try:
        for _ in range(300):
            out.seek(0)
            lines = [json.loads(l) for l in out.read().splitlines() if l.strip()]
            if any(l.get("event") == "listening" for l in lines):
                break
            if server.poll() is not None:
                raise SystemExit("serve exited; see " + err.name)
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

        def wait(check, limit=300):
            deadline = time.time() + limit
            while time.time() < deadline:
                if check():
                    return
                time.sleep(0.05)
            raise SystemExit("timed out; see " + work)

        def status(sid):
            return call("GET", f"/api/v1/sandboxes?id={sid}")[0]["status"]

        cold = []
        for _ in range(COLD):
            t = time.perf_counter()
            s = call("POST", f"/api/v1/sandboxes?sandbox_spec_id={COLD_IMAGE}")
            wait(lambda: status(s["id"]) == "RUNNING")
            cold.append(time.perf_counter() - t)
        wait(lambda: warm_ready() >= WARM)
        warm, not_from_pool = [], 0
        for _ in range(CLAIMS):
            wait(lambda: warm_ready() >= 1)
            t = time.perf_counter()
            s = call("POST", "/api/v1/sandboxes")
            elapsed = (time.perf_counter() - t) * 1000
            if s["status"] == "RUNNING":
                warm.append(elapsed)
            else:
                not_from_pool += 1  # the gauge lagged a claim
                wait(lambda: status(s["id"]) == "RUNNING")
            time.sleep(0.25)
        idle = idle_memory(installation)
        for _ in range(100 - COLD - CLAIMS):
            call("POST", f"/api/v1/sandboxes?sandbox_spec_id={ABSENT}")
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
        print(json.dumps({
            "binary": BIN,
            "image": IMAGE,
            "oci_runtime": OCI_RUNTIME or "(the daemon's default)",
            "idle_sandbox_memory_mib": idle,
            "cold_start_to_running_s": {"n": len(cold), "runs": [round(c, 2) for c in cold],
                                        "median": round(statistics.median(cold), 2)},
            "warm_claim_ms": {"n": len(warm), "not_from_pool": not_from_pool,
                              "p50": round(pct(warm, 50), 2), "max": round(max(warm), 2)}
            if warm else {"n": 0, "not_from_pool": not_from_pool},
            "search_100_ms": {"n": len(search), "items": len(page["items"]),
                              "statuses": statuses, "p50": round(pct(search, 50), 2),
                              "p99": round(pct(search, 99), 2),
                              "mean": round(statistics.mean(search), 2)},
            "rss_mib": round(rss_kib / 1024, 1),
            "load_average": os.getloadavg(),
        }, indent=2))
        succeeded = True
    finally:
        server.terminate()
        server.wait(timeout=60)
        label = f"label=io.switchboard.installation={installation}"
        ids = docker("ps", "-aq", "--filter", label).stdout.split()
        if ids:
            docker("rm", "-f", "-v", *ids)
        volumes = docker("volume", "ls", "-q", "--filter", label).stdout.split()
        if volumes:
            docker("volume", "rm", "-f", *volumes)
        docker("rmi", COLD_IMAGE)
        if succeeded and os.environ.get("KEEP_WORK") != "1":
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
