#!/usr/bin/env bash
# Runs commands side by side and reports each one's time.
#
#   scripts/lanes.sh CMD...    run every CMD (a shell command line) at once,
#                              each with its output in a file; print a lane's
#                              output as one block when it ends, with its wall
#                              and CPU seconds; exit 1 if any lane failed
#                              (after all have ended)
#
# make test uses it to keep both cores busy: a lane that waits on the
# network (go mod tidy, downloads) or on a cluster (the failover test) runs
# beside one that compiles. Lanes' outputs are not interleaved, so a failure
# reads as it would in a serial run. A failed lane's test failures (go
# test's "--- FAIL" lines with the messages under them, panics, races) are
# printed once more after every lane has ended, so that the end of the log
# names what failed even when a lane's block is long.
#
# Interrupted (Ctrl-C, a CI timeout), it stops every lane by its process
# group, so no test or server of a lane is left behind.
set -uo pipefail

[ $# -gt 0 ] || { echo "usage: scripts/lanes.sh CMD..." >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/idemgen-lanes.XXXXXX")
set -m # every lane leads a process group of its own
declare -A lane=()
pids=()
cmds=("$@")
n=0
for c in "$@"; do
	n=$((n + 1))
	echo "lane $n: $c"
	(
		TIMEFORMAT="%R %U %S" # wall, user and system seconds of the lane and its children
		rc=0
		{ time bash -c "$c" >"$dir/$n.out" 2>&1; } 2>"$dir/$n.time" || rc=$?
		exit "$rc"
	) &
	lane[$!]=$n
	pids+=($!)
done
stop() {
	local p
	for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
	wait 2>/dev/null
	rm -rf "$dir"
	exit 130
}
trap stop INT TERM

failed=0
bad=()
for _ in $(seq 1 "$n"); do
	pid=""
	wait -n -p pid
	rc=$?
	i=${lane[$pid]}
	read -r wall user sys <"$dir/$i.time" || true
	echo "=== lane $i ($([ "$rc" -eq 0 ] && echo ok || echo "FAILED, exit $rc"), ${wall:-?} s wall, $(awk -v u="${user:-0}" -v s="${sys:-0}" 'BEGIN { printf "%.1f", u + s }') s CPU): ${cmds[$((i - 1))]}"
	cat "$dir/$i.out"
	echo "=== end of lane $i"
	[ "$rc" -eq 0 ] || { failed=1; bad+=("$i"); }
done
for i in "${bad[@]}"; do
	echo "=== failures in lane $i: ${cmds[$((i - 1))]}"
	grep -E -A12 '^[[:space:]]*--- FAIL|^panic:|^WARNING: DATA RACE|^(FAIL|ok)[[:space:]]|^make(\[[0-9]+\])?: \*\*\*' "$dir/$i.out" |
		grep -v -E '^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9:]{8} ' | grep -v -E '^ok[[:space:]]' | head -n 80
done
rm -rf "$dir"
exit "$failed"
