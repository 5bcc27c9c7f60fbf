# Sourced by the benchmarks that need PostgreSQL: builds budge into
# bench/out, makes a work directory ($work), starts a PostgreSQL server in it
# on a free loopback port (Debian's postgresql package; as the postgres user
# when run as root) and stops it and removes $work on exit (KEEP=1 keeps
# $work). Sets: budge, work, port, db (the database URL), pids (processes to
# kill on exit). Point XDG_CACHE_HOME into $work for the stores' caches.
out=bench/out
mkdir -p "$out"
go build -o "$out/budge" ./cmd/budge
budge=$PWD/$out/budge
bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/pg_ctl | tail -1)")
work=$(mktemp -d)
chmod 755 "$work"
pg=$work/pg
mkdir -p "$pg"
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$pg"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "'$bin/initdb' -D '$pg/data' -A trust -U budge --no-sync > /dev/null"
as_pg "'$bin/pg_ctl' -D '$pg/data' -o '-p $port -k $pg -c listen_addresses=127.0.0.1 -c max_connections=200' -l '$pg/log' -w start > /dev/null"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; as_pg "'"'$bin/pg_ctl'"' -D '"'$pg/data'"' -m fast -w stop" > /dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
db="postgres://budge@127.0.0.1:$port/postgres?sslmode=disable"
