package idem

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/internal/readall"
)

// request is one Serve call's state. Each group of fields has one
// writer.
type request struct {
	// What serve finds out before the request reaches its mode (the key,
	// its record's ref, the fingerprint, and the digest its read sets);
	// read only afterwards.
	op     *Operation
	state  *opState // op's, in the engine that checked it (config.go)
	mode   mode
	r      *http.Request
	w      http.ResponseWriter
	key    Key
	ref    ref // the record's id and key
	rawKey string
	fp     []byte
	digest string
	start  time.Time

	// What the cache did for the request (cache.go).
	cache cacheCall
	// How the request met its duplicates in this process (handoff.go).
	dup dupCall
	// What the mode learned of the key's record, for Outcome.Raced and the
	// operation's guess (guess.go): insertFirst, it skipped the replay
	// read (atomic.go, lease.go); found, the replay read found a record
	// (preRead) or a lease claim found the key held (lease.go);
	// raced, the record write lost to a concurrent duplicate on the
	// primary key (atomic.go).
	insertFirst, found, raced bool

	// The answer, written by whatever answers the request (finish,
	// replay, the handoff, serveHTTP for an error): the outcome; the
	// outcome PostgreSQL committed that it answered with (stored or
	// replayed), for the cache and the duplicates waiting in this
	// process; and what report adds to the outcome: the claim's attempt
	// and fence (claimed), a record that had expired (classify), a
	// replayed response's time (replay), the body size (writeResponse).
	outcome   Outcome
	committed *cached
	attempt   int
	fence     int64
	expired   bool
	storedAt  time.Time
	bytes     int
	// keyHash is key.Hash(), made once, when the outcome or a log line
	// first needs it (log.go).
	keyHash string
}

// claimed notes the claim rq runs under.
func (rq *request) claimed(attempts int32, fence int64) {
	rq.attempt, rq.fence = int(attempts), fence
}

// Serve runs one idempotent request from key parsing to the response: it
// resolves the tenant, parses the key, reads the body (bounded), calls
// prepare, fingerprints, claims the record, runs the handler in a
// transaction, stores the outcome and writes the response, or replays a
// stored one. Every error is answered through ProblemFor under the operation's
// profile, in its body or Config.Errors's (see WriteError).
//
// A handler that panics is recovered: its transaction rolls back, the key is
// left FAILED_RETRYABLE (so the same request may retry; in lease mode through
// the recovery hook, as after any failure of a handler that ran) and the
// client gets a 500 problem; http.ErrAbortHandler is re-panicked after that
// clean-up.
//
// Serve is never inlined: a generated package calls it once per operation,
// and each inlined copy would be a copy of its closure too, for the compiler
// to build again (a third of the compile of a 1 000-operation package).
//
//go:noinline
func (e *Engine) Serve(w http.ResponseWriter, r *http.Request, op *Operation, prepare PrepareFunc) {
	e.serveHTTP(w, r, op, func(rq *request, rbody io.ReadCloser) (Prepared, []byte, error) {
		body, err := readall.ReadAll(limitBody(rq.w, rq.r.ContentLength, rbody, e.cfg.MaxBodyBytes), rq.r.ContentLength)
		if err != nil {
			return Prepared{}, nil, bodyReadError(err)
		}
		sum := sha256.Sum256(body)
		rq.digest = contentDigest(sum[:])
		prep, err := prepare(body)
		return prep, body, err
	})
}

// StreamPrepareFunc is PrepareFunc for a body read as a stream: prepare
// reads body (bounded by Config.MaxStreamedBodyBytes) as it decodes it,
// instead of the engine reading it whole into memory first.
type StreamPrepareFunc func(body io.Reader) (Prepared, error)

// ServeStream is Serve for operations whose bodies are read as streams
// (multipart/form-data with files, binary bodies): prepare reads the body
// itself, and must return a Prepared with Canonical set, since the engine
// never holds the raw body to fingerprint it. Content-Digest is computed
// over the body as prepare reads it (and whatever it leaves unread).
// Like Serve, it is never inlined into the generated handlers.
//
//go:noinline
func (e *Engine) ServeStream(w http.ResponseWriter, r *http.Request, op *Operation, prepare StreamPrepareFunc) {
	e.serveHTTP(w, r, op, func(rq *request, rbody io.ReadCloser) (Prepared, []byte, error) {
		h := sha256.New()
		body := io.TeeReader(limitBody(rq.w, rq.r.ContentLength, rbody, e.cfg.MaxStreamedBodyBytes), h)
		prep, err := prepare(body)
		if err != nil {
			return prep, nil, err
		}
		if _, err := io.Copy(io.Discard, body); err != nil {
			return Prepared{}, nil, bodyReadError(err)
		}
		if prep.Canonical == nil {
			return Prepared{}, nil, errors.New("idem: ServeStream: prepare returned no Canonical form to fingerprint")
		}
		rq.digest = contentDigest(h.Sum(nil))
		return prep, nil, nil
	})
}

// LimitBody returns r's body bounded by limit, as http.MaxBytesReader
// does, except that a body whose Content-Length already says it is larger
// is refused before a byte of it is read: the first Read returns the
// *http.MaxBytesError (413 through WriteError). A client that sent
// Expect: 100-continue then gets 413 instead of 100 Continue (net/http
// sends that on the first read of the body) and never sends the body, and
// a client that announces a body it never sends is not waited for.
// Serve and ServeStream bound bodies with it; generated handlers of
// operations that are not idempotent too (idemimpl.ReadBody).
func LimitBody(w http.ResponseWriter, r *http.Request, limit int64) io.ReadCloser {
	body := r.Body
	if body == nil {
		body = http.NoBody
	}
	return limitBody(w, r.ContentLength, body, limit)
}

func limitBody(w http.ResponseWriter, contentLength int64, body io.ReadCloser, limit int64) io.ReadCloser {
	if contentLength > limit {
		return tooLarge{limit}
	}
	return http.MaxBytesReader(w, body, limit)
}

// tooLarge is the body of a request whose Content-Length is over the limit.
type tooLarge struct{ limit int64 }

func (t tooLarge) Read([]byte) (int, error) { return 0, &http.MaxBytesError{Limit: t.limit} }
func (tooLarge) Close() error               { return nil }

// bodyReadError classifies an error reading the request body: too large
// (413) or unreadable (400).
func bodyReadError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fmt.Errorf("%w: %w", ErrBodyTooLarge, err)
	}
	return fmt.Errorf("%w: %w", ErrBodyUnreadable, err)
}

// contentDigest is the Content-Digest field value of a SHA-256 sum, made
// in one allocation (the string).
func contentDigest(sum []byte) string {
	var buf [64]byte // "sha-256=:", 44 characters of base64, ":"
	b := append(buf[:0], "sha-256=:"...)
	b = base64.StdEncoding.AppendEncode(b, sum)
	return string(append(b, ':'))
}

// readBody reads and prepares a request's body for serveHTTP, setting
// rq.digest; it returns the raw body when it holds it (for a request
// without a canonical form).
type readBody func(rq *request, body io.ReadCloser) (Prepared, []byte, error)

func (e *Engine) serveHTTP(w http.ResponseWriter, r *http.Request, op *Operation, read readBody) {
	rq := &request{op: op, r: r, w: w, start: time.Now()}
	var observed func(Outcome)
	if len(e.cfg.Observers) > 0 && op != nil {
		var ctx context.Context
		ctx, observed = observers(e.cfg.Observers).request(r.Context(), op)
		rq.r = r.WithContext(ctx)
	}
	err := hungUpEarly(r.Context(), e.serve(rq, read))
	var pe *PanicError
	abort := errors.As(err, &pe) && pe.Value == http.ErrAbortHandler
	if err != nil && !abort {
		profile := ProfileDefault
		if op != nil {
			profile = op.Policy.Profile
		}
		p, status := e.writeError(w, rq.r, profile, err)
		if hiddenCause(err, p.Status) && e.cfg.Hooks.OnError != nil {
			// Without the hook, report logs the cause with the request.
			e.cfg.Hooks.OnError(rq.r.Context(), op, err)
		}
		rq.outcome.Status = status
		rq.outcome.Err = err
		if rq.outcome.Result == "" {
			if p.Status >= 500 || errors.Is(err, ErrClientGone) {
				rq.outcome.Result = ResultFailed
			} else {
				rq.outcome.Result = ResultRejected
			}
		}
	}
	if op != nil {
		e.report(rq.r.Context(), rq)
	}
	if observed != nil {
		observed(rq.outcome)
	}
	if h := e.cfg.Hooks.OnOutcome; h != nil {
		h(rq.r.Context(), op, rq.outcome)
	}
	if abort {
		panic(pe.Value) // the handler asked net/http to abort the response
	}
}

func (e *Engine) serve(rq *request, read readBody) error {
	op, r := rq.op, rq.r
	if op == nil {
		return errors.New("idem: Serve called with a nil operation")
	}
	state, err := e.check(op)
	if err != nil {
		return err
	}
	rq.state = state
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
	if err := checkScope(r, op, tenant); err != nil {
		return err
	}

	pol := &op.Policy
	vals := r.Header.Values(pol.Header)
	var keyValue string
	switch len(vals) {
	case 0:
	case 1:
		k, err := pol.ParseKey(vals[0])
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
	if op.CheckKey != nil {
		if err := op.CheckKey(keyValue); err != nil {
			if isProblem(err) || IsRequestError(err) {
				return err
			}
			return InvalidRequest("header "+strconv.Quote(pol.Header), err)
		}
	}

	rbody := r.Body
	if rbody == nil {
		rbody = http.NoBody
	}
	prep, body, err := read(rq, rbody)
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

	db, err := e.engineFor(r.Context(), tenant) // the engine over the tenant's database
	if err != nil {
		return err
	}
	if keyValue == "" {
		return db.serveWithoutKey(rq, handler)
	}
	rq.key = Key{Tenant: tenant, Operation: op.ID, Value: keyValue}
	rq.ref = rq.key.ref()
	rq.mode = db.modeOf(op)

	fp, err := requestFingerprint(r, op, body, prep.Canonical)
	if err != nil {
		return err
	}
	rq.fp = fp[:]
	if e.cfg.Region != nil {
		if err := db.checkHome(rq); err != nil {
			return err
		}
	}
	return db.serveKeyed(rq, handler)
}

// serveKeyed serves a request with a key through its operation's mode.
func (e *Engine) serveKeyed(rq *request, h Handler) error {
	// The request runs on one connection when the DB can lend one (see
	// pipeline.go).
	g := &rq.state.guess
	ho, answered, err := e.awaitHandoff(rq)
	if answered {
		g.observe(true) // a duplicate of a request in flight here
		return err
	}
	if ho != nil {
		defer func() { e.handoffs.end(rq.key, ho, rq.committed) }()
	}
	if e.cfg.Cache != nil && !rq.dup.ownWay && rq.mode.asksCache(rq) {
		if answered, err := e.cacheLookup(rq); answered {
			g.observe(true) // the key had an outcome, or a duplicate in flight
			return err
		}
		defer e.cacheAfter(rq)
	}
	st := e.newSession()
	defer st.release()
	if err := e.importLegacy(rq.r.Context(), rq, st); err != nil {
		return err
	}
	return rq.mode.serve(rq, h, st)
}

// preRead is the replay fast path: one read, no transaction; a read, not a
// check-and-set: only the writes decide who runs. It answers the request
// when the record decides it (replay, conflict, expired). Otherwise it
// returns the record when the mode may run it again (nil when there is
// none), and inFlight when another request holds the key now, which each
// mode treats in its own way.
func (e *Engine) preRead(ctx context.Context, rq *request, st session) (prev *record, inFlight error, answered bool, err error) {
	ctx, done := e.obs.enter(ctx, rq, phaseRead)
	rec, found, err := read(ctx, st, rq.ref, rq.fp)
	done(err)
	if err != nil {
		return nil, nil, true, fmt.Errorf("idem: read record: %w", err)
	}
	if !found {
		return nil, nil, false, nil
	}
	rq.found = true
	act, aerr := e.classify(rq, &rec)
	switch act {
	case actReplay:
		st.release()
		return nil, nil, true, e.replay(rq, &rec)
	case actError:
		return nil, nil, true, aerr
	case actInFlight:
		return nil, aerr, false, nil
	}
	return &rec, nil, false, nil
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
	herr = hangUp(ctx, herr, false)
	if outcomeOf(rq.op, resp, herr) != outcomeKept {
		rollback(ctx, tx)
		if herr != nil {
			return herr
		}
		rq.outcome = Outcome{Result: ResultFailed, Status: resp.Status}
		if resp.Status < 500 {
			rq.outcome.Result = ResultExecuted
		}
		e.writeResponse(rq, resp, nil)
		return nil
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("idem: commit: %w", err)
	}
	rq.outcome = Outcome{Result: ResultExecuted, Status: resp.Status}
	e.writeResponse(rq, resp, nil)
	return nil
}

type replayInfo struct{ completedAt time.Time }

// writeResponse answers the client with resp, as a replay when rp is set.
func (e *Engine) writeResponse(rq *request, resp *Response, rp *replayInfo) {
	h := rq.w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	if rq.rawKey != "" {
		h.Set(rq.op.Policy.Header, rq.rawKey)
	}
	// Names in canonical form, set without Set's canonicalization (2.5 k
	// of a replay's 140 k instructions).
	if rq.digest != "" {
		h["Content-Digest"] = []string{rq.digest}
	}
	if rp != nil {
		h["Last-Modified"] = []string{rp.completedAt.UTC().Format(http.TimeFormat)}
		h["Idempotent-Replayed"] = []string{"true"}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(resp.Body))}
	rq.bytes = len(resp.Body)
	rq.w.WriteHeader(resp.Status)
	_, _ = rq.w.Write(resp.Body)
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

// bookkeepingTimeout bounds the statements of a bookkeeping context.
const bookkeepingTimeout = 10 * time.Second

// bookkeepingContext is for the statements that record an outcome after the
// handler: they must run even when the client has gone away. It carries
// ctx's values, not its cancellation, and ends bookkeepingTimeout after it
// is first waited on (see lazyContext); cancel ends it.
func bookkeepingContext(ctx context.Context) (context.Context, context.CancelFunc) {
	l := &lazyContext{parent: context.WithoutCancel(ctx)}
	return l, l.cancel
}

// lazyContext is context.WithTimeout(parent, bookkeepingTimeout), made when
// it is first asked for its deadline, Done or Err: an atomic request that
// completes never asks (its outcome is written on the request's own
// context), and so never starts the timer.
type lazyContext struct {
	parent context.Context // without its parent's cancellation
	once   sync.Once
	ctx    context.Context
	stop   context.CancelFunc
}

func (l *lazyContext) init() context.Context {
	l.once.Do(func() { l.ctx, l.stop = context.WithTimeout(l.parent, bookkeepingTimeout) })
	return l.ctx
}

func (l *lazyContext) Deadline() (time.Time, bool) { return l.init().Deadline() }
func (l *lazyContext) Done() <-chan struct{}       { return l.init().Done() }
func (l *lazyContext) Err() error                  { return l.init().Err() }
func (l *lazyContext) Value(key any) any           { return l.parent.Value(key) }

// AfterFunc lets context.AfterFunc and the contexts derived from l (pgx
// watches each statement's context with context.AfterFunc) register with
// the timer's context, as they would with the standard library's, instead
// of starting a goroutine each to wait on Done.
func (l *lazyContext) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(l.init(), f) }

// cancel ends the context; one that nothing asked for ends as made, with
// no timer to stop.
func (l *lazyContext) cancel() {
	l.once.Do(func() { l.ctx, l.stop = endedContext, func() {} })
	l.stop()
}

// endedContext is a context that has ended (context.Canceled).
var endedContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// rollback ends tx (nil: nothing began) whatever became of the request.
func rollback(ctx context.Context, tx pgx.Tx) {
	if tx == nil {
		return
	}
	_ = tx.Rollback(context.WithoutCancel(ctx))
}
