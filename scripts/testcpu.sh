#!/usr/bin/env bash
# A `go test -exec` wrapper: runs a test binary and appends one line, its
# package directory (relative to the repository), wall and CPU seconds
# (user + sys of the binary and its children), to $TESTCPU_LOG when set.
#
#   go test -exec "$PWD/scripts/testcpu.sh" ./...
#
# make test prints the lines at the end (scripts/lanes.sh gives each lane's
# total, compiling included; this gives the run of each test binary alone).
start=$EPOCHREALTIME
"$@"
rc=$?
if [ -n "${TESTCPU_LOG:-}" ]; then
	root=$(cd "$(dirname "$0")/.." && pwd)
	# This shell's /proc stat, fields 16 and 17: user and sys clock ticks of
	# the children it waited for (the test binary and what it waited for).
	read -r -a st <"/proc/$$/stat"
	printf '%-50s %8.1f s wall %8.1f s CPU%s\n' "$(realpath --relative-to="$root" .)" \
		"$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" \
		"$(awk -v t="$((st[15] + st[16]))" -v hz="$(getconf CLK_TCK)" 'BEGIN { print t / hz }')" \
		"$([ "$rc" -eq 0 ] || echo " (exit $rc)")" >>"$TESTCPU_LOG"
fi
exit "$rc"
