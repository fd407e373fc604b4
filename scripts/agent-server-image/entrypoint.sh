#!/bin/sh
# Runs the OpenHands agent server with the container's arguments (e.g. `--port 8000`, as
# OpenHands' Docker preset passes). Adds `--host 0.0.0.0` unless a --host is given: inside a
# container the server must listen on the container's interface to be reachable through a
# published port (publish on 127.0.0.1 of the host to keep it local).
set -e
case " $* " in
  *" --host "* | *" --host="*) ;;
  *) set -- --host 0.0.0.0 "$@" ;;
esac
exec /opt/agent-server/bin/agent-server "$@"
