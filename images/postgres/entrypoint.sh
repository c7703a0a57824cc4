#!/bin/sh
# The official image's first start, in short: an empty data folder (compose gives a
# tmpfs) is initialised with POSTGRES_USER as superuser (scram-sha-256 over TCP) and
# POSTGRES_DB created in single-user mode, so no server listens before the real one;
# then the command runs as postgres.
set -eu
mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA" && chmod 700 "$PGDATA"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pwfile && chown postgres /tmp/pwfile
    as_postgres initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile=/tmp/pwfile -E UTF8 \
        --locale=C --auth-local=trust --auth-host=scram-sha-256 --no-sync >/dev/null
    rm -f /tmp/pwfile
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.auto.conf"
    if [ "${POSTGRES_DB:-$POSTGRES_USER}" != postgres ]; then
        echo "CREATE DATABASE \"${POSTGRES_DB:-$POSTGRES_USER}\"" \
            | as_postgres postgres --single -D "$PGDATA" -j postgres >/dev/null
    fi
fi
if [ "${1#-}" != "$1" ]; then set -- postgres "$@"; fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"
