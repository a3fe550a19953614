#!/usr/bin/env bash
# The database's share of a request, without HTTP or Go: the statements of
# the baseline, of atomic mode and of a replay, run by pgbench at c=32 in
# alternating rounds on a durable throwaway PostgreSQL (BENCHMARKS.md,
# "the database floor"):
#
#   PG_DURABLE=1 scripts/pg.sh run bench/pgbench/run.sh
set -euo pipefail
: "${DATABASE_URL:?DATABASE_URL is not set (run under scripts/pg.sh run)}"
cd "$(dirname "$0")"
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
pgbench=$bin/pgbench psql=$bin/psql
for f in ../../queries/migrations/0*.up.sql; do "$psql" -q "$DATABASE_URL" -f "$f" >/dev/null; done
"$psql" -q "$DATABASE_URL" -c "CREATE TABLE bench_payments (id bigserial PRIMARY KEY, idempotency_key text,
    amount bigint NOT NULL, currency text NOT NULL, reference text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
for r in ${ROUNDS:-1 2 3}; do
	for s in base record engine claim replay lease; do
		tps=$("$pgbench" -n -M prepared -c 32 -j 2 -T 5 -f "$s.sql" "$DATABASE_URL" 2>/dev/null | sed -nE 's/^tps = ([0-9.]+).*/\1/p')
		echo "round $r  $s  $tps tps"
	done
done
