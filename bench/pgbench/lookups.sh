#!/usr/bin/env bash
# Why a replay costs more in a large table (issue 25, "Records in the
# table"): the same 2,000 keys looked up by id at c=32, in a table of 30 k
# records and in one of 1 M, alternating rounds on a throwaway PostgreSQL.
# Every page the lookups touch is in shared_buffers in both tables; the
# difference is how many distinct buffers a backend touches, each of them
# a page fault the first time that backend maps it (4 kB pages), unless
# shared memory is on huge pages. Run it both ways:
#
#   PG_DURABLE=1 scripts/pg.sh run bench/pgbench/lookups.sh
#   PG_HUGE_PAGES=1 PG_DURABLE=1 scripts/pg.sh run bench/pgbench/lookups.sh
#
# Prints each round's tps and the client backends' minor page faults per
# lookup (from /proc, so the server must run on this machine).
set -euo pipefail
: "${DATABASE_URL:?DATABASE_URL is not set (run under scripts/pg.sh run)}"
cd "$(dirname "$0")"
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
pgbench=$bin/pgbench psql=$bin/psql
for f in ../../queries/migrations/0*.up.sql; do "$psql" -q "$DATABASE_URL" -f "$f" >/dev/null; done
"$psql" -q "$DATABASE_URL" <<'SQL'
CREATE TABLE lookups_small (LIKE idem_records INCLUDING ALL);
CREATE TABLE lookups_large (LIKE idem_records INCLUDING ALL);
-- The 2,000 keys that are looked up, first in both tables.
INSERT INTO lookups_small (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
    response_status, response_headers, response_body, completed_at, expires_at)
SELECT idem_record_id('', 'createAtomic', 'replay-' || g), '', 'createAtomic', 'replay-' || g, 'COMPLETED',
    sha256(int8send(g)), 'bench', 201, '{"Content-Type": ["application/json"]}',
    convert_to('{"id":' || g || '}', 'UTF8'), now(), now() + interval '23 hours'
FROM generate_series(1, 2000) g;
INSERT INTO lookups_large SELECT * FROM lookups_small;
-- Then the other records, under random keys: 998 k in the large table,
-- 28 k of those in the small one.
INSERT INTO lookups_large (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
    response_status, response_headers, response_body, completed_at, expires_at)
SELECT idem_record_id('', 'createAtomic', md5('f' || g)), '', 'createAtomic', md5('f' || g), 'COMPLETED',
    sha256(int8send(g)), 'bench', 201, '{"Content-Type": ["application/json"]}',
    convert_to('{"id":' || g || ',"amount":100,"currency":"EUR","reference":"loaded"}', 'UTF8'), now(), now() + interval '23 hours'
FROM generate_series(1, 998000) g;
INSERT INTO lookups_small SELECT * FROM lookups_large WHERE idempotency_key NOT LIKE 'replay-%' LIMIT 28000;
VACUUM ANALYZE lookups_small;
VACUUM ANALYZE lookups_large;
CHECKPOINT;
SQL
echo "huge_pages: $("$psql" -qAt "$DATABASE_URL" -c "SHOW huge_pages"); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
script=$(mktemp)
trap 'rm -f "$script"' EXIT
faults() { # minor faults of every backend of the server (postmaster's children)
	local pm n=0 f
	pm=$(head -n 1 "$PGDATA_DIR/data/postmaster.pid")
	for p in $(pgrep -P "$pm"); do
		f=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $8}') && n=$((n + ${f:-0}))
	done
	echo "$n"
}
for r in $(seq 1 "${ROUNDS:-3}"); do
	for t in small large; do
		printf '\\set k random(1, 2000)\nSELECT state, response_body FROM lookups_%s WHERE id = idem_record_id(%s, %s, %s || :k);\n' \
			"$t" "''" "'createAtomic'" "'replay-'" >"$script"
		# pgbench's connections are new each run: their faults are counted
		# by sampling while they live (the run's backends exit with it).
		"$pgbench" -n -M prepared -c 32 -j 2 -T "${SECONDS_PER_RUN:-5}" -f "$script" "$DATABASE_URL" >"$script.out" 2>&1 &
		sleep "$(( ${SECONDS_PER_RUN:-5} - 1 ))"
		f=$(faults)
		wait
		tps=$(sed -nE 's/^tps = ([0-9.]+).*/\1/p' "$script.out")
		n=$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' "$script.out")
		printf 'round %d  %-5s  %8.0f tps  %.2f page faults per lookup  load %s\n' "$r" "$t" "$tps" "$(awk -v f="$f" -v n="$n" 'BEGIN {print f / n}')" "$(cut -d' ' -f1 /proc/loadavg)"
		rm -f "$script.out"
	done
done
