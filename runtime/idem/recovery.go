package idem

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// RecoverFunc decides, for a lease-mode operation, what became of an earlier
// attempt whose claim this request took over: its holder died, its handler
// failed after it ran (an error, a panic, a 5xx, a lost connection), or an
// earlier hook answered Unknown. It typically asks the external system (by the key
// from KeyFromContext) whether the side effect happened. ctx carries the key
// and the claim, so the hook may call SaveRecoveryPoint.
//
// A hook that returns an error, or panics, counts as Unknown.
type RecoverFunc func(ctx context.Context, rec Recovery) (Decision, error)

// Recovery is what a RecoverFunc knows about the earlier attempt.
type Recovery struct {
	// Point and Data are the last recovery point the earlier attempt saved
	// with SaveRecoveryPoint; HasPoint is false when it saved none.
	Point    string
	Data     []byte
	HasPoint bool
	// Attempts counts the executions started for this key, this one included.
	Attempts int
}

type decisionKind int

const (
	decisionUnknown decisionKind = iota
	decisionCompleted
	decisionNotExecuted
)

// Decision is a RecoverFunc's verdict; build it with Completed, NotExecuted
// or Unknown.
type Decision struct {
	kind decisionKind
	resp *Response
}

// Completed says the earlier attempt's effect happened and resp is its
// outcome: it is stored (fenced) and replayed, and the handler does not run.
func Completed(resp *Response) Decision { return Decision{kind: decisionCompleted, resp: resp} }

// NotExecuted says the earlier attempt had no effect: the handler runs, and
// can resume from RecoveryPointFrom.
func NotExecuted() Decision { return Decision{kind: decisionNotExecuted} }

// Unknown says the outcome cannot be told yet: the record becomes UNKNOWN,
// the client gets 503 IDEMPOTENT_REQUEST_OUTCOME_UNKNOWN with Retry-After,
// and the next retry runs the hook again.
func Unknown() Decision { return Decision{kind: decisionUnknown} }

type runCtx struct{}

// runState is the claim a handler (or recovery hook) runs under.
type runState struct {
	e     *Engine
	key   Key
	id    pgtype.UUID // the record's (lease mode)
	fence int64       // the lease claim's token; 0 in atomic mode, which has none
	lease time.Duration
	// holdUntil ends the claim's renewals and is the handler's deadline
	// (Config.MaxHold); zero: none (atomic mode).
	holdUntil time.Time

	mu    sync.Mutex
	point *string
	data  []byte

	// Kept by the engine's renewer (renew.go), under its lock.
	renewed time.Time // the lease runs at least lease from here
	lose    context.CancelCauseFunc
	lost    bool
}

func (rs *runState) setRecovery(point string, has bool, data []byte) {
	if has {
		rs.point, rs.data = &point, data
	}
}

func (rs *runState) recoveryPoint() (string, []byte, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.point == nil {
		return "", nil, false
	}
	return *rs.point, rs.data, true
}

// recoverClaim runs the operation's recovery hook for x, a taken-over claim.
// done means the request has been answered (or err says how); otherwise the
// handler runs.
func (m leaseMode) recoverClaim(hctx, bk context.Context, x *execution, claim leaseClaim, rs *runState, hook RecoverFunc) (done bool, err error) {
	e, rq := m.e, x.rq
	info := Recovery{Attempts: int(claim.attempts)}
	info.Point, info.Data, info.HasPoint = rs.recoveryPoint()
	hctx, end := e.obs.enter(hctx, rq, phaseRecover)
	dec, herr := callRecover(hctx, hook, info)
	end(herr)
	if herr != nil {
		e.reportError(rq.r.Context(), rq, fmt.Errorf("idem: recovery hook: %w", herr))
		dec = Unknown()
	}
	switch dec.kind {
	case decisionNotExecuted:
		return false, nil
	case decisionCompleted:
		resp := dec.resp
		if resp == nil || resp.Status < 100 || resp.Status > 999 {
			return true, errors.New("idem: recovery hook returned Completed without a valid response")
		}
		rx := *x
		rx.tx, rx.recovered = nil, true
		return true, e.finish(bk, bk, &rx, resp, nil)
	default: // Unknown
		held, err := e.q.markUnknown(bk, rq.ref.id, claim.fence)
		if err != nil {
			return true, fmt.Errorf("idem: mark outcome unknown: %w", err)
		}
		if !held {
			return true, withRetryAfter(ErrLeaseLost, time.Second)
		}
		rq.outcome = Outcome{Result: ResultFailed, State: StateUnknown}
		return true, withRetryAfter(ErrOutcomeUnknown, unknownRetryAfter)
	}
}

// unknownRetryAfter is the Retry-After of an UNKNOWN outcome: the next retry
// asks the recovery hook again.
const unknownRetryAfter = 5 * time.Second

func callRecover(ctx context.Context, f RecoverFunc, info Recovery) (d Decision, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return f(ctx, info)
}

// SaveRecoveryPoint records how far a multi-step lease-mode handler got, and
// renews its lease. It commits at once, outside the handler's transaction,
// so a later attempt that takes the claim over (after a crash) reads it from
// RecoveryPointFrom or its recovery hook's Recovery. It returns ErrLeaseLost
// when another attempt took the claim over, and ErrNoLease outside a
// lease-mode handler.
func SaveRecoveryPoint(ctx context.Context, point string, data []byte) error {
	rs, _ := ctx.Value(runCtx{}).(*runState)
	if rs == nil || rs.fence == 0 {
		return ErrNoLease
	}
	// The save must not be abandoned half-way because the client went away,
	// but it needs a second connection: bound it by the lease, past which
	// the claim is lost anyway.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rs.lease)
	defer cancel()
	stored, err := encodeRecoveryData(sctx, rs.e.cfg.Sealer, rs.key, data)
	if err != nil {
		return err
	}
	start := time.Now()
	held, err := rs.e.q.saveRecoveryPoint(sctx, rs.id, rs.fence, point, stored, rs.leaseMs(start))
	if err != nil {
		return fmt.Errorf("idem: save recovery point: %w", err)
	}
	if !held {
		return ErrLeaseLost
	}
	rs.mu.Lock()
	rs.point, rs.data = &point, append([]byte(nil), data...)
	rs.mu.Unlock()
	rs.e.renewer.renewedAt(rs, start) // the save renewed the lease
	return nil
}

// leaseMs is the lease, in milliseconds, that a statement sent at now sets
// for rs: the lease, cut short so as not to outlast the maximum hold (at
// least 1, which PostgreSQL's now() has passed by the time it reads it).
func (rs *runState) leaseMs(now time.Time) int64 {
	d := rs.lease
	if !rs.holdUntil.IsZero() {
		d = min(d, rs.holdUntil.Sub(now))
	}
	return max(d.Milliseconds(), 1)
}

// RecoveryPointFrom returns the recovery point saved for the request being
// served: by this attempt, or by an earlier one whose claim it took over.
func RecoveryPointFrom(ctx context.Context) (point string, data []byte, ok bool) {
	rs, _ := ctx.Value(runCtx{}).(*runState)
	if rs == nil {
		return "", nil, false
	}
	return rs.recoveryPoint()
}
