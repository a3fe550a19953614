#!/usr/bin/env bash
# A throwaway Redis for idemgen's tests and benchmarks (the engine's
# optional cache, runtime/idemredis).
#
#   scripts/redis.sh start DIR     start a server whose files live in DIR (created);
#                                  prints `export REDIS_URL=...` on stdout
#   scripts/redis.sh stop DIR      stop it (by its PID) and delete DIR
#   scripts/redis.sh kill DIR      kill -9 it, keeping DIR (for restart)
#   scripts/redis.sh restart DIR   stop it if it runs (kill -9 leaves nothing to
#                                  stop) and start it again, empty, on the same port
#   scripts/redis.sh run CMD...    start, run CMD with REDIS_URL set, stop and
#                                  delete even when CMD fails; exits with CMD's status
#
# `run` also exports REDIS_SH (this script's absolute path), so tests can
# start servers of their own to stop, pause or kill.
#
# The server keeps nothing on disk (no RDB snapshots, no AOF): a restart is
# an empty cache, which is what the engine must survive anyway. It listens
# on 127.0.0.1 only, on a free port.
#
# Environment:
#   REDIS_BIN=DIR   use redis-server and redis-cli from DIR
#
# On Debian or Ubuntu the script installs the `redis-server` package when no
# binary is found, without letting the package start its system service.
# Elsewhere, install Redis 7 or later yourself and set REDIS_BIN (or put
# redis-server and redis-cli on PATH).
set -euo pipefail

log() { echo "redis.sh: $*" >&2; }

find_bin() {
	if [ -n "${REDIS_BIN:-}" ]; then
		[ -x "$REDIS_BIN/redis-server" ] && [ -x "$REDIS_BIN/redis-cli" ] && { echo "$REDIS_BIN"; return 0; }
		log "REDIS_BIN=$REDIS_BIN has no redis-server or redis-cli"; return 1
	fi
	if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
		dirname "$(command -v redis-server)"; return 0
	fi
	return 1
}

install_debian() {
	if ! command -v apt-get >/dev/null 2>&1; then
		log "no redis-server found and this is not a Debian-like system."
		log "install Redis 7+ and set REDIS_BIN to the directory with redis-server and redis-cli."
		return 1
	fi
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	log "installing redis-server from Debian's packages (its service is not started)"
	local policy=/usr/sbin/policy-rc.d created_policy=""
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
		$sudo chmod +x "$policy"
		created_policy=1
	fi
	local status=0
	{ $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 &&
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q \
			--no-install-recommends redis-server >&2; } || status=$?
	[ -n "$created_policy" ] && $sudo rm -f "$policy"
	return $status
}

free_port() {
	local p i
	for i in $(seq 1 50); do
		p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 30000 ))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
	done
	log "no free port found"; return 1
}

# launch starts redis-server on the port in $dir/port and waits for PING.
launch() {
	local dir=$1 bin port i
	bin=$(cat "$dir/bin") port=$(cat "$dir/port")
	rm -f "$dir/redis.pid"
	"$bin/redis-server" --bind 127.0.0.1 --port "$port" --daemonize yes \
		--pidfile "$dir/redis.pid" --dir "$dir" --logfile "$dir/redis.log" \
		--save '' --appendonly no --maxmemory 256mb --maxmemory-policy allkeys-lru >/dev/null || return 1
	for i in $(seq 1 100); do
		if [ -s "$dir/redis.pid" ] && [ "$("$bin/redis-cli" -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
			return 0
		fi
		sleep 0.05
	done
	log "redis-server on port $port did not answer PING:"; tail -n 5 "$dir/redis.log" >&2 || true
	return 1
}

start() {
	local dir=$1 bin try
	bin=$(find_bin) || { install_debian && bin=$(find_bin); } || { log "redis-server still missing"; exit 1; }
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	echo "$bin" >"$dir/bin"
	for try in 1 2 3 4 5; do
		free_port >"$dir/port"
		if launch "$dir"; then
			echo "export REDIS_URL='redis://127.0.0.1:$(cat "$dir/port")/0'"
			log "$("$bin/redis-server" --version | awk '{print $3}' | tr -d v=) on 127.0.0.1:$(cat "$dir/port"), PID $(cat "$dir/redis.pid"), files in $dir"
			return 0
		fi
		terminate "$dir" || true
		log "start on port $(cat "$dir/port") failed (try $try)"
	done
	exit 1
}

# terminate stops the server by its PID (TERM, then KILL after 5 s).
terminate() {
	local dir=$1 pid i
	[ -s "$dir/redis.pid" ] || return 0
	pid=$(cat "$dir/redis.pid")
	kill "$pid" 2>/dev/null || { rm -f "$dir/redis.pid"; return 0; }
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || { rm -f "$dir/redis.pid"; return 0; }
		sleep 0.05
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$dir/redis.pid"
}

stop() {
	local dir=$1
	[ -d "$dir" ] || return 0
	terminate "$dir"
	rm -rf "$dir"
}

kill9() {
	local dir=$1 pid i
	[ -s "$dir/redis.pid" ] || { log "no PID in $dir"; return 1; }
	pid=$(cat "$dir/redis.pid")
	kill -9 "$pid"
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	rm -f "$dir/redis.pid"
}

restart() {
	local dir=$1
	terminate "$dir"
	launch "$dir"
}

case "${1:-}" in
start) [ $# -eq 2 ] || { echo "usage: $0 start DIR" >&2; exit 2; }; start "$2" ;;
stop) [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
kill) [ $# -eq 2 ] || { echo "usage: $0 kill DIR" >&2; exit 2; }; kill9 "$2" ;;
restart) [ $# -eq 2 ] || { echo "usage: $0 restart DIR" >&2; exit 2; }; restart "$2" ;;
run)
	shift
	[ $# -ge 1 ] || { echo "usage: $0 run CMD..." >&2; exit 2; }
	dir=$(mktemp -d "${TMPDIR:-/tmp}/idemgen-redis.XXXXXX")
	trap 'stop "$dir"' EXIT
	trap 'exit 130' INT TERM
	eval "$(start "$dir")"
	REDIS_SH=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
	export REDIS_URL REDIS_SH
	status=0
	"$@" || status=$?
	exit $status
	;;
*) echo "usage: $0 start DIR | stop DIR | kill DIR | restart DIR | run CMD..." >&2; exit 2 ;;
esac
