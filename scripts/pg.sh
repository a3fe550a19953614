#!/usr/bin/env bash
# A throwaway PostgreSQL for idemgen's tests, benchmarks and demo.
#
#   scripts/pg.sh start DIR     start a server whose data lives in DIR (created);
#                               prints `export DATABASE_URL=...` on stdout
#   scripts/pg.sh stop DIR      stop it and delete DIR
#   scripts/pg.sh restart DIR   stop it (fast, dropping connections) and start it
#                               again on the same port and data
#   scripts/pg.sh run CMD...    start, run CMD with DATABASE_URL set, stop and
#                               delete even when CMD fails; exits with CMD's status
#
# Environment:
#   PG_DURABLE=1   keep fsync and synchronous_commit on (benchmarks); the
#                  default turns them off, which is safe for a throwaway server
#   PG_BIN=DIR     use the server binaries in DIR
#   PG_OPTS=...    more server options (scripts/regions.sh: -c wal_level=logical)
#   PG_HUGE_PAGES=1  run shared memory on 2 MB huge pages (huge_pages=on), as
#                  a production server with gigabytes of shared_buffers
#                  does; as root the script reserves the pages the server
#                  needs (vm.nr_hugepages) and gives them back at stop.
#                  Without them every backend takes a page fault per 4 kB
#                  of shared buffers it touches first: a cost that grows
#                  with the table until each backend has touched all of
#                  shared_buffers (BENCHMARKS.md, "Records in the table")
#
# On Debian or Ubuntu the script installs the `postgresql` package when no
# server binaries are found, without letting the package create or start a
# system cluster. Elsewhere, install PostgreSQL 14 or later yourself and set
# PG_BIN to the directory holding initdb and pg_ctl (or put them on PATH), or
# skip this script and set DATABASE_URL to a database you own: the tests only
# need a role that may create tables (and CREATEDB for the one test that
# needs a database of its own, examples/migrations TestAtlas).
set -euo pipefail

log() { echo "pg.sh: $*" >&2; }

find_bin() {
	if [ -n "${PG_BIN:-}" ]; then
		[ -x "$PG_BIN/initdb" ] && { echo "$PG_BIN"; return 0; }
		log "PG_BIN=$PG_BIN has no initdb"; return 1
	fi
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(command -v initdb)"; return 0
	fi
	return 1
}

install_debian() {
	if ! command -v apt-get >/dev/null 2>&1; then
		log "no PostgreSQL server binaries found and this is not a Debian-like system."
		log "install PostgreSQL 14+ and set PG_BIN to the directory with initdb and pg_ctl,"
		log "or set DATABASE_URL to a database you own and run the tests directly."
		return 1
	fi
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	log "installing PostgreSQL from Debian's packages (no system cluster is created)"
	# No cluster, no service start: this script runs its own server.
	$sudo mkdir -p /etc/postgresql-common/createcluster.d
	echo "create_main_cluster = false" | $sudo tee /etc/postgresql-common/createcluster.d/idemgen.conf >/dev/null
	local policy=/usr/sbin/policy-rc.d created_policy=""
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
		$sudo chmod +x "$policy"
		created_policy=1
	fi
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >&2
	[ -n "$created_policy" ] && $sudo rm -f "$policy"
	return 0
}

free_port() {
	# A port nobody listens on; pg_ctl start fails cleanly if it is taken in
	# the meantime, and start() then tries another.
	local p i
	for i in $(seq 1 50); do
		p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 30000 ))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
	done
	log "no free port found"; return 1
}

# as_owner runs a command as the owner of the data directory: initdb refuses
# to run as root, so root hands the directory to the postgres user. It runs
# from /, a directory postgres can enter (the caller's may be a clone under
# /root or a mode-0700 directory; the server would inherit it); every path
# given is absolute.
as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		if command -v runuser >/dev/null 2>&1; then (cd / && runuser -u postgres -- "$@"); else (cd / && su postgres -s /bin/sh -c "$(printf '%q ' "$@")"); fi
	else
		"$@"
	fi
}

start() {
	local dir=$1 bin port try
	bin=$(find_bin) || { install_debian && bin=$(find_bin); } || { log "PostgreSQL binaries still missing"; exit 1; }
	if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
		useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres
	fi
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	mkdir -p "$dir/data" "$dir/sock"
	[ "$(id -u)" -eq 0 ] && chown -R postgres "$dir"
	chmod 700 "$dir/data"
	as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
		|| { cat "$dir/initdb.log" >&2; exit 1; }
	local durable="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	[ "${PG_DURABLE:-}" = 1 ] && durable="-c fsync=on -c synchronous_commit=on"
	local base="-c max_connections=300 -c shared_buffers=256MB $durable ${PG_OPTS:-}"
	if [ "${PG_HUGE_PAGES:-}" = 1 ]; then
		base="$base -c huge_pages=on"
		reserve_huge_pages "$bin" "$dir" "$base"
	fi
	for try in 1 2 3 4 5; do
		port=$(free_port)
		echo "-c listen_addresses=127.0.0.1 -p $port -k $dir/sock $base" >"$dir/opts"
		if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o "$(cat "$dir/opts")" >/dev/null; then
			echo "$port" >"$dir/port"
			echo "$bin" >"$dir/bin"
			echo "export DATABASE_URL='postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable'"
			log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, data in $dir"
			return 0
		fi
		log "start on port $port failed (try $try):"; tail -n 5 "$dir/server.log" >&2 || true
	done
	exit 1
}

# reserve_huge_pages adds the huge pages a server started with these
# options needs (PostgreSQL computes it: shared_memory_size_in_huge_pages)
# to the kernel's pool, and notes how many in DIR/hugepages for stop.
reserve_huge_pages() {
	local bin=$1 dir=$2 opts=$3 need total free
	# shellcheck disable=SC2086 # opts is a list of options
	need=$(as_owner "$bin/postgres" -D "$dir/data" $opts -C shared_memory_size_in_huge_pages) \
		|| { log "PG_HUGE_PAGES=1: cannot compute the huge pages the server needs"; exit 1; }
	# Free pages other servers have reserved (and not yet touched) are
	# not free for this one.
	avail() { awk '/^HugePages_Free:/ {f=$2} /^HugePages_Rsvd:/ {r=$2} END {print f-r}' /proc/meminfo; }
	free=$(avail)
	if [ "${free:-0}" -lt "$need" ]; then
		[ "$(id -u)" -eq 0 ] || { log "PG_HUGE_PAGES=1: $need huge pages needed, $free free; as root: sysctl vm.nr_hugepages=$need"; exit 1; }
		total=$(cat /proc/sys/vm/nr_hugepages)
		echo $((total + need - free)) >/proc/sys/vm/nr_hugepages
		echo $((need - free)) >"$dir/hugepages"
		if [ "$(avail)" -lt "$need" ]; then
			# Memory too fragmented for 2 MB pages: compact it, ask again.
			echo 1 >/proc/sys/vm/compact_memory || true
			echo $((total + need - free)) >/proc/sys/vm/nr_hugepages
		fi
		free=$(avail)
		[ "$free" -ge "$need" ] || { log "PG_HUGE_PAGES=1: the kernel gave $free of the $need huge pages needed"; exit 1; }
		log "added $(cat "$dir/hugepages") huge pages (2 MB) to the kernel's pool for the server's $need; given back at stop"
	fi
}

stop() {
	local dir=$1 n total
	[ -d "$dir" ] || return 0
	if [ -f "$dir/bin" ] && [ -d "$dir/data" ]; then
		as_owner "$(cat "$dir/bin")/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	if [ -f "$dir/hugepages" ]; then
		n=$(cat "$dir/hugepages") total=$(cat /proc/sys/vm/nr_hugepages)
		echo $((total > n ? total - n : 0)) >/proc/sys/vm/nr_hugepages || true
	fi
	rm -rf "$dir"
}

restart() {
	local dir=$1 bin
	bin=$(cat "$dir/bin")
	as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
	as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o "$(cat "$dir/opts")" >/dev/null
}

case "${1:-}" in
start) [ $# -eq 2 ] || { echo "usage: $0 start DIR" >&2; exit 2; }; start "$2" ;;
stop) [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
restart) [ $# -eq 2 ] || { echo "usage: $0 restart DIR" >&2; exit 2; }; restart "$2" ;;
run)
	shift
	[ $# -ge 1 ] || { echo "usage: $0 run CMD..." >&2; exit 2; }
	dir=$(mktemp -d "${TMPDIR:-/tmp}/idemgen-pg.XXXXXX")
	trap 'stop "$dir"' EXIT
	trap 'exit 130' INT TERM
	env=$(start "$dir") || exit 1
	eval "$env"
	export DATABASE_URL PGDATA_DIR="$dir"
	status=0
	"$@" || status=$?
	exit $status
	;;
*) echo "usage: $0 start DIR | stop DIR | restart DIR | run CMD..." >&2; exit 2 ;;
esac
