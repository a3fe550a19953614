#!/usr/bin/env bash
# Mutation check of the engine's guarantees: each mutant breaks one of them
# (one change, so that a mutant another change would give away does not
# hide behind it), in the runtime's SQL (queries/records.sql, compiled
# again by sqlc) or in its Go code, and the test suites run against it. A
# mutant the tests do not catch ("SURVIVED") is a guarantee no test
# defends. The files are restored afterwards, whatever happens. The list of
# guarantees and the tests that catch each: docs/testing.md, "Mutants".
#
#   scripts/pg.sh run scripts/mutants.sh            every mutant, both suites
#   scripts/pg.sh run scripts/mutants.sh a b        mutants a and b
#   SUITES=e2e scripts/pg.sh run scripts/mutants.sh a
#   scripts/mutants.sh -check                       only check that every mutant
#                                                   still applies (make test runs it)
#
# A mutant that no longer applies (its pattern matches nothing, or a SQL
# mutant changes a query's parameters, so that sqlc would change the Go
# signatures and the mutant could not compile) stops the script before
# anything runs, with exit status 2: update the mutant with the code.
#
# A mutant can make a test wait for something that never comes; the suites
# then end at their timeout (10 and 15 minutes, long enough for a loaded
# machine), which counts as caught.
#
# SUITES lists what runs per mutant: "idem" (go test ./runtime/idem/...
# ./runtime/idemredis/...) and "e2e" (the payments example's end-to-end
# tests, real processes); both by default, in that order. FIRST=1 skips
# the suites after the first that catches a mutant. Needs DATABASE_URL and
# REDIS_URL (scripts/pg.sh run scripts/redis.sh run sets them). Exit
# status 1 when a mutant survives.
set -euo pipefail
cd "$(dirname "$0")/.."
SUITES=${SUITES:-"idem e2e"}
GEN=runtime/idem/internal/store/records.sql.go

# name|file|guarantee the mutant breaks|perl substitution (perl -0pe: the
# whole file at once, so a pattern may anchor on a query's "-- name:" line)
MUTANTS=(
	"a|queries/records.sql|a lease claim is never taken over while its lease holds|s/\(r\.state = 'IN_PROGRESS' AND r\.lease_expires_at <= now\(\)\)/(r.state = 'IN_PROGRESS' AND true)/"
	"b|queries/records.sql|a fenced-out holder changes nothing (every fenced statement: outcomes, retryable, unknown, recovery points)|s/AND fence = \@fence AND state = 'IN_PROGRESS'/AND (fence = \@fence OR true) AND state = 'IN_PROGRESS'/g"
	"c|queries/records.sql|atomic mode: a duplicate's record insert fails, so its business writes never commit|s/(-- name: InsertOutcome :one\n(?:.*\n)*?)RETURNING completed_at;/\1ON CONFLICT (id) DO NOTHING\nRETURNING completed_at;/"
	"d|queries/records.sql|the replay read checks the fingerprint (same key, other payload is a conflict, not a replay)|s/\(s\.fingerprint = \@fingerprint::bytea\) AS same_request/(s.fingerprint = \@fingerprint::bytea OR true)::boolean AS same_request/"
	"e|queries/records.sql|lease renewals renew the live claims|s/  AND r\.fence = v\.fence AND r\.state = 'IN_PROGRESS'/  AND false/"
	"f|queries/records.sql|an outcome the recovery hook cannot tell is kept as UNKNOWN|s/(-- name: MarkUnknown :execrows\n(?:.*\n)*?    state = )'UNKNOWN'/\1'EXPIRED'/"
	"g|queries/records.sql|the sweeper makes abandoned claims UNKNOWN, never deletable EXPIRED|s/(UPDATE idem_records r SET state = )'UNKNOWN'(, lease_expires_at = NULL)/\1'EXPIRED'\2/"
	"h|queries/records.sql|the sweeper spares a claim whose lease holds|s/coalesce\(([dr])\.lease_expires_at <= now\(\), true\)/true/g"
	"i|queries/records.sql|the sweeper deletes an UNKNOWN record only after its grace|s/([dr])\.expires_at <= now\(\) - \(\@unknown_grace_ms::bigint\)/now() >= now() - (\@unknown_grace_ms::bigint)/g"
	"j|queries/records.sql|a fenced-out holder's outcome is never stored (Complete and CompleteOrAbort only)|s/(-- name: Complete(?:OrAbort)? :one\n(?:.*\n)*?.*)AND fence = \@fence AND state = 'IN_PROGRESS'/\1AND (fence = \@fence OR true) AND state = 'IN_PROGRESS'/g"
	"k|queries/records.sql|a retry of a FAILED_RETRYABLE record whose handler ran recovers first|s/OR \(r\.state = 'FAILED_RETRYABLE' AND r\.taken_over AND/OR (r.state = 'FAILED_RETRYABLE' AND false AND/"
	"l|queries/records.sql|atomic mode: a re-run never replaces a record a duplicate completed meanwhile|s/SELECT \(1 \/ count\(\*\)\)::integer AS stored, coalesce/SELECT (1 \/ greatest(count(*), 1))::integer AS stored, coalesce/"
	"m|queries/records.sql|the sweeper spares a claim whose key has not expired|s/\(d\.state = 'IN_PROGRESS' AND d\.expires_at <= now\(\) AND/(d.state = 'IN_PROGRESS' AND true AND/; s/r\.state = 'IN_PROGRESS' AND r\.expires_at <= now\(\) AND coalesce/r.state = 'IN_PROGRESS' AND true AND coalesce/"
	"t|runtime/idem/cacheentry.go|a tenant's cache entries are its own (an entry is bound to its tenant, and so is its key)|s/(func \(id \*cacheIdentity\) record\(k Key\) \(sum \[sha256\.Size\]byte, key string\) \{\n)/\1\tk.Tenant = \"\"\n/"
)

# The files mutants change, each kept as it was.
files=$(for m in "${MUTANTS[@]}"; do IFS='|' read -r _ file _ <<<"$m"; echo "$file"; done | sort -u)
backup=$(mktemp -d)
for f in $files $GEN; do mkdir -p "$backup/$(dirname "$f")"; cp "$f" "$backup/$f"; done
restore() {
	for f in $files $GEN; do cp "$backup/$f" "$f"; done
	rm -rf "$backup"
}
trap restore EXIT

# params FILE prints a SQL file's queries and the parameters each takes,
# sorted: a mutant must leave them as they are.
params() {
	perl -ne 'if (/^-- name: (\w+)/) { $q = $1 } while (/\@(\w+)/g) { print "$q $1\n" }' "$1" | sort -u
}

# mutate NAME FILE SCRIPT OUT writes the mutant of FILE (from the backup)
# to OUT; it fails when the mutant no longer applies.
mutate() {
	local name=$1 file=$2 script=$3 out=$4
	perl -0pe "$script" "$backup/$file" >"$out"
	if cmp -s "$backup/$file" "$out"; then
		echo "mutants: mutant $name: its substitution matches nothing in $file (update it with the code)" >&2
		return 1
	fi
	if [[ $file == *.sql ]] && ! diff <(params "$backup/$file") <(params "$out") >/dev/null; then
		echo "mutants: mutant $name changes the parameters of a query in $file, so its Go code would not compile:" >&2
		diff <(params "$backup/$file") <(params "$out") >&2 || true
		return 1
	fi
}

# Every mutant must apply before any runs (and -check stops there).
stale=0
for m in "${MUTANTS[@]}"; do
	IFS='|' read -r name file desc script <<<"$m"
	mutate "$name" "$file" "$script" "$backup/mutant" || stale=1
done
[ "$stale" -eq 0 ] || exit 2
if [ "${1:-}" = -check ]; then
	echo "mutants: all ${#MUTANTS[@]} mutants apply"
	exit 0
fi
: "${DATABASE_URL:?DATABASE_URL is not set (run under scripts/pg.sh run)}"

# run_suite runs one suite into $log; it fails when the suite does.
run_suite() {
	case $1 in
	idem) go test -count=1 -timeout 10m ./runtime/idem/... ./runtime/idemredis/... >"$log" 2>&1 ;;
	e2e) (cd examples/payments && go test -count=1 -timeout 15m ./e2e/) >"$log" 2>&1 ;;
	*) echo "mutants: unknown suite $1" >&2; exit 2 ;;
	esac
}

want=" $* "
survived=0
broken=0
printf '%-7s %-6s %-9s %s\n' mutant suite result "guarantee broken / tests that failed"
for m in "${MUTANTS[@]}"; do
	IFS='|' read -r name file desc script <<<"$m"
	if [ $# -gt 0 ] && [[ $want != *" $name "* ]]; then continue; fi
	mutate "$name" "$file" "$script" "$file"
	if [[ $file == *.sql ]]; then go tool -modfile=tools/go.mod sqlc generate; fi
	echo "$name: $desc"
	for suite in $SUITES; do
		log=$(mktemp "${TMPDIR:-/tmp}/mutant-$name-$suite.XXXXXX.log")
		if run_suite "$suite"; then
			printf '%-7s %-6s %-9s (log: %s)\n' "$name" "$suite" SURVIVED "$log"
			survived=1
		elif grep -qE '\[(build|setup) failed\]' "$log"; then
			# A mutant that does not compile proves nothing.
			printf '%-7s %-6s %-9s (log: %s)\n' "$name" "$suite" BROKEN "$log"
			broken=1
		else
			failed=$(grep -E '^\s*--- FAIL' "$log" | sed -E 's/^\s*--- FAIL: ([^ ]+).*/\1/' | sort -u | head -8 | tr '\n' ' ' || true)
			[ -n "$failed" ] || failed="(no test failed by name: $(grep -E 'panic: test timed out|FAIL' "$log" | head -1 || true))"
			printf '%-7s %-6s %-9s %s\n' "$name" "$suite" killed "$failed"
			rm -f "$log"
			[ "${FIRST:-}" = 1 ] && break
		fi
	done
	cp "$backup/$file" "$file"
	cp "$backup/$GEN" "$GEN"
done
[ "$broken" -eq 0 ] || { echo "mutants: a mutant did not compile; fix its substitution so the code keeps its signatures" >&2; exit 2; }
exit $survived
