package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/jackc/pgx/v5"
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
	// Cache is what Config.Cache did for the request; "" without a cache
	// or a key, or when the request did not ask it (an atomic operation
	// whose keys are new: see Config.Cache).
	Cache CacheResult
	// Raced: the request's record write lost to a concurrent duplicate on
	// PostgreSQL's primary key (its handler ran and rolled back; it
	// answered with the duplicate's outcome): a duplicate that neither the
	// cache nor this process's own bookkeeping held back.
	Raced bool
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
	case ResultNotIdempotent:
		return "not_idempotent"
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

// execution is one run of an operation: the handler in its business
// transaction, or a lease recovery hook's decision (tx nil).
type execution struct {
	rq  *request
	rec recorder // how its mode records the outcome
	tx  pgx.Tx   // nil for a recovery decision
	// takenOver: it runs under a lease claim taken over from a stale one.
	takenOver bool
	// recovered: the response is a recovery hook's Completed decision, not
	// the handler's; it is answered as a replay.
	recovered bool
}

// kept notes an outcome rq's execution stored, for the cache and the
// duplicates waiting in this process: completed is its completion time,
// left the record's remaining life as measured at measured.
func (rq *request) kept(state State, body *storedResponse, completed time.Time, left time.Duration, measured time.Time) {
	rq.committed = &cached{state: state, fingerprint: rq.fp, completedAt: completed, status: body.status,
		schema: rq.op.Policy.SchemaVersion, headers: body.headers, body: body.body, left: left, leftAt: measured}
}

func (x *execution) rollback(ctx context.Context) {
	if x.tx != nil {
		rollback(ctx, x.tx)
	}
}

// finish stores the outcome of x (resp and herr from the handler, or a
// recovery decision's response), answers the client and sets rq.outcome. It
// is the one place an outcome is recorded, for atomic and lease executions
// and recovery decisions alike; what differs by mode is how the record is
// written, released or marked retryable (x.rec, see recorder).
//
// errLost means an atomic execution lost its key to a concurrent duplicate;
// its transaction is left for the caller to end (rollbackThen).
func (e *Engine) finish(ctx, bk context.Context, x *execution, resp *Response, herr error) error {
	rq := x.rq
	var rp *replayInfo
	if x.recovered {
		rp = &replayInfo{completedAt: time.Now()}
	}
	class := outcomeOf(rq.op, resp, herr)
	var body *storedResponse
	if class == outcomeKept || class == outcomeReplayable {
		var err error
		if body, err = e.encodeResponse(bk, rq.op, rq.key, resp); err != nil {
			// Not storable: as if the handler had failed (see Config.MaxStoredResponseBytes).
			class, herr = outcomeRetryable, err
		}
	}
	switch class {
	case outcomeKept, outcomeReplayable:
		state := StateCompleted
		if class == outcomeReplayable {
			state = StateFailedReplayable
		}
		sctx, done := e.obs.enter(ctx, rq, phaseStore)
		stored, err := x.rec.keep(sctx, x, state, body)
		done(err)
		if err == nil && !stored {
			return x.rec.lost(bk, x)
		}
		if err != nil {
			x.rollback(bk)
			if commitUnknown(err) {
				return e.outcomeUnknown(bk, x, fmt.Errorf("idem: store outcome: %w", err))
			}
			rq.outcome.State = x.rec.keepFailed(bk, x)
			if txAborted(err) && x.tx != nil {
				return &txFailedError{op: rq.op.ID, status: resp.Status, cause: err}
			}
			return fmt.Errorf("idem: store outcome: %w", err)
		}
		rq.outcome = Outcome{Result: ResultExecuted, State: state, Status: resp.Status, Replayed: x.recovered}
		if x.takenOver || x.recovered {
			rq.outcome.Result = ResultRecovered
		}
	case outcomeReleased:
		x.rollback(bk)
		if x.rec.adopt(bk, rq) {
			return nil
		}
		x.rec.release(bk, x)
		rq.outcome = Outcome{Result: ResultExecuted, State: StateReleased, Status: resp.Status, Replayed: x.recovered}
		if x.recovered {
			rq.outcome.Result = ResultRecovered
		}
	default: // outcomeRetryable
		if x.rec.actsOutside() && connLost(x.tx) {
			// The handler may have acted outside the database before its
			// transaction was lost: not a plain failure to run again.
			x.rollback(bk)
			cause := herr
			if cause == nil {
				cause = fmt.Errorf("the business transaction's connection was lost (the handler answered %d)", resp.Status)
			}
			return e.outcomeUnknown(bk, x, cause)
		}
		x.rollback(bk)
		if !x.rec.retryable(bk, x) && x.rec.adopt(bk, rq) {
			return nil
		}
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

// storedResponse is a response in the form it is stored in.
type storedResponse struct {
	status  int32
	headers []byte
	body    []byte
}

// encodeResponse is the one place a response becomes its stored form: the
// allowlisted headers as JSON, the body as it was sent, bounded by
// Config.MaxStoredResponseBytes, and both sealed under k when there is a
// Config.Sealer.
func (e *Engine) encodeResponse(ctx context.Context, op *Operation, k Key, resp *Response) (*storedResponse, error) {
	if int64(len(resp.Body)) > e.cfg.MaxStoredResponseBytes {
		return nil, fmt.Errorf("%w: %d bytes, the bound is %d", ErrResponseTooLarge, len(resp.Body), e.cfg.MaxStoredResponseBytes)
	}
	declared := op.declaredHeaders(resp.Status)
	var kept [8]storedHeader
	hdr := kept[:0]
	for name, vals := range resp.Header {
		if len(vals) == 0 {
			continue
		}
		c := http.CanonicalHeaderKey(name)
		if e.stored[c] || (declared != nil && !neverStored[c] && containsFold(declared, c)) {
			hdr = append(hdr, storedHeader{c, vals})
		}
	}
	hj := appendHeadersJSON(make([]byte, 0, 64), hdr)
	var err error
	body := resp.Body
	if body == nil {
		body = []byte{}
	}
	if hj, body, err = encodeResponse(ctx, e.cfg.Sealer, k, resp.Status, hj, body); err != nil {
		return nil, err
	}
	return &storedResponse{status: int32(resp.Status), headers: hj, body: body}, nil
}

// storedHeader is a response header as a record keeps it.
type storedHeader struct {
	name string // canonical
	vals []string
}

// appendHeadersJSON appends hdr as the JSON object of a record's
// response_headers column, {"Name":["value",...],...}, names in order:
// what json.Marshal makes of the map[string][]string that a replay
// reads back, without its reflection. Two names alike once canonical (a
// handler that set both "etag" and "Etag") are one, either's values kept,
// as in that map. Invalid UTF-8 becomes U+FFFD, as json.Marshal has it.
func appendHeadersJSON(b []byte, hdr []storedHeader) []byte {
	slices.SortStableFunc(hdr, func(a, b storedHeader) int { return strings.Compare(a.name, b.name) })
	b = append(b, '{')
	for i, h := range hdr {
		if i > 0 && h.name == hdr[i-1].name {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b, _ = jsontext.AppendQuote(b, h.name)
		b = append(b, ':', '[')
		for j, v := range h.vals {
			if j > 0 {
				b = append(b, ',')
			}
			b, _ = jsontext.AppendQuote(b, v)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// declaredHeaders returns the response headers op declares for status: those
// of the exact status, else of its range ("2XX"), else of "default"; nil when
// it declares none.
func (op *Operation) declaredHeaders(status int) []string {
	if len(op.ResponseHeaders) == 0 {
		return nil
	}
	var code [3]byte
	if status >= 100 && status <= 999 {
		code = [3]byte{byte('0' + status/100), byte('0' + status/10%10), byte('0' + status%10)}
		if names, ok := op.ResponseHeaders[string(code[:])]; ok {
			return names
		}
		for _, r := range [...]string{string(code[0]) + "XX", string(code[0]) + "xx"} {
			if names, ok := op.ResponseHeaders[r]; ok {
				return names
			}
		}
	}
	return op.ResponseHeaders["default"]
}

// containsFold reports whether names holds name, ignoring case.
func containsFold(names []string, name string) bool {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
