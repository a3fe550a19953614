package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// State is the state of an idempotency record (the text values of
// idem_records.state), or StateReleased in an Outcome.
type State string

// Record states.
const (
	StateInProgress       State = "IN_PROGRESS"
	StateCompleted        State = "COMPLETED"
	StateFailedRetryable  State = "FAILED_RETRYABLE"
	StateFailedReplayable State = "FAILED_REPLAYABLE"
	StateExpired          State = "EXPIRED"
	StateUnknown          State = "UNKNOWN"
	// StateReleased is not stored: the outcome was not kept and the key was
	// freed (a 400, 401, 403, 429, ... from the handler).
	StateReleased State = "RELEASED"
)

// Result says how a request was served.
type Result string

// Results of Outcome.Result.
const (
	ResultExecuted  Result = "executed"  // the handler ran (its outcome may or may not be kept)
	ResultReplayed  Result = "replayed"  // a stored outcome was replayed
	ResultRecovered Result = "recovered" // a taken-over claim was resolved (hook or re-execution)
	ResultRejected  Result = "rejected"  // key, body or validation error, or a conflict
	ResultFailed    Result = "failed"    // handler error, 5xx or an internal error
)

// Outcome describes how one request was served.
type Outcome struct {
	Result Result
	// State is the record's state afterwards when the request decided it
	// (COMPLETED, FAILED_REPLAYABLE, FAILED_RETRYABLE, UNKNOWN),
	// StateReleased when the outcome was not kept, or "" when no record was
	// involved.
	State    State
	Status   int
	Replayed bool
	Err      error
	Duration time.Duration
	// Tenant and KeyHash (Key.Hash) identify the record; both empty when
	// the request had no valid key.
	Tenant  string
	KeyHash string
	// Attempt is the record's execution count after this request claimed
	// it (1: the key's first execution), Fence the claim's fencing token;
	// both 0 when the request claimed nothing (a replay, a conflict).
	Attempt int
	Fence   int64
	// Expired: the key named an expired record, and this request ran it as
	// a new operation (onExpired: execute).
	Expired bool
	// StoredAt is when a replayed response was stored.
	StoredAt time.Time
	// Bytes is the size of the response body written, unless the answer
	// was a problem.
	Bytes int
}

// Label names the outcome in one word, the same in metrics, logs and
// traces. The set is closed: executed, expired_executed, replayed,
// recovered, released, failed_retryable, unknown, conflict, in_flight,
// lease_lost, expired_rejected, schema_changed, rejected (a key, body or
// validation error) and failed (an internal error).
func (o Outcome) Label() string {
	if o.Err != nil {
		switch {
		case errors.Is(o.Err, ErrFingerprintMismatch):
			return "conflict"
		case errors.Is(o.Err, ErrInFlight):
			return "in_flight"
		case errors.Is(o.Err, ErrLeaseLost):
			return "lease_lost"
		case errors.Is(o.Err, ErrOutcomeUnknown):
			return "unknown"
		case errors.Is(o.Err, ErrExpired):
			return "expired_rejected"
		case errors.Is(o.Err, ErrSchemaChanged):
			return "schema_changed"
		}
	}
	switch o.Result {
	case ResultReplayed:
		return "replayed"
	case ResultRecovered:
		return "recovered"
	case ResultExecuted:
		switch {
		case o.State == StateReleased:
			return "released"
		case o.Expired:
			return "expired_executed"
		}
		return "executed"
	case ResultRejected:
		return "rejected"
	}
	switch o.State {
	case StateFailedRetryable:
		return "failed_retryable"
	case StateUnknown:
		return "unknown"
	}
	return "failed"
}

type outcomeClass int

const (
	outcomeKept       outcomeClass = iota // 2xx: COMPLETED
	outcomeReplayable                     // in ReplayStatuses: FAILED_REPLAYABLE
	outcomeReleased                       // other non-2xx below 500: key released
	outcomeRetryable                      // handler error or 5xx: FAILED_RETRYABLE
)

func outcomeOf(op *Operation, resp *Response, err error) outcomeClass {
	if err != nil {
		return outcomeRetryable
	}
	for _, s := range op.Policy.ReplayStatuses {
		if s == resp.Status {
			return outcomeReplayable
		}
	}
	switch {
	case resp.Status >= 200 && resp.Status <= 299:
		return outcomeKept
	case resp.Status >= 500:
		return outcomeRetryable
	default:
		return outcomeReleased
	}
}

// execution is one run of an operation under a claim: the handler in its
// business transaction, or a lease recovery hook's decision (tx nil).
type execution struct {
	rq    *request
	mode  Mode
	claim store.ClaimRow
	st    recordStore
	tx    pgx.Tx // nil for a recovery decision
	// recovered: the response is a recovery hook's Completed decision, not
	// the handler's; it is answered as a replay.
	recovered bool
}

// finish stores the outcome of x (resp and herr from the handler, or a
// recovery decision's response), answers the client and sets rq.outcome. It
// is the one place an outcome is recorded, for atomic and lease executions
// and recovery decisions alike; what differs by mode is how a claim is
// released or marked retryable (see release and markRetryable).
func (e *Engine) finish(ctx, bk context.Context, x *execution, resp *Response, herr error) error {
	rq := x.rq
	var rp *replayInfo
	if x.recovered {
		rp = &replayInfo{completedAt: time.Now()}
	}
	class := outcomeOf(rq.op, resp, herr)
	switch class {
	case outcomeKept, outcomeReplayable:
		state := StateCompleted
		if class == outcomeReplayable {
			state = StateFailedReplayable
		}
		sctx, done := e.obs.enter(ctx, rq, phaseStore)
		stored, err := e.storeOutcome(sctx, x, state, resp)
		done(err)
		if err == nil && !stored {
			// Fenced out: another request took the claim over. This (zombie)
			// attempt must not commit its business writes.
			x.rollback(bk)
			if x.mode == ModeAtomic {
				err = errors.New("idem: atomic claim vanished inside its transaction")
			} else {
				rq.outcome = Outcome{Result: ResultFailed}
				return withRetryAfter(ErrLeaseLost, time.Second)
			}
		}
		if err != nil {
			x.rollback(bk)
			if x.recovered {
				// The effect happened; leave the claim for the next retry's
				// hook rather than let a plain re-execution repeat it.
				return fmt.Errorf("idem: store recovered outcome: %w", err)
			}
			e.markRetryable(bk, x)
			rq.outcome.State = StateFailedRetryable
			return fmt.Errorf("idem: store outcome: %w", err)
		}
		rq.outcome = Outcome{Result: ResultExecuted, State: state, Status: resp.Status, Replayed: x.recovered}
		if x.claim.TakenOver || x.recovered {
			rq.outcome.Result = ResultRecovered
		}
	case outcomeReleased:
		x.rollback(bk)
		e.release(bk, x)
		rq.outcome = Outcome{Result: ResultExecuted, State: StateReleased, Status: resp.Status, Replayed: x.recovered}
		if x.recovered {
			rq.outcome.Result = ResultRecovered
		}
	default: // outcomeRetryable
		x.rollback(bk)
		e.markRetryable(bk, x)
		rq.outcome = Outcome{Result: ResultFailed, State: StateFailedRetryable, Replayed: x.recovered}
		if x.recovered {
			rq.outcome.Result = ResultRecovered
		}
		if herr != nil {
			return herr
		}
		rq.outcome.Status = resp.Status
	}
	e.writeResponse(rq, resp, rp)
	return nil
}

// storeOutcome stores a kept outcome under x's claim: in x's business
// transaction, committing it, or on its own for a recovery decision. stored
// is false when the claim no longer holds.
func (e *Engine) storeOutcome(ctx context.Context, x *execution, state State, resp *Response) (stored bool, err error) {
	params, err := e.completeParams(x.rq, x.claim.Fence, state, resp)
	if err != nil {
		return false, err
	}
	if x.tx == nil {
		n, err := e.q.Complete(ctx, params)
		return n > 0, err
	}
	return x.st.complete(ctx, x.tx, params)
}

func (x *execution) rollback(ctx context.Context) {
	if x.tx != nil {
		rollback(ctx, x.tx)
	}
}

// markRetryable records that x failed and may run again with the same
// payload. In atomic mode the claim rolled back with the transaction, so
// the record is written anew; in lease mode the fenced claim is updated.
func (e *Engine) markRetryable(ctx context.Context, x *execution) {
	var err error
	k := x.rq.key
	if x.mode == ModeAtomic {
		err = e.q.RecordRetryable(ctx, store.RecordRetryableParams{
			Tenant: k.Tenant, Operation: k.Operation, IdempotencyKey: k.Value,
			Fingerprint: x.rq.fp, SchemaVersion: x.rq.op.Policy.SchemaVersion, TtlMs: x.rq.op.Policy.TTL.Milliseconds(),
		})
	} else {
		_, err = e.q.FailRetryable(ctx, store.FailRetryableParams{
			Tenant: k.Tenant, Operation: k.Operation, IdempotencyKey: k.Value, Fence: x.claim.Fence,
		})
	}
	if err != nil {
		e.reportError(ctx, x.rq, fmt.Errorf("idem: record retryable outcome: %w", err))
	}
}

// release frees x's key after an outcome that is not kept, so a corrected
// request runs. In lease mode the fenced claim goes; in atomic mode the
// claim rolled back with the transaction, which restored the
// FAILED_RETRYABLE record it had taken over, if any (attempts > 1).
func (e *Engine) release(ctx context.Context, x *execution) {
	k := x.rq.key
	p := store.ReleaseParams{Tenant: k.Tenant, Operation: k.Operation, IdempotencyKey: k.Value, Fence: x.claim.Fence}
	if x.mode == ModeAtomic {
		if x.claim.Attempts <= 1 {
			return
		}
		p.Fence, p.Fingerprint = 0, x.rq.fp
	}
	if _, err := e.q.Release(ctx, p); err != nil {
		e.reportError(ctx, x.rq, fmt.Errorf("idem: release key: %w", err))
	}
}

// completeParams is the stored form of a response: allowlisted headers as
// JSON, the body as it was sent.
func (e *Engine) completeParams(rq *request, fence int64, state State, resp *Response) (store.CompleteParams, error) {
	hdr := map[string][]string{}
	for name, vals := range resp.Header {
		if c := http.CanonicalHeaderKey(name); e.stored[c] && len(vals) > 0 {
			hdr[c] = vals
		}
	}
	hj, err := json.Marshal(hdr)
	if err != nil {
		return store.CompleteParams{}, err
	}
	body := resp.Body
	if body == nil {
		body = []byte{}
	}
	return store.CompleteParams{
		State:           string(state),
		ResponseStatus:  pgtype.Int4{Int32: int32(resp.Status), Valid: true},
		ResponseHeaders: hj,
		ResponseBody:    body,
		Tenant:          rq.key.Tenant,
		Operation:       rq.key.Operation,
		IdempotencyKey:  rq.key.Value,
		Fence:           fence,
	}, nil
}
