package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Hints: the handler mistakes static analysis (idemgen vet) cannot see,
// told at run time in words that say what happened and what to do, rather
// than in the error of whatever statement tripped over them.

// ErrHandlerTxFailed is wrapped by the error of a request whose handler
// answered with a response to store (a 2xx, or a status in
// replayStatuses) after a statement of its transaction had failed: the
// transaction is aborted (SQLSTATE 25P02), so the response cannot be
// stored with it. The client gets a 500; the error (logged, or passed to
// Hooks.OnError) names the fix: run a statement whose error the handler
// handles in a savepoint, tx.Begin(ctx).
var ErrHandlerTxFailed = errors.New("the handler answered after a statement of its transaction had failed")

// ErrClientGone is wrapped by the error of a request whose handler failed
// after its client closed the connection, which cancels the request's
// context: the handler's statements then fail with pgx's "context
// canceled" (its "timeout: context already done"), which is not a
// timeout. The answer, status 499 (nobody reads it), is logged as the
// request's failure, with the handler's error. Only atomic-mode and
// keyless handlers see it; a lease-mode handler's context outlives its
// client. A client that goes away before the handler runs, while the
// engine reads the key's record or claims it, gets the same answer.
var ErrClientGone = errors.New("the client closed the connection while the handler ran")

// DefaultSlowAtomicHandler is Config.SlowAtomicHandler when it is zero.
const DefaultSlowAtomicHandler = 2 * time.Second

// txFailedError is ErrHandlerTxFailed with the operation, the status the
// handler answered and the error of the statement that found the
// transaction aborted.
type txFailedError struct {
	op     string
	status int
	cause  error
}

func (e *txFailedError) Error() string {
	return fmt.Sprintf("idem: operation %q: the handler answered %d after a statement of its transaction had failed, "+
		"so the response cannot be stored with it (store outcome: %v); a statement whose error the handler handles "+
		"(a unique violation answered with a 409, say) must run in a savepoint: sp, err := tx.Begin(ctx), the statement "+
		"on sp, then sp.Rollback(ctx) when it failed and sp.Commit(ctx) when not", e.op, e.status, e.cause)
}

func (e *txFailedError) Unwrap() []error { return []error{ErrHandlerTxFailed, e.cause} }

// txAborted reports whether err is PostgreSQL's in_failed_sql_transaction:
// a statement sent in a transaction that an earlier statement aborted.
func txAborted(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "25P02"
}

// clientGoneError is ErrClientGone wrapping the handler's error; atomic
// says the key stays FAILED_RETRYABLE and the retry runs the handler again;
// early, that the handler had not run: the engine's own statements (the
// record's read, a lease claim) were cut off.
type clientGoneError struct {
	cause  error
	atomic bool
	early  bool
}

func (e *clientGoneError) Error() string {
	if e.early {
		return "idem: the client closed the connection before its request was decided, which cancelled its context (" + e.cause.Error() + ")"
	}
	s := "idem: the client closed the connection while the handler ran, which cancelled its context (handler: " + e.cause.Error() + ")"
	if e.atomic {
		s += "; its transaction rolled back and a retry of the key runs the handler again, with whatever it did outside " +
			"the database: a handler that calls the outside world belongs in mode: lease (its context outlives the client) " +
			"with a recovery hook"
	}
	return s
}

func (e *clientGoneError) Unwrap() []error { return []error{ErrClientGone, e.cause} }

// hangUp wraps herr, the error of a handler that ran with ctx, as a
// clientGoneError when the client's going away cancelled ctx: net/http
// cancels a request's context (with context.Canceled as its cause) when
// the client closes the connection. A deadline, a lost lease or a held
// claim's end have causes of their own.
func hangUp(ctx context.Context, herr error, atomic bool) error {
	if herr == nil || context.Cause(ctx) != context.Canceled {
		return herr
	}
	return &clientGoneError{cause: herr, atomic: atomic}
}

// hungUpEarly wraps err, a request's failure, as a clientGoneError when
// the client's going away cancelled the request's context (ctx) and cut off
// one of the engine's own statements (the record's read, a lease claim):
// it failed with "context canceled", which is neither the engine's failure
// (500) nor a timeout. A handler's failure has been judged by hangUp.
func hungUpEarly(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, ErrClientGone) || !errors.Is(err, context.Canceled) || context.Cause(ctx) != context.Canceled {
		return err
	}
	return &clientGoneError{cause: err, early: true}
}

// hintSlow logs, once per operation, that an atomic-mode handler ran
// longer than Config.SlowAtomicHandler: it held its transaction (and the
// rows it locked) all that time, which suggests it waits on something
// outside the database, which the retry of a failed attempt runs again.
func (e *Engine) hintSlow(ctx context.Context, rq *request, took time.Duration) {
	limit := e.cfg.SlowAtomicHandler
	if limit <= 0 || took <= limit || rq.state == nil || !rq.state.slowHinted.CompareAndSwap(false, true) {
		return
	}
	e.logger().LogAttrs(ctx, slog.LevelWarn, "idem: slow atomic handler",
		slog.String("operation", rq.op.ID), slog.Duration("duration", took), slog.Duration("threshold", limit),
		slog.String("hint", "an atomic handler holds its transaction and row locks while it runs, and a retry of an attempt "+
			"that failed (its client hung up, its COMMIT did not happen) runs it again: if it calls another service, use "+
			"mode: lease with a recovery hook (Config.Recover), or pass the idempotency key on (idem.KeyFromContext) as "+
			"that call's own idempotency key; logged once per operation (Config.SlowAtomicHandler)"))
}
