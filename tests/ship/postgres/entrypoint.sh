#!/bin/sh
# The official image's first start, as far as compose.yaml relies on it (see Dockerfile).
set -eu
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    chown postgres "$pwfile"
    as_postgres initdb --username="$user" --pwfile="$pwfile" --auth-local=trust \
        --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$db" != postgres ]; then
        as_postgres pg_ctl --silent --wait --options="-c listen_addresses=''" start
        as_postgres psql --quiet --username="$user" --dbname=postgres \
            --command="CREATE DATABASE \"$db\""
        as_postgres pg_ctl --silent --wait stop
    fi
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -c listen_addresses='*'
