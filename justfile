# Conveniences over cargo. Every recipe is a plain cargo command you can run without `just`
# (install it with `cargo install just --locked` if you want it).

# List the recipes.
default:
    @just --list

# Format the workspace.
fmt:
    cargo fmt --all

# Formatting check, clippy with warnings denied, and rustdoc with warnings denied.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

# Every test (what CI runs, through .ci/run).
test:
    cargo test --workspace

# Benchmarks: event parse and serialize throughput (results go in docs/benchmarks.md).
bench:
    cargo bench -p switchboard-model --bench codec

# HTTP load benchmark of the settings endpoints on SQLite and PostgreSQL (needs wrk).
bench-http seconds="10":
    scripts/bench-http.sh {{seconds}}

# Event store benchmark on SQLite and PostgreSQL: 1M-event and 10k small conversations, storage
# calls, HTTP queries (oha), a full scan and webhook ingest (wrk). Several minutes; not run in CI.
bench-events seconds="10":
    scripts/bench-events.sh {{seconds}}

# The real OpenHands agent server (Python 3.12+) against Switchboard on a temporary SQLite
# database; prints "e2e skipped" and succeeds when no Python 3.12+ is available. Not run in CI.
e2e:
    scripts/e2e.sh

# Sandbox benchmark: warm-pool start latency (50 starts), a 100-sandbox search (500 requests),
# RSS with 50 supervised stand-ins; release build. Numbers go in docs/benchmarks.md.
bench-sandboxes:
    cargo build --release -p switchboard
    python3 scripts/bench-sandboxes.py

# Switchboard starts the real agent server as a sandbox (POST /api/v1/sandboxes), a conversation
# on it runs against a fake LLM, every event arrives through the webhook; pause, resume, delete.
# Prints "e2e sandbox skipped" and succeeds when no Python 3.12+ is available. Not run in CI.
e2e-sandbox:
    scripts/e2e-sandbox.sh

# Fuzz the event parser for a bounded time (seconds; needs `cargo install cargo-fuzz`).
fuzz seconds="60":
    mkdir -p crates/model/fuzz/corpus/parse_event
    cd crates/model/tests/fixtures/conformance/valid && cat *.jsonl | split -l 1 - ../../../../fuzz/corpus/parse_event/seed-
    cd crates/model/fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run parse_event corpus/parse_event -- -max_total_time={{seconds}}

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
