#!/usr/bin/env bash
# A throwaway high-availability PostgreSQL cluster on loopback, for
# idemgen's failover tests: Patroni with etcd, three nodes (a leader, a
# synchronous standby, a second standby), and in front of them HAProxy
# (routing to whichever node Patroni's REST API calls primary) and
# PgBouncer in transaction mode (pointing at HAProxy).
#
#   scripts/ha.sh start DIR          start it, files in DIR (created); prints
#                                    `export NAME=...` lines on stdout (below)
#   scripts/ha.sh stop DIR           stop everything (by PID) and delete DIR
#   scripts/ha.sh status DIR         one line per node: name role state lag
#   scripts/ha.sh leader DIR         the leader's name (waits for one)
#   scripts/ha.sh sync DIR           the synchronous standby's name (waits for one)
#   scripts/ha.sh kill DIR NODE      kill -9 NODE's Patroni and PostgreSQL (no
#                                    clean shutdown, no handover); NODE may be
#                                    `leader` or `sync`; prints the node's name
#   scripts/ha.sh rejoin DIR NODE    start a killed node's Patroni again: it
#                                    rewinds or re-clones and follows the leader
#   scripts/ha.sh switchover DIR     a planned switchover to the sync standby
#                                    (Patroni REST API); prints the new leader
#   scripts/ha.sh wait DIR           wait for a leader with a streaming sync standby
#   scripts/ha.sh run CMD...         start, run CMD with the variables set,
#                                    stop and delete even when CMD fails
#
# Variables printed by start (and set by run):
#   HA_DATABASE_URL  every node, target_session_attrs=read-write: libpq and
#                    pgx try them in turn and keep the one that accepts writes
#   HA_PROXY_URL     HAProxy: one address that follows the primary
#   HA_BOUNCER_URL   PgBouncer, transaction pooling, in front of HAProxy
#   HA_SH, HA_DIR    this script and the cluster's directory, for tests that
#                    kill, rejoin and switch over
#
# Why Patroni and etcd rather than pg_auto_failover: on this kind of machine
# Patroni elects a new leader about 9 s after a kill -9 (ttl 10, loop_wait 2)
# and starts cleanly; pg_auto_failover 2.0 took 51 s with its defaults (12 s
# with the monitor's timeouts lowered) and raced at start-up.
#
# Settings chosen for a test, not for production: trust authentication on
# loopback, fsync off (a killed process loses nothing the kernel holds; the
# cluster is thrown away), small shared_buffers, and a node that cannot be
# rewound after a failover is cloned again (Patroni's
# remove_data_directory_on_rewind_failure and _on_diverged_timelines). Replication is synchronous
# (synchronous_mode: Patroni keeps one standby synchronous and fails over
# only to it), so a commit acknowledged to a client survives a failover.
#
# On Debian or Ubuntu the script installs what it lacks (patroni,
# etcd-server, haproxy, pgbouncer, postgresql, curl) without letting the
# packages start their services. It runs every server as the `postgres`
# user (initdb refuses root), needs no systemd, and must run as root or as
# postgres.
set -euo pipefail

log() { echo "ha.sh: $*" >&2; }
die() { log "$*"; exit 1; }

SCOPE=idemgen
NODES="node1 node2 node3"

pg_bin() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
	[ -n "$d" ] && [ -x "$d/initdb" ] && { echo "$d"; return 0; }
	return 1
}

install_debian() {
	local need=()
	command -v patroni >/dev/null 2>&1 || need+=(patroni)
	command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
	command -v haproxy >/dev/null 2>&1 || need+=(haproxy)
	command -v pgbouncer >/dev/null 2>&1 || need+=(pgbouncer)
	command -v curl >/dev/null 2>&1 || need+=(curl)
	pg_bin >/dev/null || need+=(postgresql)
	[ ${#need[@]} -eq 0 ] && return 0
	command -v apt-get >/dev/null 2>&1 || die "missing ${need[*]} and this is not a Debian-like system: install them"
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	log "installing ${need[*]} from Debian's packages (their services are not started)"
	$sudo mkdir -p /etc/postgresql-common/createcluster.d
	echo "create_main_cluster = false" | $sudo tee /etc/postgresql-common/createcluster.d/idemgen.conf >/dev/null
	local policy=/usr/sbin/policy-rc.d created_policy=""
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
		$sudo chmod +x "$policy"
		created_policy=1
	fi
	local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -q)
	if ! $sudo "${apt[@]}" install -y --no-install-recommends "${need[@]}" >&2; then
		$sudo "${apt[@]}" update >&2
		$sudo "${apt[@]}" install -y --no-install-recommends "${need[@]}" >&2
	fi
	[ -n "$created_policy" ] && $sudo rm -f "$policy"
	# The packages' own services, should one have started anyway.
	for s in etcd patroni haproxy pgbouncer; do
		command -v systemctl >/dev/null 2>&1 && $sudo systemctl disable --now "$s" >/dev/null 2>&1 || true
	done
	return 0
}

# free_ports N prints N different loopback ports no socket uses (listening
# or connected: /proc/net/tcp*), below the kernel's range for outgoing
# connections. One call for all of a cluster's ports, tested with bash's own
# table: a fork costs ~0.1 s on a loaded machine, and a port at a time (two
# greps a try) made ten ports cost ~5 s of the cluster's start.
free_ports() {
	local n=$1 lo p i hex
	local -A used=()
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range || lo=32768
	while read -r hex; do [ -z "$hex" ] || used[$hex]=1; done < <(awk 'FNR > 1 {split($2, a, ":"); print a[2]}' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
	for ((i = 0; i < 200 * $1 && n > 0; i++)); do
		p=$(( 15000 + (RANDOM * 32768 + RANDOM) % (lo - 15000) ))
		printf -v hex '%04X' "$p"
		[ -n "${used[$hex]:-}" ] && continue
		used[$hex]=1
		echo "$p"
		n=$((n - 1))
	done
	[ "$n" -eq 0 ] || die "no free port found"
}

# as_pg runs a command as postgres (directly when already postgres). It
# runs from /: the caller's directory may be one postgres cannot enter (a
# clone under /root or a mode-0700 mktemp -d), and a process started there
# inherits it (Patroni's multiprocessing spawn then fails with "could not
# change directory"). Every path this script hands over is absolute.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# bg_pg starts a long-running command as postgres in a session of its own,
# output to LOG, and waits for its PID in PIDFILE (written by the process
# itself, which then becomes the command: runuser stays as its parent).
bg_pg() {
	local pidfile=$1 logf=$2 i
	shift 2
	rm -f "$pidfile"
	local wrap=(/bin/sh -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@")
	if [ "$(id -u)" -eq 0 ]; then
		# From /, as in as_pg: postgres may not be able to enter our directory.
		(cd / && exec setsid runuser -u postgres -- "${wrap[@]}") >>"$logf" 2>&1 </dev/null &
	else
		setsid "${wrap[@]}" >>"$logf" 2>&1 </dev/null &
	fi
	for i in $(seq 1 100); do
		[ -s "$pidfile" ] && return 0
		sleep 0.05
	done
	die "$1 did not start (see $logf)"
}

rest() { curl -sf --max-time 2 "$@"; }

# cluster prints Patroni's view of the cluster (JSON) from any node that answers.
cluster() {
	local dir=$1 n
	for n in $NODES; do
		rest "http://127.0.0.1:$(cat "$dir/$n/rest_port")/cluster" && return 0
	done
	return 1
}

# member NAME ROLE... prints the first member with one of the roles, from the
# cluster's JSON on stdin; "sync" also requires it to be streaming.
member_with_role() {
	/usr/bin/python3 -c '
import json, sys
try:
    c = json.load(sys.stdin)
except ValueError:
    sys.exit(1)
roles = sys.argv[1:]
for m in c.get("members", []):
    role = m.get("role")
    if role == "standby_leader":
        role = "leader"
    if role in roles and m.get("state") in ("running", "streaming"):
        print(m["name"]); break
' "$@"
}

wait_for() { # DIR WHAT SECONDS: prints the member once there is one
	local dir=$1 what=$2 secs=$3 i out
	for i in $(seq 1 $((secs * 4))); do
		if out=$(cluster "$dir" 2>/dev/null | member_with_role $what) && [ -n "$out" ]; then
			echo "$out"; return 0
		fi
		sleep 0.25
	done
	return 1
}

write_node_config() {
	local dir=$1 n=$2 bin=$3 etcd=$4
	local pgp restp
	pgp=$(cat "$dir/$n/pg_port"); restp=$(cat "$dir/$n/rest_port")
	cat >"$dir/$n/patroni.yml" <<EOF
scope: $SCOPE
name: $n
log:
  level: WARNING
restapi:
  listen: 127.0.0.1:$restp
  connect_address: 127.0.0.1:$restp
etcd3:
  hosts: 127.0.0.1:$etcd
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: logical
        hot_standby: "on"
        wal_log_hints: "on"
        max_connections: 200
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 128MB
        synchronous_commit: "on"
        fsync: "off"
        shared_buffers: 32MB
  initdb:
    - encoding: UTF8
    - locale: C
    - no-sync
  pg_hba:
    - local all all trust
    - host replication all 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$pgp
  connect_address: 127.0.0.1:$pgp
  data_dir: $dir/$n/data
  bin_dir: $bin
  pgpass: $dir/$n/pgpass
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
  authentication:
    superuser: {username: postgres, password: postgres}
    replication: {username: replicator, password: replicator}
    rewind: {username: postgres, password: postgres}
  parameters:
    unix_socket_directories: $dir/$n
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
EOF
}

start_node() {
	local dir=$1 n=$2
	bg_pg "$dir/$n/patroni.pid" "$dir/$n/patroni.log" patroni "$dir/$n/patroni.yml"
}

start() {
	local dir=$1 bin n etcd etcd_peer hap pbp
	install_debian
	bin=$(pg_bin) || die "PostgreSQL binaries missing"
	if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
		useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres
	fi
	[ "$(id -u)" -eq 0 ] || [ "$(id -un)" = postgres ] || die "run as root or as postgres"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local ports i
	mapfile -t ports < <(free_ports 10)
	[ "${#ports[@]}" -eq 10 ] || die "no free port found"
	i=0
	for n in $NODES; do
		mkdir -p "$dir/$n"
		echo "${ports[i]}" >"$dir/$n/pg_port"
		echo "${ports[i + 1]}" >"$dir/$n/rest_port"
		i=$((i + 2))
	done
	etcd=${ports[6]}; etcd_peer=${ports[7]}; hap=${ports[8]}; pbp=${ports[9]}
	echo "$etcd" >"$dir/etcd_port"; echo "$hap" >"$dir/haproxy_port"; echo "$pbp" >"$dir/pgbouncer_port"
	mkdir -p "$dir/etcd"
	[ "$(id -u)" -eq 0 ] && chown -R postgres "$dir"
	chmod 700 "$dir"/node*

	bg_pg "$dir/etcd.pid" "$dir/etcd.log" etcd --name e1 --data-dir "$dir/etcd/data" \
		--listen-client-urls "http://127.0.0.1:$etcd" --advertise-client-urls "http://127.0.0.1:$etcd" \
		--listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
		--initial-cluster "e1=http://127.0.0.1:$etcd_peer" --log-level warn
	local i
	for i in $(seq 1 120); do
		rest "http://127.0.0.1:$etcd/health" >/dev/null 2>&1 && break
		[ "$i" -eq 120 ] && { tail -n 20 "$dir/etcd.log" >&2; die "etcd did not become healthy"; }
		sleep 0.25
	done

	for n in $NODES; do write_node_config "$dir" "$n" "$bin" "$etcd"; done
	[ "$(id -u)" -eq 0 ] && chown -R postgres "$dir"
	# All three at once: the first to take etcd's initialize key bootstraps,
	# the others wait for it to lead and clone from it (starting them after
	# it led cost each one Patroni's start-up, seconds on a loaded machine).
	for n in $NODES; do start_node "$dir" "$n"; done
	wait_for "$dir" leader 90 >/dev/null || { tail -n 30 "$dir"/node*/patroni.log >&2; die "no leader"; }
	wait_for "$dir" sync_standby 120 >/dev/null || { status "$dir" >&2; tail -n 20 "$dir"/node2/patroni.log >&2; die "no synchronous standby"; }

	# HAProxy sends connections to the node whose Patroni says primary, and
	# cuts those to a node that stops saying so.
	{
		echo "global"
		echo "  maxconn 400"
		echo "  log stdout format raw local0"
		echo "defaults"
		echo "  log global"
		echo "  option log-health-checks"
		echo "  mode tcp"
		echo "  timeout connect 2s"
		echo "  timeout client 30m"
		echo "  timeout server 30m"
		echo "  timeout check 1s"
		echo "listen primary"
		echo "  bind 127.0.0.1:$hap"
		echo "  option httpchk GET /primary"
		echo "  http-check expect status 200"
		echo "  default-server inter 500ms fastinter 250ms fall 2 rise 1 on-marked-down shutdown-sessions"
		for n in $NODES; do
			echo "  server $n 127.0.0.1:$(cat "$dir/$n/pg_port") check port $(cat "$dir/$n/rest_port")"
		done
	} >"$dir/haproxy.cfg"
	haproxy -c -q -f "$dir/haproxy.cfg" || die "haproxy.cfg is invalid"
	bg_pg "$dir/haproxy.pid" "$dir/haproxy.log" haproxy -db -f "$dir/haproxy.cfg"

	# PgBouncer, transaction pooling, in front of HAProxy.
	echo '"postgres" ""' >"$dir/userlist.txt"
	cat >"$dir/pgbouncer.ini" <<EOF
[databases]
postgres = host=127.0.0.1 port=$hap dbname=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $pbp
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/userlist.txt
admin_users = postgres
pool_mode = transaction
max_client_conn = 400
default_pool_size = 20
server_connect_timeout = 2
server_login_retry = 1
; While there is no primary, a query waiting for a server connection fails
; after 5 s instead of 120: a client that gave up first makes pgx cancel
; the statement and drain the connection, holding its pool slot up to 15 s.
query_wait_timeout = 5
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
	[ "$(id -u)" -eq 0 ] && chown postgres "$dir/pgbouncer.ini" "$dir/userlist.txt"
	as_pg pgbouncer -d -q "$dir/pgbouncer.ini" || { tail -n 20 "$dir/pgbouncer.log" >&2; die "pgbouncer did not start"; }

	local hosts="" sep=""
	for n in $NODES; do hosts="$hosts${sep}127.0.0.1:$(cat "$dir/$n/pg_port")"; sep=","; done
	local self
	self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
	echo "export HA_DATABASE_URL='postgres://postgres@$hosts/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2'"
	echo "export HA_PROXY_URL='postgres://postgres@127.0.0.1:$hap/postgres?sslmode=disable&connect_timeout=2'"
	echo "export HA_BOUNCER_URL='postgres://postgres@127.0.0.1:$pbp/postgres?sslmode=disable&connect_timeout=2'"
	echo "export HA_SH='$self' HA_DIR='$dir'"
	log "Patroni cluster $SCOPE: leader $(leader "$dir"), sync standby $(sync_standby "$dir"); HAProxy :$hap; PgBouncer :$pbp; files in $dir"
}

kill_pid_file() { # kill -9 the process whose PID is in FILE's first line
	local f=$1 pid
	[ -f "$f" ] || return 0
	pid=$(head -n 1 "$f" 2>/dev/null || true)
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
}

stop() {
	local dir=$1 n
	[ -d "$dir" ] || return 0
	kill_pid_file "$dir/pgbouncer.pid"
	kill_pid_file "$dir/haproxy.pid"
	for n in $NODES; do
		kill_pid_file "$dir/$n/patroni.pid"
	done
	for n in $NODES; do
		# The postmaster (Patroni does not take it along when killed), then
		# its children, which exit once they notice it gone.
		kill_pid_file "$dir/$n/data/postmaster.pid"
	done
	kill_pid_file "$dir/etcd.pid"
	sleep 0.2
	rm -rf "$dir"
}

resolve_node() { # DIR NODE|leader|sync
	case $2 in
	leader) leader "$1" ;;
	sync) sync_standby "$1" ;;
	*) [ -d "$1/$2" ] || die "no node $2 in $1"; echo "$2" ;;
	esac
}

kill_node() {
	local dir=$1 n
	n=$(resolve_node "$dir" "$2")
	kill_pid_file "$dir/$n/patroni.pid"
	kill_pid_file "$dir/$n/data/postmaster.pid"
	echo "$n"
}

rejoin() {
	local dir=$1 n=$2
	[ -d "$dir/$n" ] || die "no node $n in $dir"
	start_node "$dir" "$n"
}

leader() { wait_for "$1" leader 60 || die "no leader"; }
sync_standby() { wait_for "$1" sync_standby 60 || die "no synchronous standby"; }

switchover() {
	local dir=$1 from to answer attempt
	# Patroni answers 503 when it could not write the switchover key into
	# etcd (a DCS slow under load): nothing was done, so ask again.
	for attempt in 1 2 3 4 5 6 7 8 9 10; do
		from=$(leader "$dir"); to=$(sync_standby "$dir")
		answer=$(curl -s --max-time 30 -w ' (HTTP %{http_code})' -X POST -H 'Content-Type: application/json' \
			-d "{\"leader\": \"$from\", \"candidate\": \"$to\"}" \
			"http://127.0.0.1:$(cat "$dir/$from/rest_port")/switchover" || true)
		case $answer in
		*"(HTTP 200)") break ;;
		*"(HTTP 503)") log "switchover from $from to $to, attempt $attempt: $answer; again"; sleep 1 ;;
		*) die "switchover from $from to $to refused: $answer" ;;
		esac
	done
	case $answer in *"(HTTP 200)") ;; *) die "switchover from $from to $to refused $attempt times: $answer" ;; esac
	local i
	for i in $(seq 1 240); do
		[ "$(cluster "$dir" 2>/dev/null | member_with_role leader)" = "$to" ] && { echo "$to"; return 0; }
		sleep 0.25
	done
	die "switchover from $from to $to did not complete"
}

status() {
	cluster "$1" | /usr/bin/python3 -c '
import json, sys
for m in json.load(sys.stdin).get("members", []):
    print(m["name"], m.get("role"), m.get("state"), m.get("lag", 0))
'
}

# Every command's DIR made absolute: as_pg and bg_pg run from /.
if [ $# -ge 2 ] && [ "$1" != run ] && [ -d "$2" ]; then set -- "$1" "$(cd "$2" && pwd)" "${@:3}"; fi

case "${1:-}" in
start) [ $# -eq 2 ] || { echo "usage: $0 start DIR" >&2; exit 2; }; start "$2" ;;
stop) [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
status) [ $# -eq 2 ] || { echo "usage: $0 status DIR" >&2; exit 2; }; status "$2" ;;
leader) [ $# -eq 2 ] || { echo "usage: $0 leader DIR" >&2; exit 2; }; leader "$2" ;;
sync) [ $# -eq 2 ] || { echo "usage: $0 sync DIR" >&2; exit 2; }; sync_standby "$2" ;;
wait) [ $# -eq 2 ] || { echo "usage: $0 wait DIR" >&2; exit 2; }; leader "$2" >/dev/null; sync_standby "$2" >/dev/null ;;
kill) [ $# -eq 3 ] || { echo "usage: $0 kill DIR NODE|leader|sync" >&2; exit 2; }; kill_node "$2" "$3" ;;
rejoin) [ $# -eq 3 ] || { echo "usage: $0 rejoin DIR NODE" >&2; exit 2; }; rejoin "$2" "$3" ;;
switchover) [ $# -eq 2 ] || { echo "usage: $0 switchover DIR" >&2; exit 2; }; switchover "$2" ;;
run)
	shift
	[ $# -ge 1 ] || { echo "usage: $0 run CMD..." >&2; exit 2; }
	dir=$(mktemp -d "${TMPDIR:-/tmp}/idemgen-ha.XXXXXX")
	trap 'stop "$dir"' EXIT
	trap 'exit 130' INT TERM
	eval "$(start "$dir")"
	export HA_DATABASE_URL HA_PROXY_URL HA_BOUNCER_URL HA_SH HA_DIR
	status=0
	"$@" || status=$?
	exit $status
	;;
*) echo "usage: $0 start|stop|status|leader|sync|wait|kill|rejoin|switchover DIR ... | run CMD..." >&2; exit 2 ;;
esac
