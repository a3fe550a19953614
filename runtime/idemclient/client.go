// Package idemclient is the runtime of the clients idemgen generates: it
// sends one call's request, retries it only where the idempotency contract
// makes a retry safe, and turns what comes back into a declared response or
// a typed error.
//
// An idempotent operation gets one key per call: the caller's
// (WithIdempotencyKey, or the key parameter the spec declares); else, when
// the context carries an idempotent request (a handler of an idemgen
// service calling another service), one derived from that request and the
// call site (the operation's ID, or WithKeySite), the same on every attempt
// of the request (package runtime/downstream); else a fresh one (a UUIDv7,
// or a UUIDv4 where the operation's keyFormat is uuidv4).
// Every attempt of the call sends that key and the same body bytes, so the
// server runs the call at most once and replays its outcome to the others.
//
// A call is retried after a transport error, a 5xx other than 501 and 505
// (the contract keeps no record of them: the same request may run again),
// 408, 429, and a 409 IDEMPOTENT_REQUEST_IN_PROGRESS or
// IDEMPOTENCY_LEASE_LOST — honouring Retry-After, else with exponential
// backoff and jitter — until it succeeds, the attempts run out, or the next
// wait would pass the context's deadline. It is never retried after a 409
// CONFLICTING_IDEMPOTENT_REQUEST or any other 4xx: those need another
// request. An operation that is not idempotent (a POST or PATCH opted out
// with `x-idempotent: false`) has no key, and its calls are retried only
// when the caller says so (WithRetryUnsafe); GET, HEAD, PUT, DELETE and
// OPTIONS are idempotent by HTTP's definition and retried.
package idemclient

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Client holds what every call of a generated client shares: the base URL,
// the http.Client and the retry policy. It is safe for concurrent use.
type Client struct {
	root    string // the base URL, escaped, without a trailing slash
	http    *http.Client
	retry   RetryPolicy
	newKey  func(format string) (string, error)
	editors []func(*http.Request) error
	agent   string
	base    string   // the server's base path, added to root unless root ends in it
	regions *regions // nil: one region (WithRegions)
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests with hc instead of http.DefaultClient. Its
// Timeout, when set, bounds each attempt; bound the whole call with the
// context.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithRetryPolicy replaces DefaultRetryPolicy.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithKeyGenerator mints the keys of calls that are not given one. format
// is the operation's keyFormat (uuid, uuidv4, uuidv7 or opaque); the key
// must satisfy it.
func WithKeyGenerator(gen func(format string) (string, error)) Option {
	return func(c *Client) { c.newKey = gen }
}

// WithRequestEditor is called on every attempt's request before it is sent
// (credentials, tracing headers). An error ends the call.
func WithRequestEditor(edit func(*http.Request) error) Option {
	return func(c *Client) { c.editors = append(c.editors, edit) }
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option { return func(c *Client) { c.agent = ua } }

// WithBasePath sets the path under which the server serves its routes
// ("/v1"); generated clients pass the base path they were generated with,
// and a caller whose server runs under another one passes it after (""
// for none). It is added to the base URL unless the base URL's path already
// ends in it, so both https://api.example.com and the spec's server URL
// https://api.example.com/v1 reach /v1/payments.
func WithBasePath(p string) Option {
	return func(c *Client) { c.base = strings.TrimSuffix(p, "/") }
}

// New returns a Client for the service at baseURL (http://host:8080, or
// https://host/prefix: the base path, see WithBasePath, and operation paths
// are appended).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("idemclient: base URL %q: want http(s)://host[:port][/prefix]", baseURL)
	}
	u.RawQuery, u.Fragment = "", ""
	c := &Client{root: strings.TrimSuffix(u.String(), "/"), http: http.DefaultClient, retry: DefaultRetryPolicy(), newKey: NewKey, agent: "idemgen-client"}
	for _, opt := range opts {
		opt(c)
	}
	if c.base != "" && !strings.HasSuffix(strings.TrimSuffix(u.EscapedPath(), "/"), c.base) {
		c.root += c.base
	}
	if c.regions != nil {
		if err := c.regions.resolve(c.base); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// NewKey mints a key of the given keyFormat: a UUIDv4 for uuidv4, a UUIDv7
// for uuid (or ""), uuidv7, opaque and printable (time-ordered, which
// keeps the server's index local). A format it does not know is an error,
// not a key the server may refuse.
func NewKey(format string) (string, error) {
	switch format {
	case "uuidv4":
		u, err := uuid.NewRandom()
		return u.String(), err
	case "", "uuid", "uuidv7", "opaque", "printable":
		u, err := uuid.NewV7()
		return u.String(), err
	}
	return "", fmt.Errorf("idemclient: unknown key format %q", format)
}

// RetryPolicy bounds a call's retries. The context bounds the whole call:
// no attempt starts, and no wait begins, that its deadline would cut short.
type RetryPolicy struct {
	// MaxAttempts is the most attempts a call makes, the first included;
	// 1 disables retries. Zero means 10.
	MaxAttempts int
	// InitialBackoff is the wait before the first retry when the server
	// sends no Retry-After; it doubles per attempt up to MaxBackoff, with
	// jitter (a random half of it). Zero means 100ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the backoff; zero means 5s.
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; a
	// longer one ends the call with the response. Zero means 60s.
	MaxRetryAfter time.Duration
	// AttemptTimeout bounds each attempt (a server that hangs mid-request);
	// zero means no bound other than the context and the http.Client's.
	AttemptTimeout time.Duration
}

// DefaultRetryPolicy is 10 attempts, backoff 100ms doubling to 5s, and
// Retry-After honoured up to 60s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 10, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second, MaxRetryAfter: 60 * time.Second}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = d.InitialBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = d.MaxBackoff
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = d.MaxRetryAfter
	}
	return p
}

// CallOption configures one call.
type CallOption func(*call)

type call struct {
	key      string
	site     string // WithKeySite
	unsafe   bool
	attempts int
	timeout  time.Duration
	header   http.Header
	observe  func(Attempt)
	region   string // where the next attempt goes (WithRegions)
}

// WithIdempotencyKey sends key instead of a derived or fresh one: use it to carry one
// intent across processes (store the key with the intent, pass it again
// after a restart). It must satisfy the operation's keyFormat.
func WithIdempotencyKey(key string) CallOption { return func(c *call) { c.key = key } }

// WithRetryUnsafe lets a call of an operation that is not idempotent be
// retried like an idempotent one. The server may then run it more than once.
func WithRetryUnsafe() CallOption { return func(c *call) { c.unsafe = true } }

// WithMaxAttempts overrides the policy's MaxAttempts for one call; 1
// disables retries.
func WithMaxAttempts(n int) CallOption { return func(c *call) { c.attempts = n } }

// WithAttemptTimeout overrides the policy's AttemptTimeout for one call.
func WithAttemptTimeout(d time.Duration) CallOption { return func(c *call) { c.timeout = d } }

// WithHeader adds a header to every attempt of one call.
func WithHeader(name, value string) CallOption {
	return func(c *call) {
		if c.header == nil {
			c.header = http.Header{}
		}
		c.header.Add(name, value)
	}
}

// WithAttemptObserver is called after every attempt of one call (logging,
// metrics, tests).
func WithAttemptObserver(fn func(Attempt)) CallOption { return func(c *call) { c.observe = fn } }

// Attempt describes one attempt of a call.
type Attempt struct {
	Operation string
	Key       string
	N         int           // 1 for the first
	Status    int           // 0 after a transport error
	Err       error         // the transport error
	Retry     bool          // another attempt follows
	Wait      time.Duration // before it
}

// Operation describes one operation of the spec; generated code declares
// one per operation.
type Operation struct {
	ID     string // operationId
	Method string
	// Idempotent: the server runs the operation through its idempotency
	// engine, so every call carries a key in KeyHeader, in KeyFormat.
	Idempotent bool
	KeyHeader  string
	KeyFormat  string
}

// Request is one call's request, built by generated code. Body and
// ContentType are sent unchanged on every attempt.
type Request struct {
	Path        string // escaped, from the root of the API: /payments/pay_1/refunds
	Query       url.Values
	Header      http.Header
	Body        []byte // nil: no body
	ContentType string
	// Key is the key the request's own parameters carry (a spec that
	// declares the key header as a parameter); "" when it has none.
	Key string
}

// NewRequest returns a Request for path.
func NewRequest(path string) *Request {
	return &Request{Path: path, Query: url.Values{}, Header: http.Header{}}
}

// Response is the final attempt's response, handed to the generated
// decoder.
type Response struct {
	Operation string
	Status    int
	Header    http.Header
	Body      []byte
	Key       string
	// KeySite is the call site the key was derived for (WithKeySite);
	// "" when it was given or minted.
	KeySite  string
	Attempts int
}

// Result is a call's declared response and what happened on the way.
type Result[T any] struct {
	// Response is the declared response, one of the operation's response
	// types.
	Response T
	Status   int
	Header   http.Header
	// Key is the idempotency key every attempt carried ("" for an
	// operation that is not idempotent).
	Key string
	// KeySite is the call site Key was derived for, in a call made inside
	// an idempotent request (WithKeySite; the operation's ID by default);
	// "" when the key was given or minted for the call.
	KeySite string
	// Attempts is how many requests the call sent.
	Attempts int
	// Replayed is set when the server answered with the stored outcome of an
	// earlier attempt (Idempotent-Replayed: true) instead of running it.
	Replayed bool
	// HomeRegion is the region the key belongs to, as the server named it
	// (Idempotency-Home-Region); "" when it named none. Keep it with a key
	// you carry to a later call (WithHomeRegion).
	HomeRegion string
}

// ErrNoBaseURL is returned by calls on a zero Client.
var ErrNoBaseURL = errors.New("idemclient: the client has no base URL (use New)")

// SupportPackageIsVersion1 is referenced by generated clients; a runtime
// that drops it makes a stale generated client fail to compile.
const SupportPackageIsVersion1 = true
