#!/usr/bin/env bash
# pg.sh start|stop|url — a throwaway PostgreSQL cluster for tests.
#
#   out=$(bash scripts/pg.sh start) || exit 1   # prints two lines:
#     export PWSD_TEST_DATABASE_URL='postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable'
#     export PWSD_PG_DIR='/tmp/pwsd-pg.XXXXXX'
#   PWSD_PG_DIR=... bash scripts/pg.sh stop      # stops it and deletes its directory
#
# Every start makes a fresh directory (mktemp, under $TMPDIR or /tmp) and
# takes a free port (one that is busy, or taken by a concurrent start, is
# detected when the server cannot listen, and another is tried), so that two
# checkouts on one machine never share, stop or delete each other's cluster.
# Everything it writes (data, socket, server and initdb logs) is inside that
# directory, and stop removes it; a start that fails removes it too and exits
# non-zero. PWSD_PG_PORT forces the port (no retry).
#
# Uses the installed initdb/pg_ctl (PostgreSQL 15 from Debian), installing the
# `postgresql` package with apt-get when it is missing and we are root. initdb
# refuses to run as root, so as root the cluster runs as the `postgres` user.
set -euo pipefail

# marker names the file that proves a directory is one pg.sh made (stop
# deletes nothing else).
marker=.pwsd-pg-cluster

find_bin() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && { echo "$d"; return 0; }
	done
	command -v initdb >/dev/null 2>&1 && { dirname "$(readlink -f "$(command -v initdb)")"; return 0; }
	return 1
}

as_owner() {
	if [ "$(id -u)" = 0 ]; then
		su postgres -s /bin/sh -c "$*"
	else
		sh -c "$*"
	fi
}

url() { echo "postgres://postgres@127.0.0.1:${1}/postgres?sslmode=disable"; }

# port_free reports whether nothing listens on 127.0.0.1:$1.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_port prints a port in [20000, 60000) that looks free.
pick_port() {
	local p i
	for i in $(seq 1 50); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		port_free "$p" && { echo "$p"; return 0; }
	done
	return 1
}

start() {
	local bin port tries
	if ! bin=$(find_bin); then
		if [ "$(id -u)" = 0 ]; then
			echo "pg.sh: installing postgresql with apt-get" >&2
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >&2
			bin=$(find_bin)
		else
			echo "pg.sh: no initdb found and not root; install postgresql" >&2
			exit 1
		fi
	fi
	dir=$(mktemp -d "${TMPDIR:-/tmp}/pwsd-pg.XXXXXX")
	# Until the server is up, any exit removes the directory.
	trap 'rm -rf "$dir"' EXIT
	touch "$dir/$marker"
	[ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
	if ! as_owner "'$bin/initdb' -D '$dir/data' -U postgres --auth=trust -E UTF8 --no-locale" >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		exit 1
	fi
	tries=10
	[ -n "${PWSD_PG_PORT:-}" ] && tries=1
	for ((i = 1; i <= tries; i++)); do
		port=${PWSD_PG_PORT:-$(pick_port)}
		if as_owner "'$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -t 60 \
			-o \"-p $port -k '$dir' -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=on -c max_connections=200\" start" >&2; then
			trap - EXIT
			echo "export PWSD_TEST_DATABASE_URL='$(url "$port")'"
			echo "export PWSD_PG_DIR='$dir'"
			return 0
		fi
		echo "pg.sh: could not start on port $port (attempt $i of $tries)" >&2
	done
	cat "$dir/server.log" >&2 || true
	exit 1
}

stop() {
	local bin dir=${PWSD_PG_DIR:-}
	if [ -z "$dir" ] || [ ! -f "$dir/$marker" ]; then
		echo "pg.sh stop: PWSD_PG_DIR must name a directory pg.sh start made" >&2
		exit 2
	fi
	if bin=$(find_bin) && [ -d "$dir/data" ]; then
		as_owner "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop" >&2 || true
	fi
	rm -rf "$dir"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
url) url "${PWSD_PG_PORT:?url needs PWSD_PG_PORT}" ;;
*) echo "usage: $0 start|stop|url" >&2; exit 2 ;;
esac
