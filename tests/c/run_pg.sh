#!/bin/sh
# run_pg.sh PROGRAM [ARGS...] -- runs a C test program against a throwaway PostgreSQL
# cluster (docs/contract.md §14): initdb in a temporary folder, pg_ctl start on a Unix
# socket there (no TCP), SESSION_TEST_PG set to its connection string, the cluster
# stopped and the folder removed after. Exit 77 (skipped) only when no PostgreSQL server
# binaries exist (scripts/prereqs.sh installs them); every other failure fails.
set -eu
bin=${SESSION_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "SKIP: no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql: install postgresql" >&2
  exit 77
fi
root=$(mktemp -d "${TMPDIR:-/tmp}/libsession-pg-c.XXXXXX")
as=""
if [ "$(id -u)" = 0 ]; then
  chown postgres "$root"
  as="runuser -u postgres --"
fi
stop() {
  $as "$bin/pg_ctl" -D "$root/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$root"
}
trap stop EXIT
$as "$bin/initdb" -D "$root/data" -U postgres -E UTF8 --locale=C --auth=trust >"$root/initdb.log" 2>&1 \
  || { cat "$root/initdb.log" >&2; exit 1; }
$as "$bin/pg_ctl" -D "$root/data" -w -l "$root/log" \
  -o "-k $root -c listen_addresses='' -c fsync=off" start >/dev/null \
  || { cat "$root/log" >&2; exit 1; }
SESSION_TEST_PG="host=$root port=5432 user=postgres dbname=postgres"
export SESSION_TEST_PG
"$@"
