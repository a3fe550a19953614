package idem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idem/internal/pgpipe"
)

// Outcomes nobody knows yet. When the connection breaks while COMMIT is on
// its way (the primary is killed, fails over, shuts down), the transaction
// may have committed or not, and only the database — the new primary, after
// a failover — can tell. Such an outcome is neither a success nor a plain
// failure: the client gets 503 with Retry-After, and nothing is written that
// would let a retry run blindly. The retry reads the record and replays what
// committed, or runs again; in lease mode it takes the claim over at once and
// the operation's recovery hook asks the outside world first.

// commitUnknown reports whether err, returned by a batch that ends with
// COMMIT or by COMMIT itself, leaves it unknown whether the transaction
// committed. Only the server's own answer tells that it did not: an error
// that is not a *pgconn.PgError (the connection broke, timed out or was
// cancelled) is unknown, and so are the server's errors of class 08 and 57,
// which end the session while the statement ran (a shutdown, or a cancel
// while COMMIT waited for a synchronous standby, after which "the
// transaction has already committed locally"). pgconn.SafeToRetry does not
// tell either: pgx reports a connection that broke while it read COMMIT's
// answer as "conn closed", which it marks safe to retry.
func commitUnknown(err error) bool {
	if err == nil || errors.Is(err, pgx.ErrTxCommitRollback) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57")
	}
	return true
}

// connLost reports whether tx's connection is closed: the business
// transaction is gone, rolled back by the server. pgx closes a connection
// on a network error and on a FATAL one (a shutdown), so a handler whose
// statement failed that way leaves it closed, whether it returned the error
// or answered a 5xx. It must be asked before tx ends (ending a pgpipe.Tx hands
// its connection back).
func connLost(tx pgx.Tx) bool {
	switch t := tx.(type) {
	case nil:
		return false
	case *pgpipe.Tx:
		return t.Raw().IsClosed() // Conn() would send a pending BEGIN
	}
	c := tx.Conn()
	return c != nil && c.IsClosed()
}

// unknownOutcomeError is the error of a request whose outcome may or may
// not have committed. It is an ErrOutcomeUnknown, wrapping the cause.
type unknownOutcomeError struct {
	cause error
}

func (e *unknownOutcomeError) Error() string {
	return "idem: outcome unknown: " + e.cause.Error()
}

func (e *unknownOutcomeError) Unwrap() []error { return []error{ErrOutcomeUnknown, e.cause} }

// outcomeUnknown answers x, whose outcome may or may not have committed
// (commitUnknown), or whose lease-mode business transaction the database
// took away after the handler may have acted outside it (connLost).
// x's transaction has ended.
//
// Atomic mode writes nothing: its record commits with the outcome or not at
// all, so the retry replays or runs per what the database holds. Lease mode
// marks its claim UNKNOWN, fenced: a COMMIT that did land made it final,
// and MarkUnknown then changes nothing. The retry takes an UNKNOWN claim
// over at once, and the recovery hook decides before the handler runs again.
// When even that cannot be written, the claim lapses with its lease and the
// retry after it does the same.
func (e *Engine) outcomeUnknown(ctx context.Context, x *execution, cause error) error {
	x.rq.outcome = Outcome{Result: ResultFailed, State: x.rec.unknown(ctx, x), Replayed: x.recovered}
	return withRetryAfter(&unknownOutcomeError{cause: cause}, time.Second)
}

// unknown: atomic mode writes nothing; its record commits with the outcome
// or not at all, and the retry replays or runs per what the database holds.
func (a *atomicRun) unknown(context.Context, *execution) State { return "" }

// actsOutside: an atomic handler's effects are its transaction's.
func (a *atomicRun) actsOutside() bool { return false }

// unknown marks the claim UNKNOWN, fenced: a COMMIT that did land made it
// final, and MarkUnknown then changes nothing. When even that cannot be
// written, the claim lapses with its lease and the retry after it does the
// same.
func (l *leaseRun) unknown(bk context.Context, x *execution) State {
	held, err := l.e.q.markUnknown(bk, x.rq.ref.id, l.claim.fence)
	switch {
	case err != nil:
		l.e.reportError(bk, x.rq, fmt.Errorf("idem: mark outcome unknown: %w", err))
	case held:
		return StateUnknown
	}
	return StateInProgress
}

// actsOutside: a lease handler may act outside the database (a card
// charged) before its transaction is lost.
func (l *leaseRun) actsOutside() bool { return true }
