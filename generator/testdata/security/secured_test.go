package secured

// This file is copied next to the package generated from
// ../golden/security/openapi.yaml (the golden case) and
// run by generator.TestSecurityHooks: over real HTTP, against a real
// PostgreSQL (DATABASE_URL).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemclient"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// user is the service's principal type.
type user struct {
	Name   string
	Scopes []string
	Via    string // the scheme that authenticated it
}

var (
	alice = &user{Name: "alice", Scopes: []string{"orders:write"}}
	bob   = &user{Name: "bob"}
)

// auth implements Security and records every call.
type auth struct {
	mu    sync.Mutex
	calls []string // "scheme:credential:scopes"
}

func (a *auth) note(scheme, cred string, scopes []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, scheme+":"+cred+":"+strings.Join(scopes, ","))
}

func (a *auth) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.calls)
}

var errBadCredentials = errors.New("unknown credentials")

func via(u *user, scheme string) *user {
	c := *u
	c.Via = scheme
	return &c
}

func (a *auth) byToken(scheme, token string, scopes []string) (Principal, error) {
	a.note(scheme, token, scopes)
	var u *user
	switch token {
	case "tok-alice":
		u = alice
	case "tok-bob":
		u = bob
	case "tok-nobody":
		return u, nil // a lookup that found no one: a nil *user, no error
	case "tok-forbidden":
		return nil, fmt.Errorf("%w: account suspended", idem.ErrForbidden)
	default:
		return nil, fmt.Errorf("%w: token %s", errBadCredentials, token) // never sent to the client
	}
	for _, s := range scopes {
		if !slices.Contains(u.Scopes, s) {
			return nil, fmt.Errorf("%w: %s lacks scope %s", idem.ErrForbidden, u.Name, s)
		}
	}
	return via(u, scheme), nil
}

func (a *auth) byKey(scheme, key string, scopes []string) (Principal, error) {
	a.note(scheme, key, scopes)
	switch key {
	case "key-alice", "key-alice-2":
		return via(alice, scheme), nil
	case "key-bob":
		return via(bob, scheme), nil
	case "key-nobody":
		return nil, nil
	}
	return nil, errBadCredentials
}

func (a *auth) BearerAuth(_ context.Context, token string, scopes []string) (Principal, error) {
	return a.byToken("bearerAuth", token, scopes)
}
func (a *auth) Oauth(_ context.Context, token string, scopes []string) (Principal, error) {
	return a.byToken("oauth", token, scopes)
}
func (a *auth) Oidc(_ context.Context, token string, scopes []string) (Principal, error) {
	return a.byToken("oidc", token, scopes)
}
func (a *auth) APIKeyHeader(_ context.Context, key string, scopes []string) (Principal, error) {
	return a.byKey("apiKeyHeader", key, scopes)
}
func (a *auth) APIKeyQuery(_ context.Context, key string, scopes []string) (Principal, error) {
	return a.byKey("apiKeyQuery", key, scopes)
}
func (a *auth) APIKeyCookie(_ context.Context, key string, scopes []string) (Principal, error) {
	return a.byKey("apiKeyCookie", key, scopes)
}
func (a *auth) BasicAuth(_ context.Context, username, password string, scopes []string) (Principal, error) {
	a.note("basicAuth", username+"/"+password, scopes)
	if username == "alice" && password == "s3cret:with colon" {
		return via(alice, "basicAuth"), nil
	}
	return nil, errBadCredentials
}

// srv answers every operation with the principal the handler sees, the item
// and how many times a handler ran.
type srv struct {
	Unimplemented
	mu   sync.Mutex
	runs int
}

func (s *srv) result(ctx context.Context, item string) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs++
	who := "anonymous"
	if u, ok := idem.PrincipalAs[*user](ctx); ok {
		who = u.Name + "@" + u.Via
	} else if p, ok := idem.PrincipalFromContext(ctx); ok {
		who = fmt.Sprintf("%T", p)
	}
	return Result{Principal: who, Item: item, Run: int64(s.runs)}
}

func (s *srv) Runs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs
}

func (s *srv) CreateOrder(ctx context.Context, _ pgx.Tx, req CreateOrderRequest) (CreateOrderResponse, error) {
	return CreateOrder201Response{Body: s.result(ctx, req.Body.Item)}, nil
}
func (s *srv) ListOrders(ctx context.Context, _ ListOrdersRequest) (ListOrdersResponse, error) {
	return ListOrders200Response{Body: s.result(ctx, "")}, nil
}
func (s *srv) HeaderKey(ctx context.Context, _ pgx.Tx, req HeaderKeyRequest) (HeaderKeyResponse, error) {
	return HeaderKey201Response{Body: s.result(ctx, req.Body.Item)}, nil
}
func (s *srv) QueryKey(ctx context.Context, _ pgx.Tx, req QueryKeyRequest) (QueryKeyResponse, error) {
	return QueryKey201Response{Body: s.result(ctx, req.Body.Item)}, nil
}
func (s *srv) CookieKey(ctx context.Context, _ pgx.Tx, req CookieKeyRequest) (CookieKeyResponse, error) {
	return CookieKey201Response{Body: s.result(ctx, req.Body.Item)}, nil
}
func (s *srv) Basic(ctx context.Context, _ pgx.Tx, req BasicRequest) (BasicResponse, error) {
	return Basic201Response{Body: s.result(ctx, req.Body.Item)}, nil
}
func (s *srv) Scoped(ctx context.Context, _ pgx.Tx, req ScopedRequest) (ScopedResponse, error) {
	return Scoped201Response{Body: s.result(ctx, req.Body.Item)}, nil
}
func (s *srv) Oidc(ctx context.Context, _ pgx.Tx, req OidcRequest) (OidcResponse, error) {
	return Oidc201Response{Body: s.result(ctx, req.Body.Item)}, nil
}
func (s *srv) AndOr(ctx context.Context, _ pgx.Tx, req AndOrRequest) (AndOrResponse, error) {
	return AndOr201Response{Body: s.result(ctx, req.Body.Item)}, nil
}
func (s *srv) Optional(ctx context.Context, _ pgx.Tx, req OptionalRequest) (OptionalResponse, error) {
	return Optional201Response{Body: s.result(ctx, req.Body.Item)}, nil
}
func (s *srv) Public(ctx context.Context, _ pgx.Tx, req PublicRequest) (PublicResponse, error) {
	return Public201Response{Body: s.result(ctx, req.Body.Item)}, nil
}
func (s *srv) UndefinedScheme(ctx context.Context, _ pgx.Tx, req UndefinedSchemeRequest) (UndefinedSchemeResponse, error) {
	return UndefinedScheme201Response{Body: s.result(ctx, req.Body.Item)}, nil
}

type env struct {
	t    *testing.T
	db   *pgtest.DB
	url  string
	srv  *srv
	auth *auth
	keys int
}

func newEnv(t *testing.T, cfg idem.Config) *env {
	db := pgtest.New(t, pgtest.Options{})
	cfg.Operations = IdempotentOperations
	engine, err := idem.New(db.Pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, srv: &srv{}, auth: &auth{}}
	hs := httptest.NewServer(NewHandler(e.srv, engine, WithSecurity(e.auth)))
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

// key returns a fresh idempotency key.
func (e *env) key() string {
	e.keys++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", e.keys)
}

type answer struct {
	status int
	header http.Header
	body   string
	result Result
	prob   idemproblem.Problem
}

// send posts {"item": item} to path with the key and the given headers
// ("Name: value", or "Cookie: session=...").
func (e *env) send(method, path, key, item string, headers ...string) answer {
	e.t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"item":"` + item + `"}`)
	}
	req, err := http.NewRequest(method, e.url+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Add(name, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		_ = json.Unmarshal(b, &a.prob)
	} else {
		_ = json.Unmarshal(b, &a.result)
	}
	return a
}

func (e *env) records() int {
	e.t.Helper()
	var n int
	if err := e.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM idem_records").Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) tenants() []string {
	e.t.Helper()
	rows, err := e.db.Pool.Query(context.Background(), "SELECT tenant FROM idem_records ORDER BY tenant")
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// refused checks a refusal: status, problem reason, WWW-Authenticate, and
// that neither a handler ran nor a record was written.
func (e *env) refused(what string, a answer, status int, reason string, challenge ...string) {
	e.t.Helper()
	if a.status != status || a.prob.Reason != reason {
		e.t.Errorf("%s: %d %s; want %d %s", what, a.status, a.body, status, reason)
	}
	if got := a.header.Values("WWW-Authenticate"); !slices.Equal(got, challenge) {
		e.t.Errorf("%s: WWW-Authenticate %q; want %q", what, got, challenge)
	}
	for _, secret := range []string{"tok-", "key-", "s3cret", "account suspended", "unknown credentials"} {
		if strings.Contains(a.body, secret) {
			e.t.Errorf("%s: the problem tells %q: %s", what, secret, a.body)
		}
	}
	if n := e.records(); n != 0 {
		e.t.Errorf("%s: %d idempotency records; want none", what, n)
	}
	if n := e.srv.Runs(); n != 0 {
		e.t.Errorf("%s: the handler ran %d times", what, n)
	}
}

func (e *env) admitted(what string, a answer, principal string) {
	e.t.Helper()
	if a.status != 201 && a.status != 200 || a.result.Principal != principal {
		e.t.Errorf("%s: %d %s; want a success seen by %s", what, a.status, a.body, principal)
	}
}

func basic(user, pass string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

const basicChallenge = `Basic realm="Secured \"orders\"", charset="UTF-8"`

// Requests without credentials, with unknown ones, with forbidden ones and
// with malformed ones are refused before the engine: no handler runs and no
// record is written, for every kind of scheme.
func TestRefusedWithoutRecord(t *testing.T) {
	e := newEnv(t, idem.Config{})
	cases := []struct {
		what, method, path string
		headers            []string
		status             int
		reason             string
		challenge          []string
	}{
		{"bearer missing", "POST", "/orders", nil, 401, "UNAUTHENTICATED", []string{"Bearer"}},
		{"bearer on a GET, missing", "GET", "/orders", nil, 401, "UNAUTHENTICATED", []string{"Bearer"}},
		{"bearer unknown", "POST", "/orders", []string{"Authorization: Bearer tok-mallory"}, 401, "UNAUTHENTICATED", []string{`Bearer error="invalid_token"`}},
		{"bearer forbidden", "POST", "/orders", []string{"Authorization: Bearer tok-forbidden"}, 403, "FORBIDDEN", []string{`Bearer error="insufficient_scope"`}},
		{"bearer empty", "POST", "/orders", []string{"Authorization: Bearer "}, 401, "UNAUTHENTICATED", []string{`Bearer error="invalid_token"`}},
		{"basic sent to bearer", "POST", "/orders", []string{basic("alice", "s3cret:with colon")}, 401, "UNAUTHENTICATED", []string{"Bearer"}},
		{"Authorization twice", "POST", "/orders", []string{"Authorization: Bearer tok-alice", "Authorization: Bearer tok-bob"}, 401, "UNAUTHENTICATED", []string{`Bearer error="invalid_token"`}},
		{"header key missing", "POST", "/header-key", nil, 401, "UNAUTHENTICATED", nil},
		{"header key unknown", "POST", "/header-key", []string{"X-API-Key: key-mallory"}, 401, "UNAUTHENTICATED", nil},
		{"header key in the query", "POST", "/header-key?X-API-Key=key-alice", nil, 401, "UNAUTHENTICATED", nil},
		{"query key missing", "POST", "/query-key", nil, 401, "UNAUTHENTICATED", nil},
		{"query key unknown", "POST", "/query-key?api_key=key-mallory", nil, 401, "UNAUTHENTICATED", nil},
		{"query key in a header", "POST", "/query-key", []string{"api_key: key-alice"}, 401, "UNAUTHENTICATED", nil},
		{"cookie key missing", "POST", "/cookie-key", nil, 401, "UNAUTHENTICATED", nil},
		{"cookie key unknown", "POST", "/cookie-key", []string{"Cookie: session=key-mallory"}, 401, "UNAUTHENTICATED", nil},
		{"basic missing", "POST", "/basic", nil, 401, "UNAUTHENTICATED", []string{basicChallenge}},
		{"basic wrong password", "POST", "/basic", []string{basic("alice", "guess")}, 401, "UNAUTHENTICATED", []string{basicChallenge}},
		{"basic not base64", "POST", "/basic", []string{"Authorization: Basic !!!"}, 401, "UNAUTHENTICATED", []string{basicChallenge}},
		{"basic without colon", "POST", "/basic", []string{"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("alice"))}, 401, "UNAUTHENTICATED", []string{basicChallenge}},
		{"oauth without the scope", "POST", "/scoped", []string{"Authorization: Bearer tok-bob"}, 403, "FORBIDDEN", []string{`Bearer error="insufficient_scope", scope="orders:write"`}},
		{"oidc without the role", "POST", "/oidc", []string{"Authorization: Bearer tok-alice"}, 403, "FORBIDDEN", []string{`Bearer error="insufficient_scope", scope="admin"`}},
		{"and: key only", "POST", "/and-or", []string{"X-API-Key: key-alice"}, 401, "UNAUTHENTICATED", []string{"Bearer", basicChallenge}},
		{"and: bearer only", "POST", "/and-or", []string{"Authorization: Bearer tok-alice"}, 401, "UNAUTHENTICATED", []string{"Bearer", basicChallenge}},
		{"and: a wrong key", "POST", "/and-or", []string{"X-API-Key: key-mallory", "Authorization: Bearer tok-alice"}, 401, "UNAUTHENTICATED", []string{`Bearer error="invalid_token"`, basicChallenge}},
		{"optional: a wrong token", "POST", "/optional", []string{"Authorization: Bearer tok-mallory"}, 401, "UNAUTHENTICATED", []string{`Bearer error="invalid_token"`}},
		{"undefined scheme", "POST", "/undefined", []string{"Authorization: Bearer tok-alice"}, 401, "UNAUTHENTICATED", nil},
	}
	for _, tc := range cases {
		e.refused(tc.what, e.send(tc.method, tc.path, e.key(), "x", tc.headers...), tc.status, tc.reason, tc.challenge...)
	}
	// No hook ran for a request without credentials or with malformed ones.
	for _, c := range e.auth.Calls() {
		if strings.HasPrefix(c, "bearerAuth::") || strings.HasPrefix(c, "basicAuth:") && !strings.Contains(c, "alice/") {
			t.Errorf("a hook ran without a credential: %s", c)
		}
	}
}

// Each scheme admits its credential, from where the scheme says, and the
// handler sees the principal its hook returned.
func TestAdmitted(t *testing.T) {
	e := newEnv(t, idem.Config{})
	e.admitted("bearer", e.send("POST", "/orders", e.key(), "a", "Authorization: Bearer tok-alice"), "alice@bearerAuth")
	e.admitted("bearer, lower-case scheme", e.send("POST", "/orders", e.key(), "a", "Authorization: bearer tok-bob"), "bob@bearerAuth")
	e.admitted("bearer on a GET", e.send("GET", "/orders", "", "", "Authorization: Bearer tok-bob"), "bob@bearerAuth")
	e.admitted("header key", e.send("POST", "/header-key", e.key(), "a", "X-API-Key: key-alice"), "alice@apiKeyHeader")
	e.admitted("query key", e.send("POST", "/query-key?api_key=key-bob", e.key(), "a"), "bob@apiKeyQuery")
	e.admitted("cookie key", e.send("POST", "/cookie-key", e.key(), "a", "Cookie: theme=dark; session=key-alice"), "alice@apiKeyCookie")
	e.admitted("basic", e.send("POST", "/basic", e.key(), "a", basic("alice", "s3cret:with colon")), "alice@basicAuth")
	e.admitted("oauth with the scope", e.send("POST", "/scoped", e.key(), "a", "Authorization: Bearer tok-alice"), "alice@oauth")
	e.admitted("and: key and bearer", e.send("POST", "/and-or", e.key(), "a", "X-API-Key: key-bob", "Authorization: Bearer tok-alice"), "alice@bearerAuth")
	e.admitted("or: basic", e.send("POST", "/and-or", e.key(), "a", basic("alice", "s3cret:with colon")), "alice@basicAuth")
	e.admitted("optional: anonymous", e.send("POST", "/optional", e.key(), "a"), "anonymous")
	e.admitted("optional: a token", e.send("POST", "/optional", e.key(), "a", "Authorization: Bearer tok-bob"), "bob@bearerAuth")
	e.admitted("security: []", e.send("POST", "/public", e.key(), "a", "Authorization: Bearer tok-mallory"), "anonymous")
	if n := e.records(); n != 12 {
		t.Errorf("%d records; want one per idempotent request (12)", n)
	}
	calls := e.auth.Calls()
	for _, want := range []string{"oauth:tok-alice:orders:write", "apiKeyHeader:key-bob:", "bearerAuth:tok-alice:"} {
		if !slices.Contains(calls, want) {
			t.Errorf("hook calls %q lack %q", calls, want)
		}
	}
	for _, c := range calls {
		if strings.Contains(c, "mallory") {
			t.Errorf("a hook ran for security: []: %s", c)
		}
	}
}

// With idem.PrincipalScope the principal is the tenant of the key: the
// same key and request from two principals are two executions, and each
// replays only its own.
func TestPrincipalScopesTheKey(t *testing.T) {
	var logs lockedBuffer
	var mu sync.Mutex
	var audits []idem.Audit
	e := newEnv(t, idem.Config{
		Scope:  idem.PrincipalScope(func(u *user) string { return "user:" + u.Name }),
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Hooks: idem.Hooks{OnAudit: func(_ context.Context, a idem.Audit) {
			mu.Lock()
			defer mu.Unlock()
			audits = append(audits, a)
		}},
	})
	defer func() {
		// What the engine logs and audits names the tenant, never a credential.
		mu.Lock()
		text := logs.String() + fmt.Sprintf("%+v", audits)
		mu.Unlock()
		if !strings.Contains(logs.String(), `"tenant":"user:alice"`) || len(audits) == 0 {
			t.Errorf("the engine logged or audited nothing about alice's keys: %s", text)
		}
		if strings.Contains(text, "tok-") {
			t.Errorf("a credential reached the engine's logs or audit: %s", text)
		}
	}()
	key := e.key()
	a1 := e.send("POST", "/orders", key, "book", "Authorization: Bearer tok-alice")
	b1 := e.send("POST", "/orders", key, "book", "Authorization: Bearer tok-bob")
	a2 := e.send("POST", "/orders", key, "book", "Authorization: Bearer tok-alice")
	b2 := e.send("POST", "/orders", key, "book", "Authorization: Bearer tok-bob")
	e.admitted("alice", a1, "alice@bearerAuth")
	e.admitted("bob, alice's key", b1, "bob@bearerAuth")
	if a1.result.Run == b1.result.Run {
		t.Errorf("bob got alice's execution: %s / %s", a1.body, b1.body)
	}
	for _, r := range []struct {
		first, again answer
	}{{a1, a2}, {b1, b2}} {
		if r.again.body != r.first.body || r.again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry: %s (replayed %q); want the replay of %s", r.again.body, r.again.header.Get("Idempotent-Replayed"), r.first.body)
		}
	}
	if got := e.tenants(); !slices.Equal(got, []string{"user:alice", "user:bob"}) {
		t.Errorf("tenants of the records: %q", got)
	}
	// Each replay is audited under its principal's tenant, with the hash of
	// the key in that tenant.
	mu.Lock()
	var replays []string
	for _, a := range audits {
		if a.Kind == idem.AuditReplay {
			replays = append(replays, a.Tenant)
			if want := (idem.Key{Tenant: a.Tenant, Operation: "createOrder", Value: key}).Hash(); a.KeyHash != want || a.Operation != "createOrder" {
				t.Errorf("audit %+v: want key hash %s", a, want)
			}
		}
	}
	mu.Unlock()
	if !slices.Equal(replays, []string{"user:alice", "user:bob"}) {
		t.Errorf("tenants of the replay audits: %q, want alice's then bob's", replays)
	}
	// An anonymous request has the empty tenant.
	e.admitted("anonymous", e.send("POST", "/optional", e.key(), "book"), "anonymous")
	if got := e.tenants(); !slices.Equal(got, []string{"", "user:alice", "user:bob"}) {
		t.Errorf("tenants of the records: %q", got)
	}
}

// A hook that accepts a credential without a principal (nil, or a nil
// pointer, and no error) admits nothing: 401, no record, no handler, and an
// error logged naming the schemes. Under idem.PrincipalScope it would
// otherwise be a 500 (the principal is no *user), or, taken as anonymous,
// share the anonymous tenant's keys.
func TestNoPrincipalRefused(t *testing.T) {
	var logs lockedBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))
	defer slog.SetDefault(prev)
	e := newEnv(t, idem.Config{Scope: idem.PrincipalScope(func(u *user) string { return "user:" + u.Name })})
	for _, tc := range []struct {
		what, path string
		headers    []string
		challenge  []string
		scheme     string
	}{
		{"bearer, a nil *user", "/orders", []string{"Authorization: Bearer tok-nobody"}, []string{`Bearer error="invalid_token"`}, `"schemes":["bearerAuth"]`},
		{"header key, nil", "/header-key", []string{"X-API-Key: key-nobody"}, nil, `"schemes":["apiKeyHeader"]`},
		{"and: both nil", "/and-or", []string{"X-API-Key: key-nobody", "Authorization: Bearer tok-nobody"}, []string{`Bearer error="invalid_token"`, basicChallenge}, `"schemes":["apiKeyHeader","bearerAuth"]`},
	} {
		before := logs.String()
		e.refused(tc.what, e.send("POST", tc.path, e.key(), "x", tc.headers...), 401, "UNAUTHENTICATED", tc.challenge...)
		logged := strings.TrimPrefix(logs.String(), before)
		if !strings.Contains(logged, `"level":"ERROR"`) || !strings.Contains(logged, "no principal") || !strings.Contains(logged, tc.scheme) {
			t.Errorf("%s: logged %q; want an error naming %s", tc.what, logged, tc.scheme)
		}
	}
	if strings.Contains(logs.String(), "tok-") || strings.Contains(logs.String(), "key-") {
		t.Errorf("a credential was logged: %s", logs.String())
	}
	// One scheme of a requirement without a principal is fine when another
	// names one.
	e.admitted("and: key without a principal, bearer alice", e.send("POST", "/and-or", e.key(), "a", "X-API-Key: key-nobody", "Authorization: Bearer tok-alice"), "alice@bearerAuth")
	if got := e.tenants(); !slices.Equal(got, []string{"user:alice"}) {
		t.Errorf("tenants of the records: %q", got)
	}
}

// NewHandler and Routes warn when the engine does not scope the keys of
// secured idempotent operations, and only then.
func TestUnscopedWarning(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{})
	for _, tc := range []struct {
		what  string
		scope idem.ScopeFunc
		warns bool
	}{
		{"no Scope", nil, true},
		{"PrincipalScope", idem.PrincipalScope(func(u *user) string { return u.Name }), false},
		{"one key space on purpose", func(*http.Request) (string, error) { return "", nil }, false},
	} {
		var logs lockedBuffer
		engine, err := idem.New(db.Pool, idem.Config{Operations: IdempotentOperations, Scope: tc.scope,
			Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		NewHandler(&srv{}, engine, WithSecurity(&auth{}))
		Routes(&srv{}, engine, WithSecurity(&auth{}))
		got := logs.String()
		warned := strings.Count(got, `"level":"WARN"`) == 2 && strings.Count(got, "idem.Config.Scope") == 2 &&
			strings.Contains(got, `"package":"secured","operations":10,"first":["andOr","basic","cookieKey","headerKey","oidc"]`)
		if warned != tc.warns || !tc.warns && got != "" {
			t.Errorf("%s: logged %q; want a warning from NewHandler and from Routes: %v", tc.what, got, tc.warns)
		}
	}
}

// Credentials are not part of the fingerprint: the same principal retrying
// with another of its API keys (a declared header parameter here) replays.
func TestCredentialsNotFingerprinted(t *testing.T) {
	e := newEnv(t, idem.Config{})
	key := e.key()
	first := e.send("POST", "/header-key", key, "a", "X-API-Key: key-alice")
	again := e.send("POST", "/header-key", key, "a", "X-API-Key: key-alice-2")
	e.admitted("first", first, "alice@apiKeyHeader")
	if again.status != 201 || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the same request with another API key: %d %s; want the replay of %s", again.status, again.body, first.body)
	}
}

// A server whose spec requires security refuses to start without hooks.
func TestNewHandlerWithoutSecurity(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "WithSecurity") {
			t.Errorf("recovered %v; want a panic asking for WithSecurity", r)
		}
	}()
	NewHandler(&srv{}, nil)
}

// The generated client sends credentials through a request editor; a 401
// is final for it (not retried) and leaves no record.
func TestClientCredentials(t *testing.T) {
	e := newEnv(t, idem.Config{})
	token := ""
	c, err := NewClient(e.url, idemclient.WithRequestEditor(func(r *http.Request) error {
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateOrder(context.Background(), CreateOrderRequest{Body: Order{Item: "x"}})
	var ce *idemclient.Error
	if !errors.As(err, &ce) || ce.Status != 401 || ce.Reason() != "UNAUTHENTICATED" || ce.Attempts != 1 {
		t.Errorf("without a token: %v; want one 401 attempt", err)
	}
	if n := e.records(); n != 0 {
		t.Errorf("%d records after a 401", n)
	}
	token = "tok-alice"
	res, err := c.CreateOrder(context.Background(), CreateOrderRequest{Body: Order{Item: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res.Response.(CreateOrder201Response); !ok || r.Body.Principal != "alice@bearerAuth" {
		t.Errorf("with a token: %#v", res.Response)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
