package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxBodyBytes bounds request bodies when Config.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 1 << 20

// DefaultMaxStreamedBodyBytes bounds streamed request bodies when
// Config.MaxStreamedBodyBytes is zero.
const DefaultMaxStreamedBodyBytes = 32 << 20

// DefaultLockTimeout bounds how long an atomic-mode duplicate waits for the
// request with the same key running in this process when the policy's
// inFlight is reject.
const DefaultLockTimeout = 50 * time.Millisecond

// DefaultMaxHold is Config.MaxHold when it is zero.
const DefaultMaxHold = 5 * time.Minute

// DefaultMaxStoredResponseBytes bounds stored response bodies when
// Config.MaxStoredResponseBytes is zero.
const DefaultMaxStoredResponseBytes = 1 << 20

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

// NeverStoredHeader reports whether a response header is never stored nor
// replayed, whatever Config.StoredHeaders or Operation.ResponseHeaders say:
// cookies, credentials and the headers a replay sets itself.
func NeverStoredHeader(name string) bool { return neverStored[http.CanonicalHeaderKey(name)] }

// Config configures an Engine. The zero value is usable.
type Config struct {
	// Scope resolves the tenant of a request; nil means one tenant, "". An
	// error is a 401 problem, unless it is (or wraps) a *Problem. A tenant
	// longer than MaxTenantBytes, or holding control characters or bytes
	// that are not UTF-8, is refused with a 400 naming the limit before any
	// statement runs, as the client's error: a ScopeFunc usually maps
	// something the request carries. One whose tenants come from the
	// service's own data should check them and return a 500 *Problem itself
	// (PrincipalScope does).
	Scope ScopeFunc
	// MaxBodyBytes bounds the request body; larger bodies get 413 and no
	// record. Zero means 1 MiB.
	MaxBodyBytes int64
	// MaxStreamedBodyBytes bounds the body of a request read as a stream
	// (Engine.ServeStream: multipart/form-data with files, binary bodies),
	// which is spooled to temporary files rather than held in memory; larger
	// bodies get 413 and no record. Zero means 32 MiB.
	MaxStreamedBodyBytes int64
	// LockTimeout bounds how long an atomic-mode duplicate waits for the
	// request with the same key that runs in this process before it gets 409
	// in flight, when the operation's inFlight is reject (with wait,
	// Policy.Wait bounds it). Zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// MaxHold bounds how long one attempt of a lease-mode operation holds
	// its claim, for operations whose policy sets no MaxHold (x-idempotent
	// maxHold); it is never less than the operation's lease. Zero means
	// DefaultMaxHold (5 minutes).
	//
	// The handler's context (and a recovery hook's) carries the deadline
	// claim time + MaxHold, with ErrHoldExpired as its cause, and the lease
	// is renewed up to that deadline, not past it: a handler stuck on
	// something that never comes cannot keep its key in progress for as
	// long as its process lives. From the deadline on, the next retry takes
	// the claim over and the operation's recovery hook decides. An attempt
	// that answers after its deadline is stored as usual if no retry took
	// the claim over meanwhile (else it is fenced out: its transaction rolls
	// back and its client gets 409 IDEMPOTENCY_LEASE_LOST), except that a
	// failure (an error, as a handler whose context ended returns, or a 5xx)
	// leaves the claim to lapse instead of making it FAILED_RETRYABLE: what
	// the attempt started outside the database may have happened, so its
	// client gets 503 IDEMPOTENT_REQUEST_OUTCOME_UNKNOWN and the next retry
	// goes through the recovery hook.
	MaxHold time.Duration
	// SlowAtomicHandler is how long an atomic-mode handler may run before
	// the engine logs, once per operation, that it runs long for a handler
	// that holds a transaction (and its row locks) and that a failed
	// attempt's retry runs again: one that calls another service belongs in
	// mode: lease with a recovery hook. Zero means DefaultSlowAtomicHandler
	// (2 s); negative turns the hint off.
	SlowAtomicHandler time.Duration
	// MaxStoredResponseBytes bounds the body of a response that is stored
	// for replay (2xx and replayStatuses). A larger one is not stored and
	// not sent: the handler's transaction rolls back, the key becomes
	// FAILED_RETRYABLE, the client gets a 500 problem and Hooks.OnError
	// gets an error wrapping ErrResponseTooLarge. Zero means 1 MiB.
	MaxStoredResponseBytes int64
	// StoredHeaders are response headers stored and replayed in addition to
	// DefaultStoredHeaders. Cookies and credentials are never stored.
	StoredHeaders []string
	// Operations are validated by New (see Register).
	Operations []*Operation
	// Recover holds lease-mode recovery hooks by operation ID. When a request
	// takes over a stale claim (its holder died, or an earlier hook said
	// Unknown), or retries an attempt that failed after its handler ran (an
	// error, a panic or a 5xx: the handler may have acted outside the
	// database first), the hook decides before the handler runs again.
	// Without a hook the handler simply runs again.
	Recover map[string]RecoverFunc
	// Sealer, when set, encrypts what records store at rest: every stored
	// response (its status, headers and body, sealed together) and lease-mode
	// recovery data, each bound to its record (tenant, operation, key) as
	// additional data. Records written before a Sealer was set are still
	// read as they are. runtime/idemseal implements it (AES-256-GCM with
	// rotating keys); nil stores plaintext.
	Sealer Sealer
	// Errors, when set, renders every refusal (a missing or malformed key,
	// a reused key, a request in flight, an invalid request, refused
	// credentials, a 5xx) in the service's own error shape, instead of the
	// body of the operation's profile; the profile still chooses the status
	// and the retry signals. Generated code's refusals outside Serve go
	// through it too (Engine.WriteError). See docs/errors.md.
	Errors ErrorMapper
	// Shard, when set, chooses the database of each request by its tenant:
	// the one that holds the business rows the tenant's requests write. The
	// record is stored there, in the same transaction as those rows, and the
	// handler's tx is on it. It must always choose the same database for a
	// tenant, and return the same comparable value for it (a *pgxpool.Pool
	// opened once per shard): the record key (tenant, operation, key) is then
	// unique across all shards, since a tenant's keys live on one. An error
	// is the request's (a *Problem is sent as it is). Nil means the DB given
	// to New for every request; with Shard set, New accepts a nil DB. See
	// docs/scaling.md.
	Shard func(ctx context.Context, tenant string) (DB, error)
	// Region, when set, makes the engine serve one region of several whose
	// records replicate to each other (schema.SetupRegion, SubscribeRegion): every
	// keyed response names the key's home region (HomeRegionHeader), and a
	// key whose record replicated here from another region is refused with
	// 421 naming it, at the cost of one more read per keyed request. Nil:
	// one region, nothing of this runs. See docs/scaling.md.
	Region *Region
	// Cache, when set, is a fast path in front of PostgreSQL: replays are
	// answered from it, a first execution skips the read before its
	// transaction, and duplicates of a request in flight wait there for
	// its outcome. An atomic operation whose keys are new (first
	// executions, few replays or duplicates among them) does not ask it:
	// its first executions then cost what they cost without a cache, until
	// replays or duplicates come again (Outcome.Cache is "" for a request
	// that did not ask). PostgreSQL stays the authority: the cache only holds
	// outcomes PostgreSQL committed (sealed as stored), each bound to its
	// record and database and authenticated with the database's
	// idem_cache_secret (migration 0006), and whatever it does or holds,
	// requests are answered as without it (see Cache, docs/security.md).
	// runtime/idemredis implements it with Redis; nil: no cache.
	Cache Cache
	// CacheTTL is how long a committed outcome stays cached, never longer
	// than its record lives; zero means DefaultCacheTTL.
	CacheTTL time.Duration
	// DownstreamSecret keys the idempotency keys a handler derives for the
	// calls it makes to other idempotent APIs (runtime/downstream; the
	// generated client derives them by itself): at least 16 random bytes,
	// the same in every replica, unchanged while requests may be retried.
	// Nil derives under a public key (see package downstream).
	DownstreamSecret []byte
	// Hooks observe the engine.
	Hooks Hooks
	// Observers see each request and its phases from inside the engine
	// (trace spans, latency histograms); see Observer.
	Observers []Observer
	// Logger receives the engine's log lines: one per request, requests
	// that are not idempotent included (Engine.Plain) — Info, Warn for a
	// conflict, a lost lease or an unknown outcome, Error for an internal
	// error or a 5xx, with its cause — with the status and duration; one
	// per error the client does not see in full that no request's line
	// carries, when Hooks.OnError is nil; and the slow atomic handler hint
	// once per operation (SlowAtomicHandler). Each names the operation,
	// the outcome, the key's hash and the attempt; none holds a key, a
	// body or a header value. Nil means slog.Default().
	Logger *slog.Logger
}

// Hooks are optional observer callbacks. They run synchronously on the
// request's goroutine and must not block.
type Hooks struct {
	// OnOutcome is called once per Serve, after the response is written.
	OnOutcome func(ctx context.Context, op *Operation, o Outcome)
	// OnError receives errors the client does not see in full: 5xx causes,
	// failed bookkeeping statements, recovered panics. Nil logs them with
	// Config.Logger.
	OnError func(ctx context.Context, op *Operation, err error)
	// OnAudit is called for every replay of a stored response and every
	// refused reuse of a key (a conflict), after the response is written.
	OnAudit func(ctx context.Context, a Audit)
}

// Engine runs idempotent operations against PostgreSQL. It holds no state of
// its own beyond validated operations; it is safe for concurrent use.
type Engine struct {
	*shared
	// What is the engine's database's own: the DB, its statements, the
	// modes over them, the lease renewer with its connection, whether the
	// v2 table is still there (legacy.go), what cache entries are bound
	// to (cacheentry.go).
	db      DB
	q       statements
	modes   map[Mode]mode
	renewer *renewer
	legacy  atomic.Int32
	cacheID cacheIdent
}

// shared is what the engines made from one Config hold in common: New's,
// and those over the databases Config.Shard chooses (shard.go), since a
// key lives on one of them and its duplicates meet in one process.
type shared struct {
	cfg      Config
	obs      observer
	flights  *flights
	handoffs *handoffs
	stored   map[string]bool // response headers stored besides the declared ones
	ops      sync.Map        // *Operation -> *opState (check)
	headers  sync.Map        // stored headers JSON -> decoded (see storedHeaders)
	headerN  atomic.Int32
	shards   sync.Map // DB -> *Engine (see engineFor)
}

// newEngine returns the engine over db sharing sh: the one constructor,
// of New's engine and of each shard's.
func newEngine(db DB, sh *shared) *Engine {
	e := &Engine{shared: sh, db: db, q: statementsOn(db)}
	e.renewer = newRenewer(e)
	e.modes = map[Mode]mode{ModeAtomic: atomicMode{e}, ModeLease: leaseMode{e}}
	return e
}

// New returns an engine over db. It validates cfg.Operations; an invalid
// policy (a ttl outside 2h..24h, an unknown mode, ...) is an error here, at
// start-up, not on a request. It also asks db whether idemgen's migrations
// are applied: a database without them is an error wrapping
// ErrSchemaMissing that says to run schema.Migrate (a database that cannot be
// asked, because it is down, is logged and let through). With a Cache it
// reads the database's cache secret (a database that cannot be asked goes
// without the cache until a request can read it). A nil pointer in an
// interface (Cache, Sealer, an Observer, db) is an error naming the field.
func New(db DB, cfg Config) (*Engine, error) {
	if err := checkNotTypedNil(db, cfg); err != nil {
		return nil, err
	}
	if db == nil && cfg.Shard == nil {
		return nil, errors.New("idem: nil DB (and no Config.Shard)")
	}
	if cfg.Region != nil {
		r, err := cfg.Region.prepared()
		if err != nil {
			return nil, err
		}
		cfg.Region = r
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("idem: MaxBodyBytes %d is negative", cfg.MaxBodyBytes)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxStreamedBodyBytes < 0 {
		return nil, fmt.Errorf("idem: MaxStreamedBodyBytes %d is negative", cfg.MaxStreamedBodyBytes)
	}
	if cfg.MaxStreamedBodyBytes == 0 {
		cfg.MaxStreamedBodyBytes = DefaultMaxStreamedBodyBytes
	}
	if cfg.LockTimeout < 0 {
		return nil, fmt.Errorf("idem: LockTimeout %v is negative", cfg.LockTimeout)
	}
	if cfg.LockTimeout == 0 {
		cfg.LockTimeout = DefaultLockTimeout
	}
	if cfg.MaxHold < 0 {
		return nil, fmt.Errorf("idem: MaxHold %v is negative", cfg.MaxHold)
	}
	if cfg.MaxHold == 0 {
		cfg.MaxHold = DefaultMaxHold
	}
	if cfg.SlowAtomicHandler == 0 {
		cfg.SlowAtomicHandler = DefaultSlowAtomicHandler
	}
	if cfg.MaxStoredResponseBytes < 0 {
		return nil, fmt.Errorf("idem: MaxStoredResponseBytes %d is negative", cfg.MaxStoredResponseBytes)
	}
	if cfg.MaxStoredResponseBytes == 0 {
		cfg.MaxStoredResponseBytes = DefaultMaxStoredResponseBytes
	}
	if cfg.CacheTTL < 0 {
		return nil, fmt.Errorf("idem: CacheTTL %v is negative", cfg.CacheTTL)
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	var err error
	if cfg.DownstreamSecret, err = downstreamSecret(cfg.DownstreamSecret); err != nil {
		return nil, err
	}
	e := newEngine(db, &shared{cfg: cfg, obs: nopObserver{}, stored: map[string]bool{}, flights: newFlights(), handoffs: &handoffs{}})
	for _, h := range append(append([]string(nil), DefaultStoredHeaders...), cfg.StoredHeaders...) {
		h = http.CanonicalHeaderKey(h)
		if !neverStored[h] {
			e.stored[h] = true
		}
	}
	if len(cfg.Observers) > 0 {
		e.obs = observers(cfg.Observers)
	}
	if err := e.Register(cfg.Operations...); err != nil {
		return nil, err
	}
	if err := e.checkSchema(); err != nil {
		return nil, err
	}
	if err := e.prepareCache(); err != nil {
		return nil, err
	}
	return e, nil
}

// checkNotTypedNil refuses an interface argument or Config field that holds
// a nil pointer (a `var c *idemredis.Cache` never set): it is not nil to
// the engine, which would call its methods on every request and panic
// there. Nil (the interface itself) is what means "none".
func checkNotTypedNil(db DB, cfg Config) error {
	fields := []struct {
		name, instead string
		v             any
	}{
		{"the DB given to New", "pass a pool (or nil with Config.Shard)", db},
		{"Config.Cache", "leave the field nil for no cache", cfg.Cache},
		{"Config.Sealer", "leave the field nil to store responses unsealed", cfg.Sealer},
	}
	for _, f := range fields {
		if typedNil(f.v) {
			return fmt.Errorf("idem: %s is a nil %T: %s", f.name, f.v, f.instead)
		}
	}
	for i, o := range cfg.Observers {
		switch {
		case o == nil:
			return fmt.Errorf("idem: Config.Observers[%d] is nil: leave it out of the list", i)
		case typedNil(o):
			return fmt.Errorf("idem: Config.Observers[%d] is a nil %T: leave it out of the list", i, o)
		}
	}
	return nil
}

// typedNil reports whether v holds a nil pointer, map, slice, func or
// channel (an interface holding one is not nil).
func typedNil(v any) bool {
	if v == nil {
		return false
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
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
		e.ops.Store(op, newOpState(nil))
	}
	return errors.Join(errs...)
}

// opState is what the engine keeps of one operation, made when the
// operation is registered (New, Register) or first served: whether its
// policy is valid, and the guess of its atomic requests (guess.go). A
// request finds it with the one lookup check makes.
type opState struct {
	err   error // the policy's validation error; nil: valid
	guess readGuess
	// slowHinted: an atomic handler of the operation ran past
	// Config.SlowAtomicHandler, which was logged (hints.go).
	slowHinted atomic.Bool
}

func newOpState(err error) *opState {
	s := &opState{err: err}
	s.guess.found.Store(guessScale)
	return s
}

// check returns op's state, validating op on its first use when it was not
// registered; err is its validation error.
func (e *Engine) check(op *Operation) (*opState, error) {
	v, ok := e.ops.Load(op)
	if !ok {
		v, _ = e.ops.LoadOrStore(op, newOpState(op.Validate()))
	}
	s := v.(*opState)
	return s, s.err
}
