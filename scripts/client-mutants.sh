#!/usr/bin/env bash
# Mutation check of the generated client's retry rules: each mutant breaks
# one rule of runtime/idemclient (the package the generated clients call),
# and the package's tests run against it. A mutant the tests do not catch
# ("SURVIVED") is a rule no test defends. The files are restored
# afterwards, whatever happens.
#
#   scripts/client-mutants.sh          every mutant
#   scripts/client-mutants.sh a b      mutants a and b
#
# Needs no database. Exit status 1 when a mutant survives, 2 when one no
# longer applies (the code it mutates has changed: update the mutant).
set -euo pipefail
cd "$(dirname "$0")/.."
PKG=runtime/idemclient

# name|file|rule broken|perl substitution (applied with -0pe to the file)
MUTANTS=(
	"conflict|do.go|a 409 CONFLICTING is retried|s/if p == nil \|\| \(p\.Reason != ReasonInProgress && p\.Reason != ReasonLeaseLost\) \{/if p == nil {/"
	"4xx|do.go|a 4xx that needs a corrected request is retried|s/case s >= 500:/case s >= 400:/"
	"unsafe|do.go|a POST that opted out is retried without WithRetryUnsafe|s/\|\| idempotentMethod\[op\.Method\] \|\| cl\.unsafe/|| true/"
	"optin|do.go|WithRetryUnsafe is ignored|s/\|\| idempotentMethod\[op\.Method\] \|\| cl\.unsafe/|| idempotentMethod[op.Method]/"
	"get|do.go|a GET is not retried|s/\|\| idempotentMethod\[op\.Method\] \|\| cl\.unsafe/|| cl.unsafe/"
	"retry-after|do.go|Retry-After is ignored (backoff instead)|s/ParseRetryAfter\(resp\.Header\); ok \{/ParseRetryAfter(resp.Header); ok \&\& false {/"
	"retry-after-409|do.go|Retry-After is honoured on 503 only, not on 409 IN_PROGRESS|s/ParseRetryAfter\(resp\.Header\); ok \{/ParseRetryAfter(resp.Header); ok \&\& resp.Status != http.StatusConflict {/"
	"retry-after-503|do.go|Retry-After is honoured on 409 only, not on 503|s/ParseRetryAfter\(resp\.Header\); ok \{/ParseRetryAfter(resp.Header); ok \&\& resp.Status == http.StatusConflict {/"
	"retry-after-cap|do.go|a Retry-After beyond MaxRetryAfter is waited for|s/if ra > pol\.MaxRetryAfter \{/if false {/"
	"budget|do.go|a wait that outlasts the context's deadline is begun|s/time\.Now\(\)\.Add\(wait\)\.After\(dl\)/time.Now().Add(wait).After(dl.Add(time.Hour))/"
	"cancel|do.go|a context cancelled during a wait does not end the call|s/case <-ctx\.Done\(\):\n\t\t\tt\.Stop\(\)/case <-make(chan struct{}):\n\t\t\tt.Stop()/"
	"attempts|do.go|MaxAttempts is not a bound|s/if safe && n < pol\.MaxAttempts \{/if safe {/"
	"key|do.go|every attempt mints its own key|s/hr\.Header\.Set\(op\.KeyHeader, key\)/hr.Header.Set(op.KeyHeader, key[:len(key)-1]+strconv.Itoa(rand.IntN(10)))/"
	"caller-key|do.go|WithIdempotencyKey is ignored|s/key := cl\.key\n/key := \"\"\n/"
	"bytes|do.go|a retry sends other bytes|s/(\t\tresp, err := c\.attempt\()/\t\tif n > 1 { req.Body = append(req.Body, ' ') }\n\1/"
	"replayed|do.go|Result.Replayed is never set|s/Replayed: resp\.Header\.Get\(\"Idempotent-Replayed\"\) == \"true\"/Replayed: false/"
	"result-attempts|do.go|Result.Attempts is always 1|s/Key: key, Attempts: n,\n/Key: key, Attempts: 1,\n/"
	"result-key|do.go|Result.Key is empty|s/Header: resp\.Header, Key: key, Attempts/Header: resp.Header, Key: \"\", Attempts/"
	"problem|errors.go|problem+json is not decoded|s/(func problemOf\(r \*Response\) \*Problem \{\n)/\1\treturn nil\n/"
	"is-conflict|errors.go|IsConflict answers for a request in flight|s/reasonIs\(err, ReasonConflict\)/reasonIs(err, ReasonInProgress)/"
	"is-inflight|errors.go|IsInFlight is always false|s/func IsInFlight\(err error\) bool \{ return reasonIs\(err, ReasonInProgress\) \}/func IsInFlight(err error) bool { return false }/"
	"is-keyerror|errors.go|IsKeyError misses a missing key|s/return reasonIs\(err, ReasonKeyRequired\) \|\| /return /"
	"is-retryable|errors.go|IsRetryable says yes to every 409|s/return e\.Reason\(\) == ReasonInProgress \|\| e\.Reason\(\) == ReasonLeaseLost/return true/"
	"is-retryable-transport|errors.go|IsRetryable says no to a transport error|s/return !te\.Unsafe/return false/"
	"is-retryable-unsafe|errors.go|IsRetryable says yes to a cut call of an opted-out POST|s/return !te\.Unsafe/return true/"
	"transport-unsafe|do.go|a cut call never says it may not be sent again|s/Unsafe: !safe\}/Unsafe: false}/g"
	"retryafter-field|errors.go|Error.RetryAfter is not set|s/e\.RetryAfter = ra/_ = ra/"
	"uuidv7|client.go|minted keys are UUIDv4 whatever the keyFormat|s/u, err := uuid\.NewV7\(\)/u, err := uuid.NewRandom()/"
)

backup=$(mktemp -d)
for f in do.go errors.go client.go; do cp "$PKG/$f" "$backup/$f"; done
restore() {
	for f in do.go errors.go client.go; do cp "$backup/$f" "$PKG/$f"; done
	rm -rf "$backup"
}
trap restore EXIT

want=" $* "
survived=0 stale=0
log=$(mktemp)
printf '%-24s %-9s %s\n' mutant result "rule broken / tests that failed"
for m in "${MUTANTS[@]}"; do
	IFS='|' read -r name file desc script <<<"$m"
	if [ $# -gt 0 ] && [[ $want != *" $name "* ]]; then continue; fi
	for f in do.go errors.go client.go; do cp "$backup/$f" "$PKG/$f"; done
	perl -0pe "$script" "$backup/$file" >"$PKG/$file"
	if cmp -s "$backup/$file" "$PKG/$file"; then
		printf '%-24s %-9s %s\n' "$name" "STALE" "$desc: the substitution matched nothing"
		stale=1
		continue
	fi
	# A mutant may make a call wait for ever; the timeout counts as caught.
	if go test -count=1 -timeout 60s "./$PKG/" >"$log" 2>&1; then
		printf '%-24s %-9s %s\n' "$name" "SURVIVED" "$desc"
		survived=1
	else
		failed=$(grep -oE -- '--- FAIL: [^ ]+' "$log" | awk '{print $3}' | sort -u | paste -sd' ' - || true)
		if [ -z "$failed" ]; then failed=$(grep -m1 -oE 'panic: test timed out|build failed|\[build failed\]|cannot use .*|undefined: .*' "$log" || echo "?"); fi
		printf '%-24s %-9s %s\n' "$name" "caught" "$desc / $failed"
	fi
done
rm -f "$log"
[ "$stale" = 0 ] || exit 2
[ "$survived" = 0 ] || exit 1
