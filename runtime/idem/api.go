// The stable surface that generated code compiles against: changing an
// exported name here is a breaking change for generated code, so bump
// SupportPackageIsVersion instead of editing in place. The package's
// documentation is in doc.go.

package idem

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SupportPackageIsVersion3 is referenced by generated code
// (`const _ = idem.SupportPackageIsVersion3`). A runtime that drops it makes
// stale generated code fail to compile instead of misbehaving at run time.
// Version 2: the value types (Date, File, Nullable, OrEmpty) are in package
// idemtype. Version 3: problem+json (Problem, Violation, ValidationError)
// is in package idemproblem.
const SupportPackageIsVersion3 = true

// SupportPackageIsVersion1 and SupportPackageIsVersion2 are what code
// generated before version 3 references. They are not constants, so such
// code fails to compile with a message that says what to do:
//
//	idem.SupportPackageIsVersion2 (variable of struct type idem.regenerateThisPackageWithIdemgen) is not constant
//
// Deprecated: regenerate the package with the current idemgen.
var SupportPackageIsVersion1, SupportPackageIsVersion2 regenerateThisPackageWithIdemgen

// regenerateThisPackageWithIdemgen is named for the compiler's message about
// stale generated code (see SupportPackageIsVersion1).
type regenerateThisPackageWithIdemgen struct{}

// Mode selects how the record and the business writes share transactions.
type Mode string

const (
	// ModeAtomic inserts the IN_PROGRESS record in the same transaction as the
	// business writes; a crash leaves nothing behind.
	ModeAtomic Mode = "atomic"
	// ModeLease commits an IN_PROGRESS claim with a lease and a fencing token
	// first; for handlers that call the outside world.
	ModeLease Mode = "lease"
)

// InFlight says what a duplicate does while the first request still runs.
type InFlight string

const (
	InFlightReject InFlight = "reject" // 409 at once
	InFlightWait   InFlight = "wait"   // wait up to Policy.Wait, then replay or 409
)

// OnSchemaChange says what a replay does when the stored response schema
// version differs from the operation's current one.
type OnSchemaChange string

const (
	SchemaChangeReplay OnSchemaChange = "replay"
	SchemaChangeReject OnSchemaChange = "reject"
)

// OnExpired says what a request does whose key names an expired record.
type OnExpired string

const (
	ExpiredExecute OnExpired = "execute"
	ExpiredReject  OnExpired = "reject"
)

// Profile selects how a service refuses requests: the statuses, the retry
// signals, the body of its errors and how a quoted key is read (see
// ProblemFor, Profile.ErrorBody and docs/errors.md).
type Profile string

const (
	// ProfileDefault answers RFC 9457 application/problem+json with the
	// contract's code and reason members; a reused key with another payload
	// and a request in flight are 409.
	ProfileDefault Profile = "default"
	// ProfileIETF follows draft-ietf-httpapi-idempotency-key-header: 422 for a
	// reused key with another payload, 409 for a request in flight.
	ProfileIETF Profile = "ietf"
	// ProfileStripe answers as Stripe's API does, so that Stripe's SDKs
	// read every refusal as a typed error: {"error": {"type", "code",
	// "message", "param"}}, 400 idempotency_error for a key reused with
	// another payload, 429 lock_timeout (which the SDKs retry) for a request
	// in flight, Stripe-Should-Retry on every refusal; keys are taken as
	// sent, quotes included, and printable is the default key format.
	ProfileStripe Profile = "stripe"
)

// Policy is one operation's resolved x-idempotent policy. The zero value is
// not valid; start from DefaultPolicy.
type Policy struct {
	Header             string         // header carrying the key, e.g. "Idempotency-Key"
	Required           bool           // a missing key is a 400
	KeyFormat          KeyFormat      //
	TTL                time.Duration  // how long a key is remembered; 2h..24h
	Mode               Mode           //
	Lease              time.Duration  // lease mode: how long an IN_PROGRESS claim is honoured
	MaxHold            time.Duration  // lease mode: the longest one attempt holds its claim; zero: Config.MaxHold
	InFlight           InFlight       //
	Wait               time.Duration  // InFlightWait: how long a duplicate waits
	ReplayStatuses     []int          // non-2xx statuses that are final and replayed
	FingerprintExclude []string       // RFC 6901 JSON pointers left out of the body hash
	SchemaVersion      string         // version of the operation's response schemas
	OnSchemaChange     OnSchemaChange //
	OnExpired          OnExpired      //
	Profile            Profile        //
}

// Operation describes one idempotent operation. Generated code declares one
// per operation in its operation table; hand-written code builds its own.
type Operation struct {
	ID         string   // operationId, e.g. "createPayment"
	Method     string   // HTTP method, e.g. "POST"
	Pattern    string   // route template, e.g. "/payments/{id}/capture"
	PathParams []string // names of the path parameters, in template order
	Policy     Policy
	// ResponseHeaders are the response headers the operation declares, by
	// response status as the spec keys its responses: "201", "2XX" or
	// "default". A stored response keeps them, besides the engine's
	// allowlist (DefaultStoredHeaders, Config.StoredHeaders), and a replay
	// sends them as the first response had them. The most specific key
	// present applies (an exact status, then its range, then "default"), so
	// an entry with no names stops a range or "default" from applying.
	// Cookies and credentials are never stored, even when declared.
	// Generated code fills it in from the spec.
	ResponseHeaders map[string][]string
	// CheckKey, when set, checks the key the engine parsed (Policy.ParseKey:
	// normalised, UUIDs lower-cased) against what the operation declares
	// of its key beyond Policy.KeyFormat: generated code sets it when the
	// spec's key header parameter has a pattern, an enum or a length the
	// key format does not imply, or is required while the policy's key is
	// optional. It is called once per request, after the key is parsed and
	// before the body is read, with "" when the request has no key; an
	// error is a client error (a *idemproblem.ValidationError naming the
	// header is a 400 problem+json) and leaves no record. The key is parsed
	// once: the check reads the engine's value, not the header.
	CheckKey func(key string) error
}

// Response is what a handler produced: it is written to the client and, for
// outcomes that are kept, stored and replayed byte for byte.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Handler runs the operation's business logic. Its writes must go through tx,
// which also stores the idempotency record, so both commit or neither does.
//
// In atomic mode ctx is the request's: a client that goes away cancels the
// handler and its transaction rolls back. In lease mode it is not cancelled
// when the client goes away, only when the lease is lost (context.Cause is
// then ErrLeaseLost), so that an external effect is not cut off from its
// record.
type Handler func(ctx context.Context, tx pgx.Tx) (*Response, error)

// PrepareFunc decodes and validates a request whose body the engine has
// already read (bounded by Config.MaxBodyBytes). It returns the Handler to
// run and the canonical form of the request, which is what the engine
// fingerprints. An error is a client error and no idempotency record is
// written: a *ValidationError or *RequestError is a 400 problem+json, an
// error wrapping ErrUnsupportedMediaType a 415, a *Problem itself.
//
// This is the seam between the engine and generated code: the engine owns
// the key, the record and Content-Digest (over the raw body); prepare owns
// what the request means.
type PrepareFunc func(body []byte) (Prepared, error)

// Prepared is a decoded and validated request, ready to run.
type Prepared struct {
	// Handler runs the operation; it must not be nil.
	Handler Handler
	// Canonical is an encoding of everything Handler acts on — declared
	// parameters, the body's media type and the decoded body — with the
	// policy's fingerprint exclusions left out. Requests with equal
	// Canonical bytes must be the same request to Handler. The fingerprint
	// is SHA-256 over the operation's method, route pattern and Canonical
	// (FingerprintCanonical). Generated code builds it with package
	// idemimpl.
	//
	// When Canonical is nil the engine fingerprints the raw request instead
	// (Fingerprint: method, route, path parameters, query, media type and
	// the RFC 8785 form of a JSON body, without headers or cookies), which
	// suits hand-written handlers that read nothing else.
	Canonical []byte
}

// DB is what the engine needs from PostgreSQL; *pgxpool.Pool and *pgx.Conn
// satisfy it. Transactions are begun READ COMMITTED whatever the server's
// default, because a duplicate must see the first request's committed record.
type DB interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ScopeFunc returns the tenant a request belongs to. Records are keyed
// (tenant, operation, key), so one tenant never sees another's records.
type ScopeFunc func(r *http.Request) (string, error)

// RequestError is a request validation error: which part of the request was
// wrong (`query parameter "limit"`, `body`, `header "X-Trace"`) and why. It
// maps to 400 problem+json and never leaves an idempotency record.
type RequestError struct {
	Where string
	Err   error
}

func (e *RequestError) Error() string { return e.Where + ": " + e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// InvalidRequest wraps err as a *RequestError naming where it was found.
func InvalidRequest(where string, err error) error { return &RequestError{Where: where, Err: err} }

// Key identifies an idempotent request: the record key.
type Key struct {
	Tenant    string
	Operation string
	Value     string // the idempotency key, normalised (UUIDs lower-cased)
	// Since is when the record this execution runs under was created. It is
	// the same for every retry and takeover of one execution, and new when
	// an expired key runs again (onExpired: execute), so identifiers derived
	// from the key (outbox event ids) differ between the two executions.
	// Zero outside the engine, or when an optional key was absent.
	Since time.Time
}

type keyCtx struct{}

// KeyFromContext returns the key of the idempotent request being served, so
// handlers and outbox events pick it up without plumbing.
func KeyFromContext(ctx context.Context) (Key, bool) {
	k, ok := ctx.Value(keyCtx{}).(Key)
	return k, ok
}

// ContextWithKey returns ctx carrying k; the engine calls it before running a
// handler. Exposed for tests and for consumers that re-establish a key.
func ContextWithKey(ctx context.Context, k Key) context.Context {
	return context.WithValue(ctx, keyCtx{}, k)
}
