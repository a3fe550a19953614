package idem

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// phase is a step of a keyed request that an observer may time, trace or
// log: each runs at most a few times per request.
type phase int

const (
	phaseRead    phase = iota // the replay fast path's read of the record
	phaseClaim                // claiming the key (atomic: in the business transaction)
	phaseHandler              // the operation's handler
	phaseRecover              // a lease recovery hook
	phaseStore                // storing the outcome (with COMMIT when there is a transaction)
	phaseReplay               // writing a stored outcome
)

var phaseNames = [...]string{"read", "claim", "handler", "recover", "store", "replay"}

func (p phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}

// observer is told when a keyed request enters and leaves each phase: the
// seam for trace spans, structured logs and audit records inside the
// engine. enter returns the context the phase runs with (a span's) and a
// func the engine calls with the phase's error when it ends. Hooks.OnOutcome
// and Hooks.OnError stay the public, per-request view.
type observer interface {
	enter(ctx context.Context, rq *request, p phase) (context.Context, func(error))
}

type nopObserver struct{}

func (nopObserver) enter(ctx context.Context, _ *request, _ phase) (context.Context, func(error)) {
	return ctx, func(error) {}
}

// runHandler runs the operation's handler under the observer.
func (e *Engine) runHandler(ctx context.Context, rq *request, h Handler, tx pgx.Tx) (*Response, error) {
	ctx, done := e.obs.enter(ctx, rq, phaseHandler)
	resp, err := callHandler(ctx, h, tx)
	done(err)
	return resp, err
}
