#!/usr/bin/env bash
# Record layouts side by side (issue 25): the business transaction alone,
# with today's record (v2: primary key on three text columns, B-tree on
# expires_at) and with the v3 candidates (a 16- or 32-byte hash as the
# primary key, no secondary index, BRIN or INCLUDE for expiry, partitions
# by expiry with and without a table of keys beside them), run by
# pgbench at c=32 in alternating rounds on a durable throwaway PostgreSQL.
# Prints every round and, per script, the median tps and the median of the
# per-round ratios against base:
#
#   PG_DURABLE=1 scripts/pg.sh run bench/pgbench/layout.sh
#   SCRIPTS="base v2 h16" ROUNDS=6 SECONDS_PER_RUN=5 PG_DURABLE=1 scripts/pg.sh run bench/pgbench/layout.sh
set -euo pipefail
: "${DATABASE_URL:?DATABASE_URL is not set (run under scripts/pg.sh run)}"
cd "$(dirname "$0")"
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
pgbench=$bin/pgbench psql=$bin/psql
# The migrations before v3 (0005): idem_records is the v2 table, which
# the v2 scripts write; the v3 layout is rec_u16 (schema.sql), as 0005
# makes it.
for f in ../../queries/migrations/000[0-4]_*.up.sql; do "$psql" -q "$DATABASE_URL" -f "$f" >/dev/null; done
"$psql" -q "$DATABASE_URL" -f layout/schema.sql >/dev/null
"$psql" -qAt "$DATABASE_URL" -f layout/partition_dup.sql
scripts=${SCRIPTS:-base v2 v2noexp h16 u16 h32 h16brin h16incl hpart hpartkeys pay2 engine_v2 engine_u16 lease_v2 lease_u16 twocommits}
rounds=${ROUNDS:-4}
secs=${SECONDS_PER_RUN:-5}
out=$(mktemp)
trap 'rm -f "$out" "$out.run"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
	# Rotate the order every round.
	set -- $scripts
	n=$#
	for i in $(seq 0 $((n - 1))); do
		idx=$(( (i + r - 1) % n + 1 ))
		s=${!idx}
		"$pgbench" -n -M prepared -c 32 -j 2 -T "$secs" -f "layout/$s.sql" "$DATABASE_URL" >"$out.run" 2>&1 \
			|| { cat "$out.run" >&2; exit 1; }
		tps=$(sed -nE 's/^tps = ([0-9.]+).*/\1/p' "$out.run")
		[ -n "$tps" ] || { cat "$out.run" >&2; exit 1; }
		echo "$r $s $tps" | tee -a "$out"
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '| script | tps (median) | × base (median of rounds) | per-round × base, round 1 first |\n|---|---:|---:|---|\n'
for s in $scripts; do
	tps=$(awk -v s="$s" '$2 == s { print $3 }' "$out" | median)
	ratios=$(awk -v s="$s" '$2 == "base" { b[$1] = $3 } $2 == s { t[$1] = $3 } END { for (r = 1; r in t; r++) if (b[r] > 0) printf "%.2f\n", t[r] / b[r] }' "$out")
	printf '| %s | %.0f | %.2f | %s |\n' "$s" "$tps" "$(echo "$ratios" | median)" "$(echo $ratios)"
done
