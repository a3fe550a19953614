package idem

import (
	"context"
	"time"
)

// mode is how the requests of an operation claim their key, run the
// handler and record the outcome: atomicMode (atomic.go) or leaseMode
// (lease.go), chosen by Policy.Mode in one place (Engine.modes). Shared
// code asks the mode; it never tests which one it is.
type mode interface {
	// serve serves a request with a key after the cache, if any, had
	// nothing to say: the replay read, the claim, the handler and the
	// outcome.
	serve(rq *request, h Handler, st session) error
	// claimsLive reports whether a live record of the same request (an
	// IN_PROGRESS claim, an UNKNOWN outcome) may be claimed now rather than
	// answered as in flight.
	claimsLive(rec *record) bool
	// waitsInProcess reports whether a duplicate of a request in flight in
	// this process waits for its outcome (handoff.go), for duplicateWait.
	waitsInProcess() bool
	// asksCache reports whether rq asks Config.Cache before PostgreSQL.
	asksCache(rq *request) bool
}

// duplicateWait is how long a duplicate of a request in flight waits for
// its outcome under pol before it is answered as in flight: Policy.Wait
// when inFlight is wait, else Config.LockTimeout. The one rule for every
// such wait: for a flight or a leader of the key in this process (atomic
// mode: flights.go, handoff.go) and on another process's in-flight
// marker in the cache (cache.go).
func (e *Engine) duplicateWait(pol *Policy) time.Duration {
	if pol.InFlight == InFlightWait {
		return pol.Wait
	}
	return e.cfg.LockTimeout
}

// recorder is how one execution of a mode records its outcome: the writes
// that finish (outcome.go) makes, written once for both modes against this.
// atomicRun and leaseRun implement it, each with its own statements.
type recorder interface {
	// keep stores a kept outcome, committing the business transaction
	// with it when there is one. stored is false when the key was lost:
	// to a duplicate that stored it first (atomic), or to a takeover of
	// the claim (lease); nothing was stored then.
	keep(ctx context.Context, x *execution, state State, body *storedResponse) (stored bool, err error)
	// lost answers an execution whose keep found the key lost.
	lost(bk context.Context, x *execution) error
	// keepFailed deals with an outcome that could not be stored (the
	// transaction is rolled back) and returns the state the record is
	// left in.
	keepFailed(bk context.Context, x *execution) State
	// release frees the key after an outcome that is not kept.
	release(bk context.Context, x *execution)
	// retryable records that the execution failed and may run again with
	// the same payload; false when another request's record stands.
	retryable(bk context.Context, x *execution) bool
	// unknown deals with an execution whose outcome may or may not have
	// committed (its transaction has ended) and returns the state the
	// record is left in (see outcomeUnknown).
	unknown(bk context.Context, x *execution) State
	// actsOutside reports whether the handler may act outside the
	// database, so that losing its transaction's connection leaves the
	// outcome unknown rather than failed.
	actsOutside() bool
	// adopt answers rq, whose execution kept no outcome, with an outcome a
	// concurrent duplicate committed, if there is one (true: answered).
	adopt(bk context.Context, rq *request) bool
}

// modeOf returns the mode of op's policy (validated: it is one of them).
func (e *Engine) modeOf(op *Operation) mode { return e.modes[op.Policy.Mode] }
