#!/usr/bin/env bash
# Mutation check of the runtime's SQL: each mutant breaks one guarantee in
# queries/records.sql (one change, so that a mutant another change would give
# away does not hide behind it), the queries are compiled again, and the test suites
# run against it. A mutant the tests do not catch ("SURVIVED") is a
# guarantee no test defends. The files are restored afterwards, whatever
# happens.
#
#   scripts/pg.sh run scripts/mutants.sh            every mutant, both suites
#   scripts/pg.sh run scripts/mutants.sh a b        mutants a and b
#   SUITES=e2e scripts/pg.sh run scripts/mutants.sh a
#
# A mutant can make a test wait for something that never comes; the suites
# then end at their timeout (3 and 8 minutes), which counts as caught.
#
# SUITES lists what runs per mutant: "idem" (go test ./runtime/idem) and
# "e2e" (the payments example's end-to-end tests, real processes); both by
# default. Needs DATABASE_URL (scripts/pg.sh run sets it). Exit status 1
# when a mutant survives.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?DATABASE_URL is not set (run under scripts/pg.sh run)}"
SUITES=${SUITES:-"idem e2e"}
SQL=queries/records.sql
GEN=runtime/idem/internal/store/records.sql.go

# name|description|sed script (extended regular expressions) applied to $SQL
MUTANTS=(
	"a|Claim takes over a live lease (the lease check is true)|s/\(r\.state = 'IN_PROGRESS' AND r\.lease_expires_at <= now\(\)\)/(r.state = 'IN_PROGRESS' AND true)/"
	"b|every fenced statement ignores the fence (outcomes, retryable, unknown, recovery points)|s/AND fence = @fence AND state = 'IN_PROGRESS'/AND (fence = @fence OR true) AND state = 'IN_PROGRESS'/"
	"c|atomic mode: a duplicate's record write silently succeeds|s/^(    now\(\) \+ \(@ttl_ms::bigint\) \* interval '1 millisecond'\));\$/\1 ON CONFLICT DO NOTHING;/"
	"d|the replay read ignores the fingerprint|s/\(fingerprint = @fingerprint\)::boolean AS same_request/true::boolean AS same_request/"
	"e|lease renewals renew nothing|s/  AND r\.fence = v\.fence AND r\.state = 'IN_PROGRESS'/  AND false/"
	"f|an outcome the recovery hook cannot tell is stored as EXPIRED, not UNKNOWN|/^-- name: MarkUnknown/,/;\$/ s/^    state = 'UNKNOWN',/    state = 'EXPIRED',/"
	"g|the sweeper makes abandoned claims EXPIRED (deletable), not UNKNOWN|/^-- name: AbandonClaims/,/;\$/ s/^    state = 'UNKNOWN',/    state = 'EXPIRED',/"
	"h|the sweeper abandons live claims (the lease is ignored)|s/^      AND \(s\.lease_expires_at IS NULL OR s\.lease_expires_at <= now\(\)\)\$/      AND true/"
	"i|unresolved UNKNOWN records are deleted without waiting for the grace|s/WHERE s\.state = 'UNKNOWN' AND s\.expires_at <= now\(\) - \(@grace_ms::bigint\)/WHERE s.state = 'UNKNOWN' AND now() >= now() - (@grace_ms::bigint)/"
	"j|only Complete and CompleteOrAbort ignore the fence: a fenced-out holder's outcome is stored|/^-- name: Complete(OrAbort)? :/,/;\$/ s/AND fence = @fence AND state = 'IN_PROGRESS'/AND (fence = @fence OR true) AND state = 'IN_PROGRESS'/"
	"k|a lease claim of a FAILED_RETRYABLE record whose handler ran is not a takeover: the retry runs without its recovery hook|s/OR \(r\.state = 'FAILED_RETRYABLE' AND r\.taken_over AND/OR (r.state = 'FAILED_RETRYABLE' AND false AND/"
)

backup=$(mktemp -d)
cp "$SQL" "$backup/sql"
cp "$GEN" "$backup/gen"
restore() {
	cp "$backup/sql" "$SQL"
	cp "$backup/gen" "$GEN"
	rm -rf "$backup"
}
trap restore EXIT

# run_suite runs one suite into $log; it fails when the suite does.
run_suite() {
	case $1 in
	idem) go test -count=1 -timeout 3m ./runtime/idem/ >"$log" 2>&1 ;;
	e2e) (cd examples/payments && go test -count=1 -timeout 8m ./e2e/) >"$log" 2>&1 ;;
	*) echo "mutants: unknown suite $1" >&2; exit 2 ;;
	esac
}

want=" $* "
survived=0
broken=0
printf '%-7s %-6s %-9s %s\n' mutant suite result "description / tests that failed"
for m in "${MUTANTS[@]}"; do
	IFS='|' read -r name desc script <<<"$m"
	if [ $# -gt 0 ] && [[ $want != *" $name "* ]]; then continue; fi
	cp "$backup/sql" "$SQL"
	sed -E -i "$script" "$SQL"
	if cmp -s "$SQL" "$backup/sql"; then
		echo "mutants: mutant $name changed nothing in $SQL (its pattern is stale)" >&2
		exit 2
	fi
	go tool -modfile=tools/go.mod sqlc generate
	echo "$name: $desc"
	for suite in $SUITES; do
		log=$(mktemp "${TMPDIR:-/tmp}/mutant-$name-$suite.XXXXXX.log")
		if run_suite "$suite"; then
			printf '%-7s %-6s %-9s (log: %s)\n' "$name" "$suite" SURVIVED "$log"
			survived=1
		elif grep -qE '\[(build|setup) failed\]' "$log"; then
			# A mutant that does not compile proves nothing: its SQL
			# changed the generated code's signatures.
			printf '%-7s %-6s %-9s (log: %s)\n' "$name" "$suite" BROKEN "$log"
			broken=1
		else
			failed=$(grep -E '^\s*--- FAIL' "$log" | sed -E 's/^\s*--- FAIL: ([^ ]+).*/\1/' | sort -u | head -8 | tr '\n' ' ' || true)
			[ -n "$failed" ] || failed="(no test failed by name: $(grep -E 'panic: test timed out|FAIL' "$log" | head -1 || true))"
			printf '%-7s %-6s %-9s %s\n' "$name" "$suite" killed "$failed"
			rm -f "$log"
		fi
	done
	cp "$backup/sql" "$SQL"
	cp "$backup/gen" "$GEN"
done
[ "$broken" -eq 0 ] || { echo "mutants: a mutant did not compile; fix its sed script so the queries keep their parameters" >&2; exit 2; }
exit $survived
