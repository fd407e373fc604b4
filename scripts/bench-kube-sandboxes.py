#!/usr/bin/env python3
"""Kubernetes runtime benchmark (`just bench-kube-sandboxes`; numbers go in docs/benchmarks.md,
"Kubernetes runtime").

Needs the test cluster (`scripts/kube-cluster.sh up`: two nodes, the agent-server image in
each; KUBECONFIG names it, default /tmp/switchboard-kube/admin.kubeconfig). Runs `switchboard
serve` (SWITCHBOARD_BIN, default target/release/switchboard) over a temporary SQLite database
with `--sandbox-runtime kubernetes`, listening on the cluster's host address (10.89.0.1, where
pods post their webhooks), an installation id of its own and a warm pool of WARM pods, then:

1. a burst: BURST x POST /api/v1/sandboxes of the cold spec at once (threads); time from the first request to
   every sandbox `RUNNING` in the API (polled every 250 ms), the pods per node, and Switchboard's
   CPU time and peak memory over the burst;
2. idle upkeep: IDLE seconds with the burst's sandboxes running; Switchboard's CPU time (its
   reconciler reads every sandbox's state from the watch-fed cache, no request per sandbox),
   against what polling would cost: the latency of one `GET pod` on the API server, times the
   sandboxes, per reconciliation pass;
3. cold starts: COLD x POST /api/v1/sandboxes of a spec the pool does not hold (the same image
   tagged `switchboard/agent-server:bench-cold` in both nodes), one at a time, each to `RUNNING`: scheduling, the volume's
   binding, the pod's start and the agent server's own start-up;
4. warm-pool claims: CLAIMS x POST /api/v1/sandboxes of the default spec, each after the pool
   has a ready pod; the answer is `RUNNING` at once (latency of the request).

The burst's sandboxes are deleted before 3 (the cluster has 32 volumes). Everything of the
run's installation is removed at the end, also on failure. Python 3 standard library only.
Prints a JSON summary.
"""

import base64
import json
import os
import re
import shutil
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("SWITCHBOARD_BIN", os.path.join(ROOT, "target/release/switchboard"))
KUBECONFIG = os.environ.get("KUBECONFIG", "/tmp/switchboard-kube/admin.kubeconfig")
IMAGE = os.environ.get("AGENT_SERVER_IMAGE", "switchboard/agent-server:local")
COLD_IMAGE = "switchboard/agent-server:bench-cold"
HOST = os.environ.get("KUBE_HOST", "10.89.0.1")
KUBE_STATE = os.environ.get("KUBE_STATE", "/tmp/switchboard-kube")
NAMESPACE = "switchboard-sandboxes"
WARM = int(os.environ.get("WARM", "1"))
BURST = int(os.environ.get("BURST", "20"))
COLD = int(os.environ.get("COLD", "3"))
CLAIMS = int(os.environ.get("CLAIMS", "3"))
IDLE = float(os.environ.get("IDLE", "60"))
LIMIT = float(os.environ.get("LIMIT", "900"))


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def kubectl(*args):
    return subprocess.run(["kubectl", "--kubeconfig", KUBECONFIG, "-n", NAMESPACE, *args],
                          capture_output=True, text=True)


def cpu_seconds(pid):
    """utime + stime of process `pid` in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(rf"^{field}:\s+(\d+)", f.read(), re.M).group(1))


def api_get_latency_ms(pod, n=50):
    """The latency of `GET /api/v1/namespaces/NS/pods/POD` on the API server with the
    kubeconfig's token and CA: what a runtime polling its pods pays per sandbox and pass."""
    text = open(KUBECONFIG).read()
    server = re.search(r"server:\s*(\S+)", text).group(1)
    token = re.search(r"token:\s*(\S+)", text).group(1)
    ca = base64.b64decode(re.search(r"certificate-authority-data:\s*(\S+)", text).group(1))
    ctx = ssl.create_default_context(cadata=ca.decode())
    url = f"{server}/api/v1/namespaces/{NAMESPACE}/pods/{pod}"
    times = []
    for _ in range(n):
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        t = time.perf_counter()
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            r.read()
        times.append((time.perf_counter() - t) * 1000)
    return {"n": n, "p50": round(pct(times, 50), 2), "p99": round(pct(times, 99), 2)}


def tag_cold_image():
    """The image under a second name in both nodes' containerd, for a spec the pool does not
    hold."""
    for node in ("node-a", "node-b"):
        sock = f"{KUBE_STATE}/data/{node}/containerd/containerd.sock"
        subprocess.run(["ctr", "-a", sock, "-n", "k8s.io", "images", "rm",
                        "docker.io/" + COLD_IMAGE], capture_output=True)
        subprocess.run(["ctr", "-a", sock, "-n", "k8s.io", "images", "tag",
                        "docker.io/" + IMAGE, "docker.io/" + COLD_IMAGE],
                       check=True, capture_output=True)


def main():
    if not os.path.isfile(KUBECONFIG):
        raise SystemExit(f"no cluster: {KUBECONFIG} (scripts/kube-cluster.sh up)")
    tag_cold_image()
    installation = f"bench-{os.getpid()}"
    work = tempfile.mkdtemp(prefix="bench-kube-")
    specs = os.path.join(work, "specs.json")
    spec = {"runtime": "kubernetes", "command": ["--port", "8000"],
            "working_dir": "/workspace/project"}
    with open(specs, "w") as f:
        json.dump([dict(spec, id=IMAGE), dict(spec, id=COLD_IMAGE)], f)
    out = open(os.path.join(work, "serve.out"), "w+")
    err = open(os.path.join(work, "serve.log"), "w")
    server = subprocess.Popen(
        [BIN, "--data-dir", os.path.join(work, "data"), "serve", "--bind", f"{HOST}:0",
         "--sandbox-specs", specs, "--warm-sandboxes", str(WARM),
         "--max-running-sandboxes", "1000", "--max-sandboxes-per-user", "1000",
         "--sandbox-start-timeout", str(int(LIMIT)), "--kubeconfig", KUBECONFIG,
         "--kube-installation", installation, "--kube-image-pull-policy", "Never",
         "--kube-workspace-size", "1Gi", "--sandbox-url-form", "path"],
        stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    succeeded = False
    try:
        for _ in range(600):
            out.seek(0)
            lines = [json.loads(line) for line in out.read().splitlines() if line.strip()]
            if any(line.get("event") == "listening" for line in lines):
                break
            if server.poll() is not None:
                raise SystemExit("serve exited; see " + err.name)
            time.sleep(0.1)
        addr = [line for line in lines if line.get("event") == "listening"][0]["address"]
        key = [line for line in lines if line.get("event") == "bootstrapped"][0]["api_key"]

        def call(method, path):
            req = urllib.request.Request(addr + path, method=method,
                                         headers={"X-Access-Token": key})
            with urllib.request.urlopen(req, timeout=120) as r:
                return json.load(r)

        def warm_ready():
            with urllib.request.urlopen(addr + "/metrics", timeout=10) as r:
                m = re.search(r"^sandbox_warm_pool_ready (\d+)", r.read().decode(), re.M)
            return int(m.group(1)) if m else 0

        def wait(check, limit=LIMIT, every=0.25):
            deadline = time.time() + limit
            while time.time() < deadline:
                if check():
                    return
                time.sleep(every)
            raise SystemExit("timed out; see " + work)

        def statuses(ids):
            found = call("GET", "/api/v1/sandboxes?" + "&".join(f"id={i}" for i in ids))
            return [s["status"] if s else None for s in found]

        wait(lambda: warm_ready() >= WARM)

        # 1. The burst.
        ids, lock = [], threading.Lock()
        cpu0, t0 = cpu_seconds(server.pid), time.perf_counter()

        def start_one():
            s = call("POST", f"/api/v1/sandboxes?sandbox_spec_id={COLD_IMAGE}")
            with lock:
                ids.append(s["id"])

        threads = [threading.Thread(target=start_one) for _ in range(BURST)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        requested = time.perf_counter() - t0
        wait(lambda: all(s == "RUNNING" for s in statuses(ids)), every=1)
        burst_s = time.perf_counter() - t0
        burst_cpu = cpu_seconds(server.pid) - cpu0
        nodes = {}
        pods = json.loads(kubectl("get", "pods", "-l",
                                  f"switchboard.io/installation={installation}",
                                  "-o", "json").stdout)["items"]
        for p in pods:
            n = p["spec"].get("nodeName", "?")
            nodes[n] = nodes.get(n, 0) + 1

        # 2. Idle upkeep with the burst running, against polling.
        cpu0 = cpu_seconds(server.pid)
        time.sleep(IDLE)
        idle_cpu = cpu_seconds(server.pid) - cpu0
        get_ms = api_get_latency_ms(pods[0]["metadata"]["name"])

        for i in ids:
            call("DELETE", f"/api/v1/sandboxes/{i}")
        wait(lambda: not kubectl("get", "pvc", "-l",
                                 f"switchboard.io/installation={installation}",
                                 "-o", "name").stdout.strip()
             or len(kubectl("get", "pvc", "-l", f"switchboard.io/installation={installation}",
                            "-o", "name").stdout.split()) <= WARM, every=2)
        time.sleep(20)  # the recycler empties the volumes

        # 3. Cold starts, one at a time.
        cold = []
        for _ in range(COLD):
            t = time.perf_counter()
            s = call("POST", f"/api/v1/sandboxes?sandbox_spec_id={COLD_IMAGE}")
            wait(lambda: statuses([s["id"]])[0] == "RUNNING", every=0.1)
            cold.append(time.perf_counter() - t)

        # 4. Warm-pool claims.
        warm, not_from_pool = [], 0
        for _ in range(CLAIMS):
            wait(lambda: warm_ready() >= 1, every=0.1)
            t = time.perf_counter()
            s = call("POST", "/api/v1/sandboxes")
            elapsed = (time.perf_counter() - t) * 1000
            if s["status"] == "RUNNING":
                warm.append(elapsed)
            else:
                not_from_pool += 1
                wait(lambda: statuses([s["id"]])[0] == "RUNNING")
        print(json.dumps({
            "binary": BIN,
            "image": IMAGE,
            "burst": {"sandboxes": BURST, "requests_s": round(requested, 2),
                      "all_running_s": round(burst_s, 1), "pods_per_node": nodes,
                      "switchboard_cpu_s": round(burst_cpu, 2)},
            "idle": {"sandboxes": BURST, "seconds": IDLE,
                     "switchboard_cpu_s": round(idle_cpu, 2),
                     "api_get_pod_ms": get_ms},
            "cold_start_to_running_s": {"n": len(cold), "runs": [round(c, 1) for c in cold],
                                        "median": round(statistics.median(cold), 1)},
            "warm_claim_ms": {"n": len(warm), "not_from_pool": not_from_pool,
                              "p50": round(pct(warm, 50), 1), "max": round(max(warm), 1)}
            if warm else {"n": 0, "not_from_pool": not_from_pool},
            "rss_mib": round(memory_kib(server.pid, "VmRSS") / 1024, 1),
            "peak_rss_mib": round(memory_kib(server.pid, "VmHWM") / 1024, 1),
            "load_average": os.getloadavg(),
        }, indent=2))
        succeeded = True
    finally:
        server.terminate()
        server.wait(timeout=60)
        kubectl("delete", "pods,pvc,secrets", "-l", f"switchboard.io/installation={installation}",
                "--wait=false")
        if succeeded and os.environ.get("KEEP_WORK") != "1":
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
