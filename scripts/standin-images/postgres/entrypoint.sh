#!/bin/bash
# The stand-in postgres image's entry point: as root, owns the data directory and drops to
# user postgres; as postgres, makes the cluster when PGDATA is empty (the superuser
# POSTGRES_USER [postgres] with the password of POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE, the
# database POSTGRES_DB [POSTGRES_USER]) and runs the server listening on every address.
# Arguments other than `postgres ...` are run as they are.
set -euo pipefail

if [ "${1:-}" != postgres ]; then
  exec "$@"
fi
if [ "$(id -u)" = 0 ]; then
  install -d -o postgres -g postgres -m 0700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password="${POSTGRES_PASSWORD:-}"
  if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
    password=$(cat "$POSTGRES_PASSWORD_FILE")
  fi
  if [ -z "$password" ]; then
    echo "postgres: set POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE (the superuser's password)" >&2
    exit 1
  fi
  user="${POSTGRES_USER:-postgres}"
  db="${POSTGRES_DB:-$user}"
  pwfile=$(mktemp)
  printf '%s\n' "$password" >"$pwfile"
  initdb -D "$PGDATA" --username="$user" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  printf '\n# every network client, with its password\nhost all all all scram-sha-256\n' \
    >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    # Single-user mode: nothing listens while the database is made.
    printf 'CREATE DATABASE "%s" OWNER "%s";\n' "$db" "$user" |
      postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "postgres: cluster made in $PGDATA (superuser $user, database $db)"
fi
shift
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
