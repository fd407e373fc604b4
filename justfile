# Conveniences over cargo. Every recipe is a plain cargo command you can run without `just`
# (install it with `cargo install just --locked` if you want it).

# List the recipes.
default:
    @just --list

# Format the workspace.
fmt:
    cargo fmt --all

# Formatting check, the house's shape (scripts/house.py: no circle between files, file and
# function lengths), clippy with warnings denied, and rustdoc with warnings denied.
lint:
    cargo fmt --all -- --check
    python3 scripts/house.py --check
    cargo clippy --workspace --all-targets -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

# Every test (what CI runs, through .ci/run).
test:
    cargo test --workspace

# Benchmarks: event parse and serialize throughput (results go in docs/benchmarks.md).
bench:
    cargo bench -p switchboard-model --bench codec

# Members and sign-in (issue 34): member pages, filter and count at 10,000 members, role changes,
# session checks, device codes and uncached key checks, on SQLite and PostgreSQL.
bench-members:
    cargo bench -p switchboard-storage --bench members

# Named profiles: the member's settings read and saves with 50 LLM and 50 agent profiles, on
# both backends (docs/benchmarks.md, "Named profiles").
bench-profiles:
    cargo bench -p switchboard-storage --bench profiles

# Backup and restore: a 1,000,000-event database on SQLite and PostgreSQL backed up while a
# server runs and a writer keeps writing (its worst insert during the copy), then restored into
# a new database (docs/benchmarks.md, "Backup and restore"); release build.
bench-backup events="1000000":
    python3 scripts/bench-backup.py --events {{events}}

# The LLM pass-through on loopback (issue 38): first-byte and whole-answer times direct and
# through /api/v1/llm-proxy (JSON and SSE), and 16-client throughput (docs/benchmarks.md).
bench-llm-relay:
    cargo bench -p switchboard-api --bench llm_relay

# Request-body parsing cost (issue 37): the start and settings bodies, and the typed bodies
# (derived schema judged, then deserialized), valid and invalid (docs/benchmarks.md).
bench-bodies:
    cargo bench -p switchboard-domain --bench bodies -- --sample-count 3000 --sample-size 20

# HTTP load benchmark of the settings endpoints on SQLite and PostgreSQL (needs wrk).
bench-http seconds="10":
    scripts/bench-http.sh {{seconds}}

# Event store benchmark on SQLite and PostgreSQL: 1M-event and 10k small conversations, storage
# calls, HTTP queries (oha), a full scan and webhook ingest (wrk). Several minutes; not run in CI.
bench-events seconds="10":
    scripts/bench-events.sh {{seconds}}

# App-conversation search benchmark: 100,000 conversations in one org on SQLite and PostgreSQL,
# pages of 100 through the domain service in every order, at every depth (docs/benchmarks.md).
bench-app-conversations:
    cargo bench -p switchboard-storage --bench app_conversations

# The real OpenHands agent server (Python 3.12+) against Switchboard on a temporary SQLite
# database; prints "e2e skipped" and succeeds when no Python 3.12+ is available. Not run in CI.
e2e:
    scripts/e2e.sh

# The listener check made before anything is sent to a process sandbox (issue 33): one
# sock_diag look-up on a quiet host and on one with 2,000 other sockets (docs/benchmarks.md).
bench-listeners:
    cargo bench -p switchboard-sandbox --bench listeners

# Sandbox benchmark: warm-pool start latency (50 starts), a 100-sandbox search (500 requests),
# RSS with 50 supervised stand-ins; release build. Numbers go in docs/benchmarks.md.
bench-sandboxes:
    cargo build --release -p switchboard
    python3 scripts/bench-sandboxes.py

# Docker runtime benchmark: cold start -> RUNNING, warm-pool claim, a search over 100 Docker
# sandboxes; needs the daemon and switchboard/agent-server:local (scripts/ci-docker.sh).
bench-docker-sandboxes:
    cargo build --release -p switchboard
    python3 scripts/bench-docker-sandboxes.py

# Kubernetes runtime benchmark: 20 sandboxes at once across two nodes, idle upkeep against
# polling, cold start -> RUNNING, warm-pool claim; needs the test cluster (just kube-cluster up).
bench-kube-sandboxes:
    cargo build --release -p switchboard
    python3 scripts/bench-kube-sandboxes.py

# The main job with the Docker runtime: an app conversation in a container of the image, the
# fake LLM, every event through the webhooks; delete removes the container and its volume.
# Prints "e2e docker skipped" and succeeds without a daemon or the image. Run by CI with Docker.
e2e-docker:
    scripts/e2e-docker.sh

# Build the agent-server image for the Docker runtime (debootstrap + PyPI; minutes, cached).
agent-server-image *args:
    scripts/agent-server-image.sh {{args}}

# A two-node Kubernetes 1.20 on this machine for the Kubernetes runtime's tests (root; the first
# `up` builds the binaries from Debian's source package, about 430 CPU-seconds, then cached):
# `up [--with-image]`, `down [--purge]`, `kubeconfig`, `status`, `smoke`, `freeze NODE`,
# `thaw NODE` (docs/kubernetes.md).
kube-cluster *args:
    scripts/kube-cluster.sh {{args}}
# Live delivery benchmark: webhook-to-frame latency (1/100/1,000 subscribers, SQLite and two
# PostgreSQL replicas), 10,000 idle sockets, a 100k-event replay.
bench-live:
    cargo build --release -p switchboard
    scripts/bench-live.sh

# Switchboard starts the real agent server as a sandbox (POST /api/v1/sandboxes), a conversation
# on it runs against a fake LLM, every event arrives through the webhook; pause, resume, delete.
# Prints "e2e sandbox skipped" and succeeds when no Python 3.12+ is available. Not run in CI.
e2e-sandbox:
    scripts/e2e-sandbox.sh

# The main job in one go: Switchboard on SQLite runs the agent server as a sandbox, a fake LLM
# answers, one curl starts a conversation, its steps and events print as they arrive.
# DEMO_AGENT=standin runs the project's stand-in agent server instead (no Python 3.12 needed).
demo:
    scripts/demo.sh

# The main job end to end with the real agent server: start a conversation on a local git
# repository (branch, setup.sh) -> READY -> the agent's reply -> finished -> the task listed;
# then a second message, search/count, pause/resume of its sandbox, DELETE (process gone).
# Prints "e2e main skipped" and succeeds when no Python 3.12+ is available. CI runs it
# through scripts/e2e.sh.
e2e-main:
    scripts/e2e-main.sh

# Conversation start benchmark: POST -> READY, warm pool and cold, 20 runs each (stand-in
# agent server; AGENT=real for the real one with the fake LLM). Numbers go in docs/benchmarks.md.
bench-start runs="20":
    cargo build --release -p switchboard
    python3 scripts/bench-start.py {{runs}}

# What sandboxes hold in memory: N sandboxes of the real agent server (default 4; the running
# limit pauses some), one of them after a conversation, a warm one; RSS, PSS and private memory
# of each from /proc (AGENT=standin for the stand-in). Numbers go in docs/benchmarks.md.
sandbox-memory n="4":
    cargo build --release -p switchboard
    python3 scripts/sandbox-memory.py {{n}}

# Sandbox grouping benchmark: conversations per GiB of sandbox memory (PSS and RSS of the
# sandboxes' process trees), NO_GROUPING vs GROUP_BY_NEWEST, N conversations each (default 4),
# idle and after one turn; the real agent server with the fake LLM; release build. Numbers go in
# docs/benchmarks.md.
bench-grouping n="4":
    cargo build --release -p switchboard
    SWITCHBOARD_BIN=target/release/switchboard python3 scripts/bench-grouping.py {{n}}

# Fuzz the event parser for a bounded time (seconds; needs `cargo install cargo-fuzz`).
fuzz seconds="60":
    mkdir -p crates/model/fuzz/corpus/parse_event
    cd crates/model/tests/fixtures/conformance/valid && cat *.jsonl | split -l 1 - ../../../../fuzz/corpus/parse_event/seed-
    cd crates/model/fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run parse_event corpus/parse_event -- -max_total_time={{seconds}}

# Coverage-guided fuzzing of the event parser, the cursor codec and the webhook batch reader,
# for a bounded time per target (seconds; installs cargo-fuzz when missing). CI runs 60.
fuzz-targets seconds="60":
    scripts/fuzz-targets.sh {{seconds}}

# Soak: 30 minutes of mixed ingestion, search and settings writes against the release binary;
# fails on any error, RSS growth over 1.5x or p99 drift over 3x (docs/benchmarks.md, Soak).
soak seconds="1800":
    cargo build --release -p switchboard
    python3 scripts/soak.py target/release/switchboard {{seconds}}

# Run the server (SQLite in ./switchboard-data; prints a one-time admin key on first start).
serve *args:
    cargo run --release -p switchboard -- serve {{args}}

# Validate JSONL event logs and print a summary (or `--canonical` to rewrite them).
validate *args:
    cargo run --release -p switchboard-model --example validate -- {{args}}

# Check that the model crate packages and builds as published.
publish-check:
    cargo publish --dry-run -p switchboard-model --allow-dirty

# Generated-input testing of the API (Schemathesis, every operation, SQLite and PostgreSQL);
# `long` by default, `quick` is the CI-sized run. Reports go to a printed folder.
fuzz-api mode="long":
    scripts/fuzz-api.sh {{mode}}

# Limits, NUL inputs and OpenAPI checks from outside on SQLite and PostgreSQL (prints a table).
probe-limits *args:
    scripts/probe-limits.sh {{args}}

# Event delivery with the real agent server: agent event timestamp -> visible in search and ->
# /sockets/session frame (p50/p99 over >= 200 events), and the catch-up of 10,000 events missed
# during a 60 s outage (docs/benchmarks.md). Needs the agent server's venv (scripts/e2e.sh).
bench-catch-up *args:
    cargo build --release -p switchboard
    "${VENV:-${TMPDIR:-/tmp}/agent-server-venv}/bin/python" scripts/bench-catch-up.py {{args}}
