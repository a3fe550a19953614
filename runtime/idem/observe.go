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
	phaseClaim                // claiming the key (atomic: its turn in this process; the write comes with store)
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

// Phase names a step of a keyed request, for an Observer: "read" (the
// replay fast path's read of the record), "claim" (lease mode: the claim's
// own transaction; atomic mode: waiting for the key's turn in this process,
// since the record is written once, with the outcome), "handler", "recover" (a lease recovery hook),
// "store" (storing the outcome, with COMMIT when there is a transaction) and
// "replay" (writing a stored outcome).
type Phase string

// Observer sees requests from inside the engine: the seam for trace spans
// and latency histograms (runtime/idemotel and runtime/idemprom implement
// it). Its methods run on the request's goroutine and must not block.
type Observer interface {
	// Request is called as Serve begins. The context it returns is the
	// request's from then on, the handler's included; done is called with
	// the outcome once the response is written.
	Request(ctx context.Context, op *Operation) (_ context.Context, done func(Outcome))
	// Phase is called as a phase of a keyed request begins; done is called
	// with the phase's error as it ends. A phase may run more than once
	// (a claim retried after a conflict resolved).
	Phase(ctx context.Context, op *Operation, p Phase) (_ context.Context, done func(error))
}

// observers runs Config.Observers as the engine's observer.
type observers []Observer

func (os observers) enter(ctx context.Context, rq *request, p phase) (context.Context, func(error)) {
	if len(os) == 1 {
		return os[0].Phase(ctx, rq.op, Phase(p.String()))
	}
	dones := make([]func(error), len(os))
	for i, o := range os {
		ctx, dones[i] = o.Phase(ctx, rq.op, Phase(p.String()))
	}
	return ctx, func(err error) {
		for i := len(dones) - 1; i >= 0; i-- {
			dones[i](err)
		}
	}
}

// request starts the request-level observation of rq.
func (os observers) request(ctx context.Context, op *Operation) (context.Context, func(Outcome)) {
	if len(os) == 1 {
		return os[0].Request(ctx, op)
	}
	dones := make([]func(Outcome), len(os))
	for i, o := range os {
		ctx, dones[i] = o.Request(ctx, op)
	}
	return ctx, func(out Outcome) {
		for i := len(dones) - 1; i >= 0; i-- {
			dones[i](out)
		}
	}
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
