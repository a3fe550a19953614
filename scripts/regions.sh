#!/usr/bin/env bash
# Two throwaway PostgreSQL clusters on loopback that stand for two regions,
# a and b, each with wal_level=logical so that each can publish its own
# idempotency records to the other (schema.SetupRegion and
# schema.SubscribeRegion create the schemas, publications and subscriptions;
# docs/scaling.md, "Regions").
#
#   scripts/regions.sh start DIR     start both clusters under DIR (DIR/a, DIR/b);
#                                    prints the exports of REGION_A_URL,
#                                    REGION_B_URL, REGION_A_DIR and REGION_B_DIR
#   scripts/regions.sh stop DIR      stop both and delete DIR
#   scripts/regions.sh crash RDIR    kill -9 one cluster's postmaster and its processes
#                                    (by PID, from its postmaster.pid): a region that dies
#   scripts/regions.sh revive RDIR   start that cluster again on its port and data
#   scripts/regions.sh run CMD...    start, run CMD with the variables set, stop and
#                                    delete even when CMD fails; exits with CMD's status
#
# Each cluster is started by scripts/pg.sh (which installs PostgreSQL from
# Debian's packages when it is missing and runs the server as the postgres
# user); this script only adds the logical-replication settings.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
log() { echo "regions.sh: $*" >&2; }

# synchronous_commit=on: a region killed with kill -9 keeps every commit it
# acknowledged (pg.sh turns it off for speed; fsync may stay off, since the
# operating system outlives the killed server).
export PG_OPTS="-c synchronous_commit=on -c wal_level=logical -c max_replication_slots=10 -c max_wal_senders=10 -c max_logical_replication_workers=8 -c wal_sender_timeout=10s -c wal_receiver_timeout=10s ${PG_OPTS:-}"

start() {
	local dir=$1 r url
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	chmod 755 "$dir" # the postgres user must reach DIR/a and DIR/b
	for r in a b; do
		url=$("$here/pg.sh" start "$dir/$r" | sed -n "s/^export DATABASE_URL='\(.*\)'$/\1/p")
		[ -n "$url" ] || { log "region $r did not start"; stop "$dir"; exit 1; }
		local up
		up=$(echo "$r" | tr a-z A-Z)
		echo "export REGION_${up}_URL='$url' REGION_${up}_DIR='$dir/$r'"
	done
	log "regions a and b up under $dir"
}

stop() {
	local dir=$1 r
	for r in a b; do "$here/pg.sh" stop "$dir/$r" || true; done
	rm -rf "$dir"
}

# crash kills the region's server like a power cut: the postmaster and
# every process it started, by their PIDs (the postmaster's from its
# postmaster.pid), with kill -9; the next start recovers from the WAL.
crash() {
	local rdir=$1 pid kids i
	[ -f "$rdir/data/postmaster.pid" ] || { log "$rdir is not running"; return 1; }
	pid=$(head -n 1 "$rdir/data/postmaster.pid")
	kids=$(ps -o pid= --ppid "$pid" | tr -s ' \n' ' ' || true)
	# shellcheck disable=SC2086
	kill -9 "$pid" $kids 2>/dev/null || true
	for i in $(seq 1 200); do
		# shellcheck disable=SC2086
		if ! kill -0 "$pid" $kids 2>/dev/null; then break; fi
		sleep 0.05
	done
	log "killed postmaster $pid and its processes ($kids) of $rdir"
}

revive() {
	local rdir bin try
	rdir=$(cd "$1" && pwd) # absolute: pg_ctl runs from /
	bin=$(cat "$rdir/bin")
	for try in 1 2 3 4 5; do
		if [ "$(id -u)" -eq 0 ]; then
			(cd / && runuser -u postgres -- "$bin/pg_ctl" -D "$rdir/data" -l "$rdir/server.log" -w -t 60 start -o "$(cat "$rdir/opts")") >/dev/null && break
		else
			"$bin/pg_ctl" -D "$rdir/data" -l "$rdir/server.log" -w -t 60 start -o "$(cat "$rdir/opts")" >/dev/null && break
		fi
		log "start of $rdir failed (try $try):"; tail -n 3 "$rdir/server.log" >&2 || true
		[ "$try" -eq 5 ] && return 1
		sleep 1
	done
	log "restarted $rdir"
}

case "${1:-}" in
start) [ $# -eq 2 ] || { echo "usage: $0 start DIR" >&2; exit 2; }; start "$2" ;;
stop) [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
crash) [ $# -eq 2 ] || { echo "usage: $0 crash REGION_DIR" >&2; exit 2; }; crash "$2" ;;
revive) [ $# -eq 2 ] || { echo "usage: $0 revive REGION_DIR" >&2; exit 2; }; revive "$2" ;;
run)
	shift
	[ $# -ge 1 ] || { echo "usage: $0 run CMD..." >&2; exit 2; }
	dir=$(mktemp -d "${TMPDIR:-/tmp}/idemgen-regions.XXXXXX")
	trap 'stop "$dir"' EXIT
	trap 'exit 130' INT TERM
	env=$(start "$dir") || exit 1
	eval "$env"
	export REGION_A_URL REGION_B_URL REGION_A_DIR REGION_B_DIR REGIONS_SCRIPT="$here/regions.sh"
	status=0
	"$@" || status=$?
	exit $status
	;;
*) echo "usage: $0 start DIR | stop DIR | crash REGION_DIR | revive REGION_DIR | run CMD..." >&2; exit 2 ;;
esac
