#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo fuzz, libFuzzer) of the parsers that read untrusted input, for
# a bounded time per target: the event parser (crates/model/fuzz, target parse_event), the page
# cursor codec, the webhook batch reader and the websocket client-frame reader (fuzz/, targets
# cursor, webhook_batch and client_frame).
# Seeds: the conformance corpus's events (one per file) for parse_event and webhook_batch
# (each wrapped in a batch), cursors of each kind for cursor, and an auth frame, a Message and
# another frame for client_frame.
#
# Usage: scripts/fuzz-targets.sh [SECONDS_PER_TARGET]   (default 60; CI runs 60)
# Needs cargo-fuzz (installed with `cargo install cargo-fuzz --locked` when missing) and a C++
# compiler; libFuzzer needs nightly flags, given to the pinned stable compiler through
# RUSTC_BOOTSTRAP=1. Exits non-zero when a target finds a crash (the input is kept under
# <fuzz dir>/artifacts/<target>/).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
ROOT="$PWD"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1

CORPUS=$(mktemp -d)
trap 'rm -rf "$CORPUS"' EXIT
mkdir -p "$CORPUS/parse_event" "$CORPUS/webhook_batch" "$CORPUS/cursor" "$CORPUS/client_frame"
# Client frames of both socket protocols.
printf '%s' '{"type":"auth","session_api_key":"sb_x"}' >"$CORPUS/client_frame/auth"
printf '%s' '{"role":"user","content":[{"type":"text","text":"hi"}]}' >"$CORPUS/client_frame/message"
printf '%s' '{"type":"ping"}' >"$CORPUS/client_frame/other"
i=0
for f in crates/model/tests/fixtures/conformance/valid/*.jsonl; do
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    i=$((i + 1))
    printf '%s' "$line" >"$CORPUS/parse_event/seed-$i"
    printf '[%s]' "$line" >"$CORPUS/webhook_batch/seed-$i"
  done <"$f"
done
# An event sent without an id (given a fresh one at each reading; once a false crash of the
# target's own check).
printf '%s' '[{"tool_name":"web_search","tool_call_id":"toolu_04eXyZ","error":"Tool not found","kind":"AgentErrorEvent"}]' \
  >"$CORPUS/webhook_batch/no-id"
# Cursors as the service writes them: base64url of v1:<µs>:<seq>, sb1:/sp1:... and garbage.
python3 - "$CORPUS/cursor" <<'PY'
import base64, sys, os
out = sys.argv[1]
seeds = ["v1:1795428000000000:1", "v1:-1:0", "sb1:1795428000000000:0b9f3c4e-7d2a-4c1e-9a8b-5f6e7d8c9a0b",
         "v2:1:1", "v1::", "v1:99999999999999999999:1"]
for n, s in enumerate(seeds):
    with open(os.path.join(out, f"seed-{n}"), "w") as f:
        f.write(base64.urlsafe_b64encode(s.encode()).decode().rstrip("="))
PY

# Every target is built first by one `cargo fuzz build` in fuzz/ (which also builds the model
# crate's parse_event target from its own source, so the two fuzz folders are not compiled
# twice), then run two at a time: libFuzzer uses one core per run, so on a
# 2-core machine each target still gets its whole SECONDS_PER_TARGET of a core, in half the wall
# time. A run's output goes to its own log, printed when the pair is done.
LOGS="$CORPUS/logs"
mkdir -p "$LOGS"
echo "== cargo fuzz build (fuzz)"
(cd "$ROOT/fuzz" && cargo fuzz build)

run() { # dir target
  echo "== cargo fuzz run $2 (${SECONDS_PER_TARGET}s)" >"$LOGS/$2"
  (cd "$1" && cargo fuzz run "$2" "$CORPUS/$2" -- -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 2>&1 |
    grep -E '^(#[0-9]+ +DONE|Done|==[0-9]+==|SUMMARY|artifact_prefix|Test unit written)' >>"$LOGS/$2" || true)
  # libFuzzer's exit status is lost in the pipe: a crash leaves an artifact.
  if compgen -G "$1/artifacts/$2/crash-*" >/dev/null || compgen -G "$1/artifacts/$2/oom-*" >/dev/null; then
    echo "== $2: crash found, see $1/artifacts/$2/" >>"$LOGS/$2"
    return 1
  fi
}
pair() { # dir1 target1 dir2 target2
  local a b status=0
  run "$1" "$2" & a=$!
  run "$3" "$4" & b=$!
  wait "$a" || status=1
  wait "$b" || status=1
  cat "$LOGS/$2" "$LOGS/$4"
  return "$status"
}
status=0
pair "$ROOT/fuzz" parse_event "$ROOT/fuzz" cursor || status=1
pair "$ROOT/fuzz" webhook_batch "$ROOT/fuzz" client_frame || status=1
exit "$status"
