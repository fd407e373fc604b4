#!/usr/bin/env bash
# The main job end to end with the real OpenHands agent server (`just e2e-main`):
#   1. serve over a temporary SQLite database, the agent server as the sandbox spec, the fake
#      LLM of scripts/e2e/fake_llm.py as the default LLM (--llm-model, LLM_BASE_URL, LLM_API_KEY);
#   2. POST /api/v1/app-conversations with an initial message, a repository in a local git
#      directory (branch `work`, with .openhands/setup.sh) and a request secret -> the task
#      reaches READY, never echoes the secret, and the agent server holds it as a StaticSecret;
#   3. the clone and the setup script's output are in the conversation's working directory;
#   4. the agent's reply (the finish observation) arrives through the webhooks, and the
#      conversation's run state reaches `finished`;
#   5. the task is listed by the start-task search for its conversation, and counted;
# then, the LLM streaming (LLM_STREAM=1, `serve --llm-stream`), scripts/e2e/live_checks.py:
#   the relay of the agent server's socket is up (its full_state arrives as a transient frame
#   on /sockets/session and /sockets/events); a Message sent over the socket starts a run;
#   StreamingDeltaEvent frames (transient) arrive before the final agent MessageEvent, which
#   is durable, then `finished`; a later subscriber with the whole history (after_seq=-1,
#   resend_mode=all) gets that MessageEvent and no delta;
# then scripts/e2e/main_checks.py, in order:
#   6. GET /api/v1/app-conversations?ids= reports execution_status `finished`;
#   7. a second message (POST .../{id}/send-message) runs the agent again: new agent events,
#      `finished` again;
#   8. the conversation is in /api/v1/app-conversations/search and counted by /count;
#   9. its sandbox paused (PAUSED) and resumed (RUNNING) through /api/v1/sandboxes/{id}/pause|resume;
#  10. DELETE /api/v1/app-conversations/{id}: the conversation and its events are gone and the
#      agent server's process group ends, and so does its tmux server (which leaves the group,
#      and ends with the sandbox's pid namespace: no live process may still name the sandbox's
#      directory).
# The repository lives in a directory of its own, readable by the sandbox's user, which serve
# allows with --allow-local-repositories (local repositories are refused otherwise).
# scripts/e2e.sh (CI) runs this script after its webhook run.
# Needs Python >= 3.12 (openhands-agent-server 1.58.2 from PyPI into $VENV on first use). Without
# one it prints "e2e main skipped: no Python 3.12+ on this machine" and exits 0.
# Knobs: VENV [${TMPDIR:-/tmp}/agent-server-venv], SWITCHBOARD_BIN, TIMEOUT [300], KEEP_WORK=1,
# LLM_STREAM [1] (0: the LLM does not stream and the live delivery checks are skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-${TMPDIR:-/tmp}/agent-server-venv}"
PY312=
for p in python3.14 python3.13 python3.12 python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
  p=$(command -v "$p" 2>/dev/null) || continue
  if "$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
    PY312=$p; break
  fi
done
if [ -z "$PY312" ] && [ ! -x "$VENV/bin/agent-server" ]; then
  echo "e2e main skipped: no Python 3.12+ on this machine"
  exit 0
fi
REPOS=$(mktemp -d)
trap 'rm -rf "$REPOS"' EXIT
REPO="$REPOS/project"
mkdir "$REPO"
(
  cd "$REPO"
  export GIT_AUTHOR_NAME=e2e GIT_AUTHOR_EMAIL=e2e@example.com GIT_COMMITTER_NAME=e2e GIT_COMMITTER_EMAIL=e2e@example.com
  git init -q -b main && echo main > README && git add . && git commit -qm main
  git checkout -qb work && mkdir .openhands && echo 'echo set-up > setup-ran' > .openhands/setup.sh
  echo work > README && git add . && git commit -qm work && git checkout -q main
)
# Sandboxes run as users of their own (as root): the repository must be readable by others.
chmod -R a+rX "$REPOS"
# The demo does steps 1-2 and 4; E2E_REPO makes it check 3 and 5-10 too, and LLM_STREAM=1 the
# live delivery checks.
E2E_REPO="$REPO" VENV="$VENV" MESSAGE="say hello" LLM_STREAM="${LLM_STREAM:-1}" scripts/demo.sh
echo "SWITCHBOARD E2E MAIN: PASS"
