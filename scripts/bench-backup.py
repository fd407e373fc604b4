#!/usr/bin/env python3
"""Backup and restore benchmark (`just bench-backup`; results in docs/benchmarks.md, "Backup
and restore"). Not a test: it fills databases with a million events. Never run in CI.

For each backend (a SQLite file; a PostgreSQL database created on $SWITCHBOARD_BENCH_PG_URL,
default postgres://postgres@127.0.0.1:5432/postgres, dropped afterwards):
  1. `switchboard migrate` and `bootstrap` on a fresh database, then N events (default
     1,000,000, 400-byte payloads) in 100 conversations, inserted with SQL (the event store's
     own ingest is measured by scripts/bench-events.sh);
  2. `switchboard serve` on it (it records the installation and its key), and a writer that
     keeps adding events through SQL during the backup, timing each insert;
  3. `switchboard backup DIR` (timed: wall seconds, MB/s of the database copy) while it runs,
     and the writer's worst insert latency during the backup;
  4. `switchboard restore DIR` into a fresh database (timed), then the event count of the
     copy checked against the original's count at the backup.

Needs: the release binary (built here), sqlite3, psql, and pg_dump/pg_restore for PostgreSQL.
Usage: scripts/bench-backup.py [--events N] [--backends sqlite,postgres] [--bin PATH]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PG_ADMIN = os.environ.get(
    "SWITCHBOARD_BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)


def run(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed: {out.stderr.strip()}")
    return out.stdout


def sql(backend, url, statement):
    if backend == "sqlite":
        return run(["sqlite3", url.removeprefix("sqlite://"), statement])
    return run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qAtc", statement])


def fill(backend, url, org, user, events):
    convs = 100
    per = events // convs
    for c in range(convs):
        cid = str(uuid.uuid4())
        sql(
            backend,
            url,
            "INSERT INTO conversations (id, org_id, owner_id, title, execution_status, created_at, updated_at) "
            f"VALUES ('{cid}', '{org}', '{user}', 'bench {c}', 'finished', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
        )
        payload = "x" * 400
        if backend == "sqlite":
            series = (
                f"WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < {per}) "
                "INSERT INTO events (conversation_id, event_id, kind, source, timestamp, ts, payload, position) "
                f"SELECT '{cid}', 'ev-' || i, 'MessageEvent', 'agent', '2026-11-30T00:00:00', "
                f"'2026-11-30 00:00:00', json_object('p', '{payload}', 'i', i), i FROM s"
            )
        else:
            series = (
                "INSERT INTO events (conversation_id, event_id, kind, source, timestamp, ts, payload, position) "
                f"SELECT '{cid}', 'ev-' || i, 'MessageEvent', 'agent', '2026-11-30T00:00:00', "
                f"'2026-11-30 00:00:00', json_build_object('p', '{payload}', 'i', i)::text, i "
                f"FROM generate_series(0, {per - 1}) AS i"
            )
        sql(backend, url, series)
    return cid


class Writer(threading.Thread):
    """Inserts one event every 20 ms into `cid` and keeps each insert's latency."""

    def __init__(self, backend, url, cid):
        super().__init__(daemon=True)
        self.backend, self.url, self.cid = backend, url, cid
        self.stop = threading.Event()
        self.latencies = []
        self.n = 10_000_000

    def run(self):
        while not self.stop.is_set():
            self.n += 1
            t = time.monotonic()
            sql(
                self.backend,
                self.url,
                "INSERT INTO events (conversation_id, event_id, kind, source, timestamp, ts, payload, position) "
                f"VALUES ('{self.cid}', 'w-{self.n}', 'MessageEvent', 'agent', '2026-11-30T00:00:00', "
                f"'2026-11-30 00:00:00', '{{}}', {self.n})",
            )
            self.latencies.append(time.monotonic() - t)
            time.sleep(0.02)


def bench(binary, backend, events, work):
    data = os.path.join(work, f"{backend}-data")
    if backend == "sqlite":
        url = f"sqlite://{work}/{backend}.sqlite"
        copy_url = f"sqlite://{work}/{backend}-copy.sqlite"
        dbs = []
    else:
        names = [f"bench_backup_{os.getpid()}", f"bench_backup_{os.getpid()}_copy"]
        for n in names:
            run(["psql", PG_ADMIN, "-qc", f"DROP DATABASE IF EXISTS {n}", "-c", f"CREATE DATABASE {n}"])
        base = PG_ADMIN.rsplit("/", 1)[0]
        url, copy_url = (f"{base}/{n}" for n in names)
        dbs = names
    cli = [binary, "--database-url", url, "--data-dir", data]
    run(cli + ["migrate"])
    boot = json.loads(run(cli + ["bootstrap"]))
    t = time.monotonic()
    cid = fill(backend, url, boot["org_id"], boot["user_id"], events)
    filled = time.monotonic() - t
    server = subprocess.Popen(
        cli + ["serve", "--bind", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    server.stdout.readline()
    writer = Writer(backend, url, cid)
    writer.start()
    time.sleep(1)
    before = len(writer.latencies)
    dest = os.path.join(work, f"{backend}-backup")
    t = time.monotonic()
    made = json.loads(run(cli + ["backup", dest]))
    backup_s = time.monotonic() - t
    during = writer.latencies[before:]
    writer.stop.set()
    writer.join()
    server.terminate()
    server.wait()
    copy_cli = [binary, "--database-url", copy_url, "--data-dir", os.path.join(work, f"{backend}-copy")]
    t = time.monotonic()
    run(copy_cli + ["restore", dest])
    restore_s = time.monotonic() - t
    copied = int(sql(backend, copy_url, "SELECT count(*) FROM events").strip())
    if copied < events:
        sys.exit(f"{backend}: the copy holds {copied} events, fewer than {events}")
    size = made["database_bytes"]
    for n in dbs:
        run(["psql", PG_ADMIN, "-qc", f"DROP DATABASE IF EXISTS {n} WITH (FORCE)"])
    return {
        "backend": backend,
        "events": copied,
        "fill_s": round(filled, 1),
        "backup_s": round(backup_s, 2),
        "backup_file_mb": round(size / 1e6, 1),
        "backup_mb_s": round(size / 1e6 / backup_s, 1),
        "writes_during_backup": len(during),
        "worst_write_ms": round(max(during, default=0) * 1000, 1),
        "restore_s": round(restore_s, 2),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--bin", default=None)
    a = p.parse_args()
    binary = a.bin
    if binary is None:
        run(["cargo", "build", "--release", "-p", "switchboard"], cwd=ROOT)
        binary = os.path.join(ROOT, "target", "release", "switchboard")
    work = tempfile.mkdtemp(prefix="bench-backup-")
    try:
        for backend in a.backends.split(","):
            print(json.dumps(bench(binary, backend, a.events, work)), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
