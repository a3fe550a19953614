package idem

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// Record states (the text values of idem_records.state).
const (
	StateInProgress       = "IN_PROGRESS"
	StateCompleted        = "COMPLETED"
	StateFailedRetryable  = "FAILED_RETRYABLE"
	StateFailedReplayable = "FAILED_REPLAYABLE"
	StateExpired          = "EXPIRED"
	StateUnknown          = "UNKNOWN"
)

// DefaultMaxBodyBytes bounds request bodies when Config.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 1 << 20

// DefaultLockTimeout bounds how long an atomic-mode duplicate waits on the
// first request's uncommitted record when the policy's inFlight is reject.
const DefaultLockTimeout = 50 * time.Millisecond

// DefaultStoredHeaders are the response headers stored and replayed. Config
// may add names; credentials and cookies are never stored (see neverStored).
var DefaultStoredHeaders = []string{
	"Content-Type", "Content-Language", "Content-Location", "Location",
	"ETag", "Cache-Control", "Expires", "Vary",
}

// neverStored are response headers that are not stored even when listed.
var neverStored = map[string]bool{
	"Set-Cookie": true, "Cookie": true, "Authorization": true, "Proxy-Authorization": true,
	"Www-Authenticate": true, "Proxy-Authenticate": true,
	// Recomputed or set by the replay itself.
	"Content-Length": true, "Last-Modified": true, "Date": true, "Idempotent-Replayed": true,
	"Content-Digest": true, "Transfer-Encoding": true, "Connection": true,
}

// Config configures an Engine. The zero value is usable.
type Config struct {
	// Scope resolves the tenant of a request; nil means one tenant, "". An
	// error is a 401 problem, unless it is (or wraps) a *Problem.
	Scope ScopeFunc
	// MaxBodyBytes bounds the request body; larger bodies get 413 and no
	// record. Zero means 1 MiB.
	MaxBodyBytes int64
	// LockTimeout bounds how long an atomic-mode duplicate waits for the
	// first request to commit before it gets 409 in flight, when the
	// operation's inFlight is reject (with wait, Policy.Wait bounds it). Zero
	// means DefaultLockTimeout.
	LockTimeout time.Duration
	// StoredHeaders are response headers stored and replayed in addition to
	// DefaultStoredHeaders. Cookies and credentials are never stored.
	StoredHeaders []string
	// Operations are validated by New (see Register).
	Operations []*Operation
	// Recover holds lease-mode recovery hooks by operation ID. When a request
	// takes over a stale claim (its holder died, or an earlier hook said
	// Unknown), the hook decides before the handler runs again. Without a
	// hook the handler simply runs again.
	Recover map[string]RecoverFunc
	// Hooks observe the engine.
	Hooks Hooks
}

// Hooks are optional observer callbacks. They run synchronously on the
// request's goroutine and must not block.
type Hooks struct {
	// OnOutcome is called once per Serve, after the response is written.
	OnOutcome func(ctx context.Context, op *Operation, o Outcome)
	// OnError receives errors the client does not see in full: 5xx causes,
	// failed bookkeeping statements, recovered panics. Nil logs with log/slog.
	OnError func(ctx context.Context, op *Operation, err error)
}

// Outcome describes how one request was served.
type Outcome struct {
	// Result is one of "executed", "replayed", "recovered", "rejected"
	// (key, body or validation error, or a conflict) and "failed" (handler
	// error, 5xx or an internal error).
	Result string
	// State is the record's state afterwards when the request decided it
	// (COMPLETED, FAILED_REPLAYABLE, FAILED_RETRYABLE, UNKNOWN), "RELEASED"
	// when the outcome was not kept, or "" when no record was involved.
	State    string
	Status   int
	Replayed bool
	Err      error
	Duration time.Duration
}

// Engine runs idempotent operations against PostgreSQL. It holds no state of
// its own beyond validated operations; it is safe for concurrent use.
type Engine struct {
	db        DB
	q         *store.Queries
	cfg       Config
	stored    map[string]bool
	validated sync.Map // *Operation -> error
	headers   sync.Map // stored headers JSON -> decoded (see storedHeaders)
	headerN   atomic.Int32
	atomicPre []string // see claimPre
}

// New returns an engine over db. It validates cfg.Operations; an invalid
// policy (a ttl outside 2h..24h, an unknown mode, ...) is an error here, at
// start-up, not on a request.
func New(db DB, cfg Config) (*Engine, error) {
	if db == nil {
		return nil, errors.New("idem: nil DB")
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("idem: MaxBodyBytes %d is negative", cfg.MaxBodyBytes)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.LockTimeout < 0 {
		return nil, fmt.Errorf("idem: LockTimeout %v is negative", cfg.LockTimeout)
	}
	if cfg.LockTimeout == 0 {
		cfg.LockTimeout = DefaultLockTimeout
	}
	e := &Engine{db: db, q: store.New(db), cfg: cfg, stored: map[string]bool{}}
	e.atomicPre = []string{beginRC, setLockTimeout(cfg.LockTimeout)}
	for _, h := range append(append([]string(nil), DefaultStoredHeaders...), cfg.StoredHeaders...) {
		h = http.CanonicalHeaderKey(h)
		if !neverStored[h] {
			e.stored[h] = true
		}
	}
	if err := e.Register(cfg.Operations...); err != nil {
		return nil, err
	}
	return e, nil
}

// Register validates operations before they serve requests. Serve validates
// an unregistered operation on first use and answers 500 while it is
// invalid; registering at start-up turns that into an error at start-up.
func (e *Engine) Register(ops ...*Operation) error {
	var errs []error
	for _, op := range ops {
		err := op.Validate()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e.validated.Store(op, nil)
	}
	return errors.Join(errs...)
}

func (e *Engine) check(op *Operation) error {
	if v, ok := e.validated.Load(op); ok {
		if v == nil {
			return nil
		}
		return v.(error)
	}
	err := op.Validate()
	if err != nil {
		e.validated.Store(op, err)
		return err
	}
	e.validated.Store(op, nil)
	return nil
}

// request is one Serve call's state.
type request struct {
	op      *Operation
	r       *http.Request
	w       http.ResponseWriter
	key     Key
	rawKey  string
	fp      []byte
	digest  string
	start   time.Time
	outcome Outcome
}

// Serve runs one idempotent request from key parsing to the response: it
// resolves the tenant, parses the key, reads the body (bounded), calls
// prepare, fingerprints, claims the record, runs the handler in a
// transaction, stores the outcome and writes the response, or replays a
// stored one. Every error becomes problem+json through ProblemFor.
//
// A handler that panics is recovered: its transaction rolls back, the key is
// left FAILED_RETRYABLE (so the same request may retry) and the client gets
// a 500 problem; http.ErrAbortHandler is re-panicked after that clean-up.
func (e *Engine) Serve(w http.ResponseWriter, r *http.Request, op *Operation, prepare PrepareFunc) {
	rq := &request{op: op, r: r, w: w, start: time.Now()}
	err := e.serve(rq, prepare)
	var pe *PanicError
	abort := errors.As(err, &pe) && pe.Value == http.ErrAbortHandler
	if err != nil && !abort {
		p := ProblemFor(err, op.Policy.Profile)
		if p.Status >= 500 && !isProblem(err) {
			e.reportError(r.Context(), op, err)
		}
		writeProblem(w, p)
		rq.outcome.Status = p.Status
		rq.outcome.Err = err
		if rq.outcome.Result == "" {
			if p.Status >= 500 {
				rq.outcome.Result = "failed"
			} else {
				rq.outcome.Result = "rejected"
			}
		}
	}
	if h := e.cfg.Hooks.OnOutcome; h != nil {
		rq.outcome.Duration = time.Since(rq.start)
		h(r.Context(), op, rq.outcome)
	}
	if abort {
		panic(pe.Value) // the handler asked net/http to abort the response
	}
}

func (e *Engine) reportError(ctx context.Context, op *Operation, err error) {
	if h := e.cfg.Hooks.OnError; h != nil {
		h(ctx, op, err)
		return
	}
	id := ""
	if op != nil {
		id = op.ID
	}
	slog.ErrorContext(ctx, "idem: request failed", "operation", id, "error", err)
}

func (e *Engine) serve(rq *request, prepare PrepareFunc) error {
	op, r := rq.op, rq.r
	if op == nil {
		return errors.New("idem: Serve called with a nil operation")
	}
	if err := e.check(op); err != nil {
		return err
	}
	tenant := ""
	if e.cfg.Scope != nil {
		t, err := e.cfg.Scope(r)
		if err != nil {
			if isProblem(err) {
				return err
			}
			return fmt.Errorf("%w: %w", ErrUnauthenticated, err)
		}
		tenant = t
	}

	pol := &op.Policy
	vals := r.Header.Values(pol.Header)
	var keyValue string
	switch len(vals) {
	case 0:
	case 1:
		k, err := ParseKey(vals[0], pol.KeyFormat)
		if err != nil {
			return err
		}
		keyValue, rq.rawKey = k, vals[0]
	default:
		return fmt.Errorf("%w: header %s given %d times", ErrKeyMalformed, pol.Header, len(vals))
	}
	if keyValue == "" && pol.Required {
		return ErrKeyRequired
	}

	rbody := r.Body
	if rbody == nil {
		rbody = http.NoBody
	}
	body, err := io.ReadAll(http.MaxBytesReader(rq.w, rbody, e.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("%w: %w", ErrBodyTooLarge, err)
		}
		return InvalidRequest("body", err)
	}
	prep, err := prepare(body)
	if err != nil {
		if isProblem(err) || IsRequestError(err) {
			return err
		}
		return InvalidRequest("body", err)
	}
	handler := prep.Handler
	if handler == nil {
		return errors.New("idem: prepare returned a nil handler")
	}
	sum := sha256.Sum256(body)
	rq.digest = "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"

	if keyValue == "" {
		return e.serveWithoutKey(rq, handler)
	}
	rq.key = Key{Tenant: tenant, Operation: op.ID, Value: keyValue}

	fp, err := e.fingerprint(r, op, body, prep.Canonical)
	if err != nil {
		return err
	}
	rq.fp = fp[:]

	// The request runs on one connection when the DB can lend one (see
	// pipeline.go); pc is nil otherwise.
	ctx := r.Context()
	pc, err := e.acquire(ctx)
	if err != nil {
		return fmt.Errorf("idem: acquire connection: %w", err)
	}
	defer pc.release()
	q := e.q
	if pc != nil {
		q = store.New(pc.c)
	}

	// Replay fast path: one read, no transaction. A read, not a
	// check-and-set: claims below stay INSERT ... ON CONFLICT.
	rec, err := q.GetRecord(ctx, e.recordKey(rq))
	switch {
	case err == nil:
		act, aerr := e.classify(rq, &rec)
		switch act {
		case actReplay:
			pc.release()
			return e.replay(rq, &rec)
		case actError:
			if errors.Is(aerr, ErrFingerprintMismatch) || errors.Is(aerr, ErrExpired) {
				return aerr
			}
		}
	case errors.Is(err, pgx.ErrNoRows):
	default:
		return fmt.Errorf("idem: read record: %w", err)
	}

	if pol.Mode == ModeLease {
		return e.serveLease(rq, handler, pc)
	}
	return e.serveAtomic(rq, handler, pc)
}

// fingerprint hashes prepare's canonical request, or the raw request when
// prepare gave none (see Prepared.Canonical).
func (e *Engine) fingerprint(r *http.Request, op *Operation, body, canonical []byte) ([32]byte, error) {
	if canonical != nil {
		return FingerprintCanonical(r.Method, op.Pattern, canonical), nil
	}
	in := FingerprintInput{
		Method:      r.Method,
		Pattern:     op.Pattern,
		RawQuery:    r.URL.RawQuery,
		ContentType: r.Header.Get("Content-Type"),
		Body:        body,
		Exclude:     op.Policy.FingerprintExclude,
	}
	for _, name := range op.PathParams {
		in.PathParams = append(in.PathParams, PathParam{Name: name, Value: r.PathValue(name)})
	}
	fp, err := Fingerprint(in)
	if errors.Is(err, ErrInvalidJSON) {
		return fp, InvalidRequest("body", err)
	}
	return fp, err
}

// beginRC is what pgx sends for TxOptions{IsoLevel: pgx.ReadCommitted}.
const beginRC = "begin isolation level read committed"

func setLockTimeout(d time.Duration) string {
	return "SET LOCAL lock_timeout = " + strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

const resetLockTimeout = "SET LOCAL lock_timeout TO DEFAULT"

// Fixed statements of the batches (package-level: no allocation per request).
var (
	resetAfter     = []string{resetLockTimeout}
	commitAfter    = []string{"commit"}
	rollbackAfter  = []string{"rollback"}
	leaseClaimPre  = []string{"begin"}
	leaseClaimPost = []string{"commit", beginRC}
)

// claimPre is what precedes an atomic claim in its batch.
func (e *Engine) claimPre(timeout time.Duration) []string {
	if timeout == e.cfg.LockTimeout {
		return e.atomicPre
	}
	return []string{beginRC, setLockTimeout(timeout)}
}

func (e *Engine) recordKey(rq *request) store.GetRecordParams {
	return store.GetRecordParams{Tenant: rq.key.Tenant, Operation: rq.key.Operation, IdempotencyKey: rq.key.Value}
}

// serveWithoutKey runs an operation whose key is optional and absent: a plain
// transaction, no record. Writes commit for outcomes that would be kept.
func (e *Engine) serveWithoutKey(rq *request, h Handler) error {
	ctx := rq.r.Context()
	tx, err := e.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return fmt.Errorf("idem: begin: %w", err)
	}
	resp, herr := callHandler(ctx, h, tx)
	if outcomeOf(rq.op, resp, herr) != outcomeKept {
		rollback(ctx, tx)
		if herr != nil {
			return herr
		}
		rq.outcome = Outcome{Result: "failed", Status: resp.Status}
		if resp.Status < 500 {
			rq.outcome.Result = "executed"
		}
		e.writeResponse(rq, resp, nil)
		return nil
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("idem: commit: %w", err)
	}
	rq.outcome = Outcome{Result: "executed", Status: resp.Status}
	e.writeResponse(rq, resp, nil)
	return nil
}

type action int

const (
	actReplay   action = iota // a stored final outcome: replay it
	actError                  // the request is refused with the error
	actClaim                  // the record may be claimed: try the claim (again)
	actInFlight               // another request holds the key now
)

// classify decides what a request does with an existing record. It judges
// expiry and leases by the database clock (GetRecord computes both).
func (e *Engine) classify(rq *request, rec *store.GetRecordRow) (action, error) {
	pol := &rq.op.Policy
	live := rec.State == StateInProgress || rec.State == StateUnknown
	if !live && (rec.Expired || rec.State == StateExpired) {
		if pol.OnExpired == ExpiredReject {
			return actError, ErrExpired
		}
		return actClaim, nil
	}
	if !bytes.Equal(rec.Fingerprint, rq.fp) {
		return actError, ErrFingerprintMismatch
	}
	switch rec.State {
	case StateCompleted, StateFailedReplayable:
		return actReplay, nil
	case StateFailedRetryable:
		return actClaim, nil
	case StateUnknown:
		if pol.Mode == ModeLease {
			return actClaim, nil
		}
	case StateInProgress:
		if pol.Mode == ModeLease && rec.LeaseLapsed {
			return actClaim, nil
		}
	}
	after := time.Second
	if rec.LeaseExpiresAt.Valid {
		if d := time.Until(rec.LeaseExpiresAt.Time); d > after {
			after = d
		}
	}
	return actInFlight, withRetryAfter(ErrInFlight, after)
}

func (e *Engine) claimParams(rq *request, leaseMs int64) store.ClaimParams {
	pol := &rq.op.Policy
	return store.ClaimParams{
		Tenant:         rq.key.Tenant,
		Operation:      rq.key.Operation,
		IdempotencyKey: rq.key.Value,
		Fingerprint:    rq.fp,
		SchemaVersion:  pol.SchemaVersion,
		LeaseMs:        leaseMs,
		TtlMs:          pol.TTL.Milliseconds(),
		TakeExpired:    pol.OnExpired == ExpiredExecute,
	}
}

const maxClaimAttempts = 4

// unknownRetryAfter is the Retry-After of an UNKNOWN outcome: the next retry
// asks the recovery hook again.
const unknownRetryAfter = 5 * time.Second

// serveAtomic claims the key inside the business transaction. A duplicate
// blocks on the primary key until the first request commits or rolls back,
// bounded by lock_timeout; then it replays, claims, or answers 409.
func (e *Engine) serveAtomic(rq *request, h Handler, pc *pconn) error {
	ctx := rq.r.Context()
	pol := &rq.op.Policy
	timeout := e.cfg.LockTimeout
	if pol.InFlight == InFlightWait {
		timeout = pol.Wait
	}
	for attempt := 0; attempt < maxClaimAttempts; attempt++ {
		if attempt > 0 && pc != nil {
			// The previous attempt's rollback returned the connection.
			var err error
			if pc, err = e.acquire(ctx); err != nil {
				return fmt.Errorf("idem: acquire connection: %w", err)
			}
			defer pc.release()
		}
		var tx pgx.Tx
		var claim store.ClaimRow
		var err error
		if pc != nil {
			// One round trip: BEGIN, the bound, the claim, the reset. The
			// lock_timeout covers the claim alone, never the handler.
			tx = &connTx{p: pc}
			b := &batchDB{c: pc.c, pre: e.claimPre(timeout), post: resetAfter}
			claim, err = store.New(b).Claim(ctx, e.claimParams(rq, 0))
		} else {
			tx, err = e.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
			if err != nil {
				return fmt.Errorf("idem: begin: %w", err)
			}
			b := &batchDB{c: tx, pre: e.claimPre(timeout)[1:], post: resetAfter}
			claim, err = store.New(b).Claim(ctx, e.claimParams(rq, 0))
		}
		switch {
		case err == nil:
			return e.runAtomic(rq, tx, claim, h)
		case errors.Is(err, pgx.ErrNoRows):
			// READ COMMITTED: this statement's snapshot sees the record the
			// claim conflicted with, committed.
			var rec store.GetRecordRow
			var gerr error
			if ct, ok := tx.(*connTx); ok {
				// One round trip: the read and ROLLBACK (a duplicate that
				// waited on the first request is answered sooner).
				rec, gerr = store.New(&batchDB{c: ct.p.c, post: rollbackAfter}).GetRecord(ctx, e.recordKey(rq))
				ct.closed = true
				ct.p.release() // rolls back if the batch stopped before its ROLLBACK
			} else {
				rec, gerr = store.New(tx).GetRecord(ctx, e.recordKey(rq))
				rollback(ctx, tx)
			}
			if errors.Is(gerr, pgx.ErrNoRows) {
				continue // vanished (released) meanwhile: claim again
			}
			if gerr != nil {
				return fmt.Errorf("idem: read record: %w", gerr)
			}
			act, aerr := e.classify(rq, &rec)
			switch act {
			case actReplay:
				return e.replay(rq, &rec)
			case actError, actInFlight:
				return aerr
			}
			// actClaim: it became claimable meanwhile; try again.
		case isLockTimeout(err):
			rollback(ctx, tx)
			return withRetryAfter(ErrInFlight, time.Second)
		default:
			rollback(ctx, tx)
			return fmt.Errorf("idem: claim: %w", err)
		}
	}
	return withRetryAfter(ErrInFlight, time.Second)
}

func (e *Engine) runAtomic(rq *request, tx pgx.Tx, claim store.ClaimRow, h Handler) error {
	ctx := rq.r.Context()
	bk, cancel := bookkeepingContext(ctx)
	defer cancel()
	key := rq.key
	key.Since = claim.CreatedAt.Time
	rs := &runState{e: e, key: key, fence: claim.Fence, mode: ModeAtomic}
	rs.setRecovery(claim.RecoveryPoint, claim.RecoveryData)
	hctx := context.WithValue(ContextWithKey(ctx, key), runCtx{}, rs)
	resp, herr := callHandler(hctx, h, tx)
	switch class := outcomeOf(rq.op, resp, herr); class {
	case outcomeKept, outcomeReplayable:
		state := StateCompleted
		if class == outcomeReplayable {
			state = StateFailedReplayable
		}
		params, err := e.completeParams(rq, claim.Fence, state, resp)
		if ct, ok := tx.(*connTx); ok && err == nil {
			// One round trip: the outcome and COMMIT, which PostgreSQL
			// skips when the outcome fails.
			b := &batchDB{c: ct.p.c, post: commitAfter}
			_, err = store.New(b).CompleteOrAbort(ctx, store.CompleteOrAbortParams(params))
			if isFencedOut(err) {
				err = errors.New("idem: atomic claim vanished inside its transaction")
			}
			err = ct.finish(err, b)
		} else if err == nil {
			var n int64
			n, err = store.New(tx).Complete(ctx, params)
			if err == nil && n == 0 {
				err = errors.New("idem: atomic claim vanished inside its transaction")
			}
			if err == nil {
				err = tx.Commit(ctx)
			}
		}
		if err != nil {
			rollback(bk, tx)
			e.recordRetryable(bk, rq)
			rq.outcome.State = StateFailedRetryable
			return fmt.Errorf("idem: store outcome: %w", err)
		}
		rq.outcome = Outcome{Result: "executed", State: state, Status: resp.Status}
		e.writeResponse(rq, resp, nil)
		return nil
	case outcomeReleased:
		rollback(bk, tx)
		if claim.Attempts > 1 {
			// The claim took over an earlier FAILED_RETRYABLE record of this
			// payload; the rollback restored it. Free the key.
			if _, err := e.q.Release(bk, store.ReleaseParams{
				Tenant: rq.key.Tenant, Operation: rq.key.Operation, IdempotencyKey: rq.key.Value,
				Fence: 0, Fingerprint: rq.fp,
			}); err != nil {
				e.reportError(ctx, rq.op, fmt.Errorf("idem: release key: %w", err))
			}
		}
		rq.outcome = Outcome{Result: "executed", State: "RELEASED", Status: resp.Status}
		e.writeResponse(rq, resp, nil)
		return nil
	default: // outcomeRetryable
		rollback(bk, tx)
		e.recordRetryable(bk, rq)
		if herr != nil {
			rq.outcome = Outcome{Result: "failed", State: StateFailedRetryable}
			return herr
		}
		rq.outcome = Outcome{Result: "failed", State: StateFailedRetryable, Status: resp.Status}
		e.writeResponse(rq, resp, nil)
		return nil
	}
}

func (e *Engine) recordRetryable(ctx context.Context, rq *request) {
	err := e.q.RecordRetryable(ctx, store.RecordRetryableParams{
		Tenant: rq.key.Tenant, Operation: rq.key.Operation, IdempotencyKey: rq.key.Value,
		Fingerprint: rq.fp, SchemaVersion: rq.op.Policy.SchemaVersion, TtlMs: rq.op.Policy.TTL.Milliseconds(),
	})
	if err != nil {
		e.reportError(ctx, rq.op, fmt.Errorf("idem: record retryable outcome: %w", err))
	}
}

// serveLease commits an IN_PROGRESS claim with a lease first, then runs the
// business transaction, which stores the outcome only while the claim's
// fencing token still holds.
func (e *Engine) serveLease(rq *request, h Handler, pc *pconn) error {
	ctx := rq.r.Context()
	pol := &rq.op.Policy
	leaseMs := max(pol.Lease.Milliseconds(), 1)
	var deadline time.Time
	if pol.InFlight == InFlightWait {
		deadline = time.Now().Add(pol.Wait)
	}
	backoff := 10 * time.Millisecond
	var claim store.ClaimRow
	claimed := false
	q := e.q
	if pc != nil {
		q = store.New(pc.c)
	}
	begun, pipelined := false, false
	for attempt := 0; !claimed; attempt++ {
		var c store.ClaimRow
		var err error
		if pc != nil && !pipelined {
			// One round trip: the claim in a transaction of its own,
			// committed, then BEGIN of the business transaction.
			pipelined = true
			b := &batchDB{c: pc.c, pre: leaseClaimPre, post: leaseClaimPost}
			c, err = store.New(b).Claim(ctx, e.claimParams(rq, leaseMs))
			if errors.Is(err, pgx.ErrNoRows) {
				// Held: the business transaction began for nothing.
				if _, rerr := pc.c.Exec(ctx, "rollback"); rerr != nil {
					return fmt.Errorf("idem: rollback: %w", rerr)
				}
			}
			begun = err == nil
		} else {
			c, err = q.Claim(ctx, e.claimParams(rq, leaseMs))
		}
		if err == nil {
			claim, claimed = c, true
			break
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("idem: claim: %w", err)
		}
		rec, err := q.GetRecord(ctx, e.recordKey(rq))
		var act action
		var aerr error
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			act = actClaim
		case err != nil:
			return fmt.Errorf("idem: read record: %w", err)
		default:
			act, aerr = e.classify(rq, &rec)
		}
		switch act {
		case actReplay:
			pc.release()
			return e.replay(rq, &rec)
		case actError:
			return aerr
		case actClaim:
			if attempt < maxClaimAttempts {
				continue
			}
			aerr = withRetryAfter(ErrInFlight, time.Second)
		}
		// In flight.
		if deadline.IsZero() || time.Now().Add(backoff).After(deadline) {
			return aerr
		}
		// Hold no connection while waiting.
		pc.release()
		pc, q = nil, e.q
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 250*time.Millisecond)
		attempt = 0
	}
	return e.runLease(rq, claim, h, pc, begun)
}

// runLease runs the handler under a committed claim. begun says pc is
// already inside the business transaction.
func (e *Engine) runLease(rq *request, claim store.ClaimRow, h Handler, pc *pconn, begun bool) error {
	ctx := rq.r.Context()
	bk, cancel := bookkeepingContext(ctx)
	defer cancel()
	pol := &rq.op.Policy
	key := rq.key
	key.Since = claim.CreatedAt.Time
	rs := &runState{e: e, key: key, fence: claim.Fence, mode: ModeLease, lease: pol.Lease}
	rs.setRecovery(claim.RecoveryPoint, claim.RecoveryData)
	hctx := context.WithValue(ContextWithKey(ctx, key), runCtx{}, rs)

	if claim.TakenOver {
		if hook := e.cfg.Recover[rq.op.ID]; hook != nil {
			// The hook and its bookkeeping use the pool: hold no connection.
			pc.release()
			pc = nil
			done, err := e.runRecovery(rq, hctx, bk, rs, claim, hook)
			if done || err != nil {
				return err
			}
		}
	}

	hctx, stop := rs.keepAlive(hctx)
	var tx pgx.Tx
	var err error
	if pc != nil {
		if !begun {
			_, err = pc.c.Exec(hctx, beginRC)
		}
		if err == nil {
			tx = &connTx{p: pc}
		}
	} else {
		tx, err = e.db.BeginTx(hctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	}
	if err != nil {
		stop()
		pc.release()
		e.failRetryable(bk, rq, claim.Fence)
		return fmt.Errorf("idem: begin: %w", err)
	}
	resp, herr := callHandler(hctx, h, tx)
	lost := stop()
	if lost {
		rollback(bk, tx)
		rq.outcome = Outcome{Result: "failed"}
		return withRetryAfter(ErrLeaseLost, time.Second)
	}
	switch class := outcomeOf(rq.op, resp, herr); class {
	case outcomeKept, outcomeReplayable:
		state := StateCompleted
		if class == outcomeReplayable {
			state = StateFailedReplayable
		}
		params, err := e.completeParams(rq, claim.Fence, state, resp)
		var n int64 = 1
		if ct, ok := tx.(*connTx); ok && err == nil {
			// One round trip: the outcome and COMMIT, which PostgreSQL
			// skips when the outcome fails or is fenced out.
			b := &batchDB{c: ct.p.c, post: commitAfter}
			_, err = store.New(b).CompleteOrAbort(ctx, store.CompleteOrAbortParams(params))
			if isFencedOut(err) {
				n, err = 0, nil
			}
			if n == 1 {
				err = ct.finish(err, b)
			}
		} else if err == nil {
			n, err = store.New(tx).Complete(ctx, params)
			if err == nil && n > 0 {
				err = tx.Commit(ctx)
			}
		}
		if err == nil && n == 0 {
			// Fenced out: another request took the claim over. This
			// (zombie) attempt must not commit its business writes.
			rollback(bk, tx)
			rq.outcome = Outcome{Result: "failed"}
			return withRetryAfter(ErrLeaseLost, time.Second)
		}
		if err != nil {
			rollback(bk, tx)
			e.failRetryable(bk, rq, claim.Fence)
			rq.outcome.State = StateFailedRetryable
			return fmt.Errorf("idem: store outcome: %w", err)
		}
		rq.outcome = Outcome{Result: "executed", State: state, Status: resp.Status}
		if claim.TakenOver {
			rq.outcome.Result = "recovered"
		}
		e.writeResponse(rq, resp, nil)
		return nil
	case outcomeReleased:
		rollback(bk, tx)
		if _, err := e.q.Release(bk, store.ReleaseParams{
			Tenant: rq.key.Tenant, Operation: rq.key.Operation, IdempotencyKey: rq.key.Value,
			Fence: claim.Fence,
		}); err != nil {
			e.reportError(ctx, rq.op, fmt.Errorf("idem: release key: %w", err))
		}
		rq.outcome = Outcome{Result: "executed", State: "RELEASED", Status: resp.Status}
		e.writeResponse(rq, resp, nil)
		return nil
	default:
		rollback(bk, tx)
		e.failRetryable(bk, rq, claim.Fence)
		if herr != nil {
			rq.outcome = Outcome{Result: "failed", State: StateFailedRetryable}
			return herr
		}
		rq.outcome = Outcome{Result: "failed", State: StateFailedRetryable, Status: resp.Status}
		e.writeResponse(rq, resp, nil)
		return nil
	}
}

// runRecovery runs the operation's recovery hook for a taken-over claim. done
// means the request has been answered (or err says how).
func (e *Engine) runRecovery(rq *request, hctx, bk context.Context, rs *runState, claim store.ClaimRow, hook RecoverFunc) (done bool, err error) {
	info := Recovery{Attempts: int(claim.Attempts)}
	info.Point, info.Data, info.HasPoint = rs.recoveryPoint()
	dec, herr := callRecover(hctx, hook, info)
	if herr != nil {
		e.reportError(rq.r.Context(), rq.op, fmt.Errorf("idem: recovery hook: %w", herr))
		dec = Unknown()
	}
	fenceArgs := store.MarkUnknownParams{Tenant: rq.key.Tenant, Operation: rq.key.Operation,
		IdempotencyKey: rq.key.Value, Fence: claim.Fence}
	switch dec.kind {
	case decisionNotExecuted:
		return false, nil
	case decisionCompleted:
		resp := dec.resp
		if resp == nil || resp.Status < 100 || resp.Status > 999 {
			return true, errors.New("idem: recovery hook returned Completed without a valid response")
		}
		switch outcomeOf(rq.op, resp, nil) {
		case outcomeKept, outcomeReplayable:
			state := StateCompleted
			if outcomeOf(rq.op, resp, nil) == outcomeReplayable {
				state = StateFailedReplayable
			}
			params, err := e.completeParams(rq, claim.Fence, state, resp)
			if err != nil {
				return true, err
			}
			n, err := e.q.Complete(bk, params)
			if err != nil {
				return true, fmt.Errorf("idem: store recovered outcome: %w", err)
			}
			if n == 0 {
				return true, withRetryAfter(ErrLeaseLost, time.Second)
			}
			rq.outcome = Outcome{Result: "recovered", State: state, Status: resp.Status, Replayed: true}
			e.writeResponse(rq, resp, &replayInfo{completedAt: time.Now()})
			return true, nil
		case outcomeReleased:
			if _, err := e.q.Release(bk, store.ReleaseParams{Tenant: rq.key.Tenant, Operation: rq.key.Operation,
				IdempotencyKey: rq.key.Value, Fence: claim.Fence}); err != nil {
				return true, fmt.Errorf("idem: release key: %w", err)
			}
			rq.outcome = Outcome{Result: "recovered", State: "RELEASED", Status: resp.Status, Replayed: true}
			e.writeResponse(rq, resp, &replayInfo{completedAt: time.Now()})
			return true, nil
		default:
			e.failRetryable(bk, rq, claim.Fence)
			rq.outcome = Outcome{Result: "recovered", State: StateFailedRetryable, Status: resp.Status, Replayed: true}
			e.writeResponse(rq, resp, &replayInfo{completedAt: time.Now()})
			return true, nil
		}
	default: // Unknown
		n, err := e.q.MarkUnknown(bk, fenceArgs)
		if err != nil {
			return true, fmt.Errorf("idem: mark outcome unknown: %w", err)
		}
		if n == 0 {
			return true, withRetryAfter(ErrLeaseLost, time.Second)
		}
		rq.outcome = Outcome{Result: "failed", State: StateUnknown}
		return true, withRetryAfter(ErrOutcomeUnknown, unknownRetryAfter)
	}
}

func (e *Engine) failRetryable(ctx context.Context, rq *request, fence int64) {
	_, err := e.q.FailRetryable(ctx, store.FailRetryableParams{
		Tenant: rq.key.Tenant, Operation: rq.key.Operation, IdempotencyKey: rq.key.Value, Fence: fence,
	})
	if err != nil {
		e.reportError(ctx, rq.op, fmt.Errorf("idem: record retryable outcome: %w", err))
	}
}

func (e *Engine) completeParams(rq *request, fence int64, state string, resp *Response) (store.CompleteParams, error) {
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
		State:           state,
		ResponseStatus:  pgtype.Int4{Int32: int32(resp.Status), Valid: true},
		ResponseHeaders: hj,
		ResponseBody:    body,
		Tenant:          rq.key.Tenant,
		Operation:       rq.key.Operation,
		IdempotencyKey:  rq.key.Value,
		Fence:           fence,
	}, nil
}

// replay writes a stored outcome.
func (e *Engine) replay(rq *request, rec *store.GetRecordRow) error {
	if rec.SchemaVersion != rq.op.Policy.SchemaVersion && rq.op.Policy.OnSchemaChange == SchemaChangeReject {
		return fmt.Errorf("%w: stored %q, current %q", ErrSchemaChanged, rec.SchemaVersion, rq.op.Policy.SchemaVersion)
	}
	resp := &Response{Status: int(rec.ResponseStatus.Int32), Header: http.Header{}, Body: rec.ResponseBody}
	if len(rec.ResponseHeaders) > 0 {
		hdr, err := e.storedHeaders(rec.ResponseHeaders)
		if err != nil {
			return fmt.Errorf("idem: stored response headers: %w", err)
		}
		for k, v := range hdr {
			resp.Header[k] = append([]string(nil), v...) // the cache's slices stay unshared
		}
	}
	rq.outcome = Outcome{Result: "replayed", State: rec.State, Status: resp.Status, Replayed: true}
	e.writeResponse(rq, resp, &replayInfo{completedAt: rec.CompletedAt.Time})
	return nil
}

// maxHeaderCache bounds Engine.headers. Stored header sets repeat (one or a
// few per operation), so a small cache serves nearly every replay.
const maxHeaderCache = 256

// storedHeaders decodes a record's stored headers (canonical names, never
// the neverStored ones), through a cache: decoding JSON was the largest
// engine cost of a replay. The result is shared and must not be modified.
func (e *Engine) storedHeaders(raw []byte) (map[string][]string, error) {
	if v, ok := e.headers.Load(string(raw)); ok {
		return v.(map[string][]string), nil
	}
	var hdr map[string][]string
	if err := json.Unmarshal(raw, &hdr); err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(hdr))
	for k, v := range hdr {
		if c := http.CanonicalHeaderKey(k); !neverStored[c] {
			out[c] = v
		}
	}
	if e.headerN.Load() < maxHeaderCache {
		if _, loaded := e.headers.LoadOrStore(string(raw), out); !loaded {
			e.headerN.Add(1)
		}
	}
	return out, nil
}

type replayInfo struct{ completedAt time.Time }

func (e *Engine) writeResponse(rq *request, resp *Response, rp *replayInfo) {
	h := rq.w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	if rq.rawKey != "" {
		h.Set(rq.op.Policy.Header, rq.rawKey)
	}
	if rq.digest != "" {
		h.Set("Content-Digest", rq.digest)
	}
	if rp != nil {
		h.Set("Last-Modified", rp.completedAt.UTC().Format(http.TimeFormat))
		h.Set("Idempotent-Replayed", "true")
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	rq.w.WriteHeader(resp.Status)
	_, _ = rq.w.Write(resp.Body)
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

// callHandler runs h, turning a panic into a *PanicError and a nil or
// invalid response into an error.
func callHandler(ctx context.Context, h Handler, tx pgx.Tx) (resp *Response, err error) {
	defer func() {
		if v := recover(); v != nil {
			resp, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	resp, err = h(ctx, tx)
	if err == nil && (resp == nil || resp.Status < 100 || resp.Status > 999) {
		return nil, errors.New("idem: handler returned no response or an invalid status")
	}
	return resp, err
}

func callRecover(ctx context.Context, f RecoverFunc, info Recovery) (d Decision, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return f(ctx, info)
}

// bookkeepingContext is for the statements that record an outcome after the
// handler: they must run even when the client has gone away.
func bookkeepingContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

func rollback(ctx context.Context, tx pgx.Tx) {
	_ = tx.Rollback(context.WithoutCancel(ctx))
}

// isFencedOut reports CompleteOrAbort's error for a claim no longer held.
func isFencedOut(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012"
}

func isLockTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}
