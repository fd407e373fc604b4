#!/usr/bin/env bash
# Prepares the browser walk of OpenHands' Agent Canvas against Switchboard (issue 25;
# bins/switchboard/tests/agent_canvas.rs, scripts/agent-canvas/walk.py):
#   1. Debian's chromium (apt-get install chromium) unless one is already there;
#   2. a venv with playwright from PyPI, told never to download a browser of its own
#      (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1: the walk launches Debian's chromium through
#      executable_path);
#   3. the client: `npm pack @openhands/agent-canvas@1.20.0`, unpacked; its prebuilt web app is
#      `$CANVAS_DIR/package/build` (what `switchboard serve --web-client` serves).
# Idempotent; prints what it skipped and why, and exits 0 even where a piece cannot be had (the
# test then skips with that reason). Knobs: CANVAS_VENV [${TMPDIR:-/tmp}/agent-canvas-venv],
# CANVAS_DIR [${TMPDIR:-/tmp}/agent-canvas], CANVAS_VERSION [1.20.0], PLAYWRIGHT_VERSION [1.65.2].
set -uo pipefail
VENV="${CANVAS_VENV:-${TMPDIR:-/tmp}/agent-canvas-venv}"
DIR="${CANVAS_DIR:-${TMPDIR:-/tmp}/agent-canvas}"
VERSION="${CANVAS_VERSION:-1.20.0}"
PLAYWRIGHT="${PLAYWRIGHT_VERSION:-1.65.2}"
log() { printf '[agent-canvas setup] %s\n' "$*" >&2; }

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing Debian's chromium"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
      >"${TMPDIR:-/tmp}/agent-canvas-apt.log" 2>&1 || log "chromium did not install (see ${TMPDIR:-/tmp}/agent-canvas-apt.log)"
  else
    log "no chromium and no apt-get as root: the walk will be skipped"
  fi
fi

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import playwright' 2>/dev/null; then
  PY=
  for p in python3.12 python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    c=$(command -v "$p" 2>/dev/null) || continue
    "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' 2>/dev/null && { PY=$c; break; }
  done
  if [ -z "$PY" ]; then
    log "no Python 3.9+: the walk will be skipped"
  else
    log "installing playwright $PLAYWRIGHT into $VENV (no browser download)"
    "$PY" -m venv "$VENV" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 "$VENV/bin/pip" install -q "playwright==$PLAYWRIGHT" \
      || log "playwright did not install"
  fi
fi

if [ ! -f "$DIR/package/build/index.html" ]; then
  if command -v npm >/dev/null 2>&1; then
    log "fetching @openhands/agent-canvas@$VERSION into $DIR"
    mkdir -p "$DIR"
    (cd "$DIR" && npm pack -q "@openhands/agent-canvas@$VERSION" >/dev/null && tar xzf "openhands-agent-canvas-$VERSION.tgz") \
      || log "the client package could not be fetched"
  else
    log "no npm: the walk will be skipped"
  fi
fi
missing=()
command -v chromium >/dev/null 2>&1 || missing+=("chromium")
"$VENV/bin/python" -c 'import playwright' 2>/dev/null || missing+=("playwright venv")
[ -f "$DIR/package/build/index.html" ] || missing+=("the Agent Canvas package")
if [ "${#missing[@]}" -eq 0 ]; then
  log "ready: the browser walk runs (cargo test -p switchboard --test integration agent_canvas::)"
else
  log "the browser walk will be SKIPPED: missing ${missing[*]}"
fi
exit 0
