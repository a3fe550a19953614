#!/usr/bin/env bash
# Same-run A/B of the single-server path: benchserver built at two revisions,
# driven alternately by one benchload (the working tree's), on one
# PostgreSQL with durable commits.
#
#   scripts/benchab.sh A B [ROUNDS]      (make bench-ab A=<rev> B=<rev>)
#
# Each revision's benchserver is built in a temporary git worktree (removed
# afterwards). Each round runs benchload once per side (A then B in odd
# rounds, B then A in even ones): a fresh server, c=32, the scenarios
# baseline, atomic, replay and lease for DURATION each (default 5s), one
# benchload round. Each side has a database of its own on the one server,
# made fresh at the start: revisions may differ in schema (migration 0005,
# records v3, refuses the inserts of an engine from before it), so sharing
# one would fail the older side.
#
# Printed per scenario: each side's req/s over its own baseline measured in
# the same benchload run (x bare, median over rounds), and B/A, the ratio of
# those ratios, per round and as median with min..max. Run it with A = B
# (an A/A pair) to see what the spread is on this machine at this load.
# The server's allocations per request (median) are printed beside: they
# do not depend on the load.
# The per-run lines (with the load average at each run's start) are printed
# first.
#
# Environment: DURATION (default 5s), BENCHAB_KEEP=1 keeps the temporary
# directory (binaries, per-run log). Without DATABASE_URL the script runs
# itself under PG_DURABLE=1 scripts/pg.sh run.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: scripts/benchab.sh A B [ROUNDS]   (ROUNDS >= 5, default 5)" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || usage
rounds=${3:-5}
[[ $rounds =~ ^[0-9]+$ ]] && [ "$rounds" -ge 5 ] || { echo "benchab.sh: ROUNDS: $rounds is not a number >= 5" >&2; exit 2; }
a=$(git -C "$here" rev-parse --verify --quiet "$1^{commit}") || { echo "benchab.sh: A: $1 is not a commit" >&2; exit 2; }
b=$(git -C "$here" rev-parse --verify --quiet "$2^{commit}") || { echo "benchab.sh: B: $2 is not a commit" >&2; exit 2; }

if [ -z "${DATABASE_URL:-}" ]; then
	PG_DURABLE=1 exec "$here/scripts/pg.sh" run "$0" "$@"
fi

duration=${DURATION:-5s}
tmp=$(mktemp -d /tmp/benchab.XXXXXX)
log=$tmp/benchab.log
cleanup() {
	for side in a b; do
		[ -d "$tmp/src-$side" ] && git -C "$here" worktree remove --force "$tmp/src-$side" >/dev/null 2>&1
	done
	git -C "$here" worktree prune
	[ -n "${BENCHAB_KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

echo "benchab: A = $1 ($(git -C "$here" log -1 --format='%h %s' "$a" | cut -c1-70))"
echo "benchab: B = $2 ($(git -C "$here" log -1 --format='%h %s' "$b" | cut -c1-70))"

# The newest benchload drives both sides. It starts a server through the
# environment (DATABASE_URL, ADDR, FIBER_ADDR, POOL_SIZE) and reads
# /_stats; every benchserver since issue 23 began reads the same
# variables and serves the same routes (checked at cd1d310^ and 953a398^).
(cd "$here/bench" && go build -o "$tmp/benchload" ./cmd/benchload)
for side in a b; do
	rev=$a; [ $side = b ] && rev=$b
	git -C "$here" worktree add --detach --quiet "$tmp/src-$side" "$rev"
	(cd "$tmp/src-$side/bench" && go build -o "$tmp/server-$side" ./cmd/benchserver)
	git -C "$here" worktree remove --force "$tmp/src-$side"
done

# A database per side on the one server; fresh for this run.
base=${DATABASE_URL%%\?*}
query=${DATABASE_URL#"$base"}
for side in a b; do
	psql -q -v ON_ERROR_STOP=1 "$DATABASE_URL" -c "DROP DATABASE IF EXISTS benchab_$side" -c "CREATE DATABASE benchab_$side" >/dev/null
done
url() { echo "${base%/*}/benchab_$1$query"; }

unset REDIS_URL
: >"$log"
for r in $(seq 1 "$rounds"); do
	order="a b"; [ $((r % 2)) -eq 0 ] && order="b a"
	for side in $order; do
		echo "### round $r side $side load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log"
		if ! "$tmp/benchload" -server "$tmp/server-$side" -database-url "$(url $side)" -duration "$duration" -rounds 1 \
			-concurrency 32 -scenarios baseline,atomic,replay,lease >/dev/null 2>"$tmp/run.err"; then
			cat "$tmp/run.err" >&2
			echo "benchab.sh: benchload failed in round $r on side $side" >&2
			exit 1
		fi
		grep '^round ' "$tmp/run.err" | sed "s/^round 1 /round $r side $side /" >>"$log"
		echo "benchab: round $r side $side done (load $(cut -d' ' -f1 /proc/loadavg))" >&2
	done
done

cat "$log"
# round R side S NAME c=32 RPS req/s ...
awk -v A="$1" -v B="$2" '
/^### round/ { loads[++nl] = $7 }
/^round [0-9]+ side / {
	r = $2; s = $4; n = $5; rps[r, s, n] = $7; seen[n] = 1; if (r > R) R = r
	for (i = 8; i <= NF; i++) if ($i == "allocs/req") allocs[r, s, n] = $(i - 1)
}
function median(arr, k,    i, j, t) {
	for (i = 2; i <= k; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j + 1] = arr[j]; arr[j + 1] = t }
	return k % 2 ? arr[(k + 1) / 2] : (arr[k / 2] + arr[k / 2 + 1]) / 2
}
END {
	printf "\nB/A of (variant req/s / baseline req/s), per round and median (min..max); %d rounds, c=32\n", R
	printf "A = %s, B = %s\n\n", A, B
	printf "| scenario | A x bare | B x bare | B/A per round | B/A median (min..max) | allocs/req A -> B |\n|---|---:|---:|---|---:|---:|\n"
	split("atomic replay lease", names, " ")
	for (ni = 1; ni <= 3; ni++) {
		n = names[ni]; if (!(n in seen)) continue
		k = 0; per = ""; lo = 1e9; hi = 0
		for (r = 1; r <= R; r++) {
			if (!((r, "a", n) in rps) || !((r, "b", n) in rps)) continue
			ra = rps[r, "a", n] / rps[r, "a", "baseline"]; rb = rps[r, "b", n] / rps[r, "b", "baseline"]
			q = rb / ra; k++; qa[k] = ra; qb[k] = rb; qq[k] = q; aa[k] = allocs[r, "a", n]; ab[k] = allocs[r, "b", n]
			per = per sprintf("%s%.2f", k > 1 ? " " : "", q); if (q < lo) lo = q; if (q > hi) hi = q
		}
		printf "| %s | %.2f | %.2f | %s | %.2f (%.2f..%.2f) | %.0f -> %.0f |\n", n, median(qa, k), median(qb, k), per, median(qq, k), lo, hi, median(aa, k), median(ab, k)
	}
	k = 0; for (r = 1; r <= R; r++) if ((r, "a", "baseline") in rps) { k++; ba[k] = rps[r, "a", "baseline"]; bb[k] = rps[r, "b", "baseline"] }
	printf "\nbaseline req/s, median: A %.0f, B %.0f\n", median(ba, k), median(bb, k)
	lo = 1e9; hi = 0; for (i = 1; i <= nl; i++) { if (loads[i] < lo) lo = loads[i]; if (loads[i] > hi) hi = loads[i] }
	printf "load average (1 min) at the runs'"'"' starts: %.2f..%.2f\n", lo, hi
}' "$log"
uptime
