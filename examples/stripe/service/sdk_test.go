package service_test

// Stripe's official Go SDK (stripe-go) as the client of the generated
// service, over HTTP, against PostgreSQL: its backend URL points at the
// test server. Every scenario counts the HTTP attempts the server saw per
// idempotency key (GETs, which carry none, per method and path), since the
// SDK retries on its own: a refusal it cannot read, or one it reads as
// retryable, shows up as more attempts than calls.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stripe/stripe-go/v85"

	"github.com/idemgen/idemgen/examples/stripe/service"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

const (
	apiKey   = "sk_test_example"
	otherKey = "sk_test_other_account"
)

// attempt is one HTTP request the server saw.
type attempt struct {
	status int
	body   []byte
}

func (a attempt) String() string { return fmt.Sprintf("%d %s", a.status, a.body) }

// env is the service behind an httptest.Server, a stripe-go client of it,
// and the attempts per key.
type env struct {
	t   *testing.T
	db  *pgtest.DB
	svc *service.Service
	srv *httptest.Server
	sc  *stripe.Client

	mu       sync.Mutex
	attempts map[string][]attempt
	// drop names a key whose first attempt's connection is closed once the
	// response is ready: after the handler's transaction committed, before
	// a byte of the response is sent.
	drop string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{Migrations: service.Migrations, MigrationsTable: "stripe_schema_migrations", MaxConns: 32})
	e := &env{t: t, db: db, attempts: map[string][]attempt{}}
	e.svc = service.New(db.Pool, map[string]service.Account{apiKey: "acct_1", otherKey: "acct_2"})
	h, err := service.Handler(e.svc, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(e.count(h))
	t.Cleanup(e.srv.Close)
	e.sc = e.client(apiKey)
	return e
}

// client is a stripe-go client of the test server with the SDK's default
// retries (2), logging nothing.
func (e *env) client(key string) *stripe.Client {
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(e.srv.URL),
		HTTPClient:        e.srv.Client(),
		MaxNetworkRetries: stripe.Int64(2),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return stripe.NewClient(key, stripe.WithBackends(&stripe.Backends{API: backend, Connect: backend, Uploads: backend, MeterEvents: backend}))
}

// attemptKey is what attempts are counted by: the idempotency key, else
// the method and path.
func attemptKey(r *http.Request) string {
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		return k
	}
	return r.Method + " " + r.URL.Path
}

// count records every request and its answer, and drops the connection of
// e.drop's first attempt.
func (e *env) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := attemptKey(r)
		e.mu.Lock()
		n := len(e.attempts[k])
		e.attempts[k] = append(e.attempts[k], attempt{})
		drop := k == e.drop && n == 0
		e.mu.Unlock()
		rec := &recorder{ResponseWriter: w, drop: drop}
		h.ServeHTTP(rec, r)
		e.mu.Lock()
		e.attempts[k][n] = attempt{status: rec.status, body: rec.body}
		e.mu.Unlock()
	})
}

type recorder struct {
	http.ResponseWriter
	drop    bool
	dropped bool
	status  int
	body    []byte
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	if r.drop {
		// The engine writes the response after COMMIT: cut the
		// connection now, as a network failure would.
		if conn, _, err := http.NewResponseController(r.ResponseWriter).Hijack(); err == nil {
			conn.Close()
			r.dropped = true
			return
		}
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	r.body = append(r.body, b...)
	if r.dropped {
		return len(b), nil
	}
	return r.ResponseWriter.Write(b)
}

// attemptsOf returns the attempts the server saw under key.
func (e *env) attemptsOf(key string) []attempt {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]attempt(nil), e.attempts[key]...)
}

// wantAttempts checks that key saw exactly n attempts.
func (e *env) wantAttempts(key string, n int) {
	e.t.Helper()
	if got := e.attemptsOf(key); len(got) != n {
		e.t.Errorf("%q: %d HTTP attempts, want %d (%v)", key, len(got), n, got)
	}
}

// count of rows.
func (e *env) rows(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) records(key string) int {
	return e.rows("SELECT count(*) FROM idem_records WHERE idempotency_key = $1", key)
}

var keySeq atomic.Int64

// newKey is a key of the test's own.
func newKey(what string) string {
	return fmt.Sprintf("%s-%d-%d", what, time.Now().UnixNano(), keySeq.Add(1))
}

// declaredError is the spec's error schema (#/components/schemas/error),
// which every refusal's body must satisfy.
var declaredError = sync.OnceValues(func() (*openapi3.Schema, error) {
	doc, err := openapi3.NewLoader().LoadFromFile("../openapi.yaml")
	if err != nil {
		return nil, err
	}
	return doc.Components.Schemas["error"].Value, nil
})

// wantStripeError checks that err is the typed error stripe-go makes of a
// Stripe error body: status, type, code and param; that the body satisfies
// the spec's error schema; and that the SDK made exactly one attempt.
func (e *env) wantStripeError(err error, key string, status int, typ stripe.ErrorType, code, param string) *stripe.Error {
	e.t.Helper()
	var se *stripe.Error
	if !errors.As(err, &se) {
		e.t.Errorf("%q: %T %v, want a *stripe.Error", key, err, err)
		return nil
	}
	if se.HTTPStatusCode != status || se.Type != typ || string(se.Code) != code || se.Param != param || se.Msg == "" {
		e.t.Errorf("%q: %d %s/%s param %q (%q); want %d %s/%s param %q", key, se.HTTPStatusCode, se.Type, se.Code, se.Param, se.Msg, status, typ, code, param)
	}
	var typed bool
	switch typ {
	case stripe.ErrorTypeInvalidRequest:
		var x *stripe.InvalidRequestError
		typed = errors.As(err, &x)
	case stripe.ErrorTypeIdempotency:
		var x *stripe.IdempotencyError
		typed = errors.As(err, &x)
	case stripe.ErrorTypeAPI:
		var x *stripe.APIError
		typed = errors.As(err, &x)
	}
	if !typed {
		e.t.Errorf("%q: %s is not typed by stripe-go (Err %T)", key, typ, se.Err)
	}
	got := e.attemptsOf(key)
	if len(got) != 1 {
		e.t.Errorf("%q: %d HTTP attempts, want 1", key, len(got))
		return se
	}
	s, lerr := declaredError()
	if lerr != nil {
		e.t.Fatal(lerr)
	}
	var body any
	if err := json.Unmarshal(got[0].body, &body); err != nil {
		e.t.Errorf("%q: body %s: %v", key, got[0].body, err)
	} else if err := s.VisitJSON(body); err != nil {
		e.t.Errorf("%q: body %s does not satisfy the declared error schema: %v", key, got[0].body, err)
	}
	return se
}

// TestReplay: the same create with the same key gives the same customer,
// marked Idempotent-Replayed, after one attempt per call; what the SDK
// sent arrived as it sent it.
func TestReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	key := newKey("replay")
	params := func() *stripe.CustomerCreateParams {
		p := &stripe.CustomerCreateParams{Email: stripe.String("ada@example.com"), Name: stripe.String("Ada Lovelace"),
			Description: stripe.String("first customer"), Phone: stripe.String("+44 20 7946 0000")}
		p.AddMetadata("order_id", "6735")
		p.AddMetadata("note", "a & b = c")
		p.SetIdempotencyKey(key)
		return p
	}
	c1, err := e.sc.V1Customers.Create(ctx, params())
	if err != nil {
		t.Fatal(err)
	}
	c2, err := e.sc.V1Customers.Create(ctx, params())
	if err != nil {
		t.Fatal(err)
	}
	if c1.ID != c2.ID || c1.LastResponse.Header.Get("Idempotent-Replayed") != "" || c2.LastResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("ids %s %s, Idempotent-Replayed %q then %q; want one customer, replayed the second time", c1.ID, c2.ID,
			c1.LastResponse.Header.Get("Idempotent-Replayed"), c2.LastResponse.Header.Get("Idempotent-Replayed"))
	}
	e.wantAttempts(key, 2)
	if n := e.rows("SELECT count(*) FROM customers"); n != 1 {
		t.Errorf("%d customers, want 1", n)
	}

	got, err := e.sc.V1Customers.Retrieve(ctx, c1.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Email != "ada@example.com" || got.Name != "Ada Lovelace" || got.Description != "first customer" || got.Phone != "+44 20 7946 0000" ||
		got.Metadata["order_id"] != "6735" || got.Metadata["note"] != "a & b = c" || len(got.Metadata) != 2 {
		t.Errorf("retrieved %+v", got)
	}
	e.wantAttempts("GET /v1/customers/"+c1.ID, 1)
}

// TestKeysAsSent: the SDK's own keys (it sends one on every POST without
// a key of the caller's), keys with spaces and accents, and a key in
// quotes, which is not the key without them.
func TestKeysAsSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()

	c, err := e.sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("sdk-key@example.com")})
	if err != nil {
		t.Fatalf("a create with the SDK's default key: %v", err)
	}
	sdkKey := regexp.MustCompile(`^[0-9]+_[A-Za-z0-9_-]{6}$`)
	var keys []string
	e.mu.Lock()
	for k := range e.attempts {
		if sdkKey.MatchString(k) {
			keys = append(keys, k)
		}
	}
	e.mu.Unlock()
	if len(keys) != 1 || e.records(keys[0]) != 1 {
		t.Fatalf("keys of the SDK's form seen: %v; want one, recorded", keys)
	}
	e.wantAttempts(keys[0], 1)
	if c.ID == "" {
		t.Error("no customer")
	}

	ids := map[string]string{}
	for _, key := range []string{"clé de paiement 42", `"d5-quoted"`, "d5-quoted"} {
		p := &stripe.CustomerCreateParams{Email: stripe.String("keys@example.com")}
		p.SetIdempotencyKey(key)
		c, err := e.sc.V1Customers.Create(ctx, p)
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		ids[key] = c.ID
		e.wantAttempts(key, 1)
		if e.records(key) != 1 {
			t.Errorf("key %q is not recorded as sent", key)
		}
	}
	if ids[`"d5-quoted"`] == ids["d5-quoted"] {
		t.Errorf(`"d5-quoted" and d5-quoted share a record (%s)`, ids["d5-quoted"])
	}
}

// TestRefusals: every refusal, the generated server's own and the
// service's, reaches the SDK as a typed *stripe.Error with its type, code
// and param, after one attempt (stripe-go retries none of them), in a body
// the spec's error schema accepts; a refused POST leaves no record.
func TestRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	intent := func(key string, edit func(*stripe.PaymentIntentCreateParams)) error {
		p := &stripe.PaymentIntentCreateParams{Amount: stripe.Int64(2000), Currency: stripe.String("eur")}
		edit(p)
		p.SetIdempotencyKey(key)
		_, err := e.sc.V1PaymentIntents.Create(ctx, p)
		return err
	}
	refused := func(key string) {
		t.Helper()
		if e.records(key) != 0 {
			t.Errorf("%q: the refused request left a record", key)
		}
	}

	key := newKey("missing")
	err := intent(key, func(p *stripe.PaymentIntentCreateParams) { p.Currency = nil })
	e.wantStripeError(err, key, 400, stripe.ErrorTypeInvalidRequest, "parameter_missing", "currency")
	refused(key)

	key = newKey("unknown")
	err = intent(key, func(p *stripe.PaymentIntentCreateParams) { p.AddExtra("nickname", "x") })
	e.wantStripeError(err, key, 400, stripe.ErrorTypeInvalidRequest, "parameter_unknown", "nickname")
	refused(key)

	key = newKey("enum")
	err = intent(key, func(p *stripe.PaymentIntentCreateParams) { p.CaptureMethod = stripe.String("sometimes") })
	e.wantStripeError(err, key, 400, stripe.ErrorTypeInvalidRequest, "parameter_invalid_enum", "capture_method")
	refused(key)

	key = newKey("type")
	err = intent(key, func(p *stripe.PaymentIntentCreateParams) { p.Amount = nil; p.AddExtra("amount", "lots") })
	e.wantStripeError(err, key, 400, stripe.ErrorTypeInvalidRequest, "parameter_invalid_type", "amount")
	refused(key)

	key = "order\u200b42" // a zero-width space: not a printable key
	err = intent(key, func(*stripe.PaymentIntentCreateParams) {})
	e.wantStripeError(err, key, 400, stripe.ErrorTypeInvalidRequest, "idempotency_key_malformed", "")
	if n := e.rows("SELECT count(*) FROM idem_records"); n != 0 {
		t.Errorf("%d records after refusals only", n)
	}

	// The service's own refusal, in the spec's declared default response.
	key = newKey("business")
	err = intent(key, func(p *stripe.PaymentIntentCreateParams) { p.Customer = stripe.String("cus_missing") })
	e.wantStripeError(err, key, 400, stripe.ErrorTypeInvalidRequest, "resource_missing", "customer")
	refused(key)

	// A key reused with other parameters: stripe-go's IdempotencyError.
	key = newKey("reused")
	if err := intent(key, func(*stripe.PaymentIntentCreateParams) {}); err != nil {
		t.Fatal(err)
	}
	err = intent(key, func(p *stripe.PaymentIntentCreateParams) { p.Amount = stripe.Int64(2001) })
	var se *stripe.Error
	if errors.As(err, &se) && se.HTTPStatusCode == 400 && se.Type == stripe.ErrorTypeIdempotency && se.Code == "conflicting_idempotent_request" {
		var ie *stripe.IdempotencyError
		if !errors.As(err, &ie) {
			t.Errorf("reused key: %v is not a *stripe.IdempotencyError", err)
		}
	} else {
		t.Errorf("reused key: %v, want 400 idempotency_error", err)
	}
	e.wantAttempts(key, 2)
	if n := e.rows("SELECT count(*) FROM payment_intents"); n != 1 {
		t.Errorf("%d payment intents, want 1", n)
	}

	// Credentials the service does not know: 401.
	key = newKey("unauthenticated")
	p := &stripe.CustomerCreateParams{Email: stripe.String("x@example.com")}
	p.SetIdempotencyKey(key)
	_, err = e.client("sk_test_unknown").V1Customers.Create(ctx, p)
	e.wantStripeError(err, key, 401, stripe.ErrorTypeInvalidRequest, "unauthenticated", "")
	refused(key)

	// Outside the engine: a GET the service does not implement (501), one
	// for a customer of another account (the service's 404).
	_, err = e.sc.V1PaymentIntents.Retrieve(ctx, "pi_123", nil)
	e.wantStripeError(err, "GET /v1/payment_intents/pi_123", 501, stripe.ErrorTypeAPI, "not_implemented", "")
	other, err := e.client(otherKey).V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("other@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.sc.V1Customers.Retrieve(ctx, other.ID, nil)
	e.wantStripeError(err, "GET /v1/customers/"+other.ID, 404, stripe.ErrorTypeInvalidRequest, "resource_missing", "customer")
}

// TestConcurrentDuplicates: 20 calls with one key at once. The first runs
// (held until the 19 others were answered); the others get 429
// lock_timeout, which stripe-go retries, and their retries get the stored
// response. One execution, 20 equal answers, one retry per refusal.
func TestConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := newKey("storm")
	const n = 20
	var once sync.Once
	e.svc.BeforeCommit = func(ctx context.Context) {
		once.Do(func() {
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				if refusals(e.attemptsOf(key), http.StatusTooManyRequests) >= n-1 {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			t.Errorf("the duplicates were not all refused while the first ran: %v", e.attemptsOf(key))
		})
	}
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := &stripe.CustomerCreateParams{Email: stripe.String("storm@example.com")}
			p.SetIdempotencyKey(key)
			c, err := e.sc.V1Customers.Create(context.Background(), p)
			if err == nil {
				ids[i] = c.ID
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Errorf("call %d: %s %v; want customer %s", i, ids[i], errs[i], ids[0])
		}
	}
	if got := e.rows("SELECT count(*) FROM customers"); got != 1 {
		t.Errorf("%d customers, want 1", got)
	}
	all := e.attemptsOf(key)
	// Every duplicate was refused at least once while the first ran, and
	// every refusal was retried once (a retry that came too early was
	// refused and retried again): attempts = calls + refusals.
	locked, ok := refusals(all, http.StatusTooManyRequests), refusals(all, http.StatusOK)
	t.Logf("%d calls: %d attempts, %d answered 429 lock_timeout, %d answered 200", n, len(all), locked, ok)
	if locked < n-1 || ok != n || len(all) != n+locked || len(all) > 3*n {
		t.Errorf("%d attempts: %d answered 429, %d answered 200; want at least %d refused, each refusal retried once, %d answered",
			len(all), locked, ok, n-1, n)
	}
	for _, a := range all {
		if a.status != http.StatusTooManyRequests {
			continue
		}
		var body struct{ Error struct{ Type, Code string } }
		if json.Unmarshal(a.body, &body) != nil || body.Error.Type != "invalid_request_error" || body.Error.Code != "lock_timeout" {
			t.Errorf("in flight: %s, want invalid_request_error lock_timeout", a.body)
		}
	}
}

func refusals(as []attempt, status int) int {
	n := 0
	for _, a := range as {
		if a.status == status {
			n++
		}
	}
	return n
}

// TestDroppedConnection: the connection breaks after the first attempt
// committed, before its response arrives; the SDK (or net/http, for a
// request with an Idempotency-Key on a reused connection) sends it again
// and gets the stored response. One customer, two attempts.
func TestDroppedConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := newKey("drop")
	e.drop = key
	p := &stripe.CustomerCreateParams{Email: stripe.String("drop@example.com")}
	p.SetIdempotencyKey(key)
	c, err := e.sc.V1Customers.Create(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if c.LastResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the answer after the dropped connection is not the replay: %v", c.LastResponse.Header)
	}
	e.wantAttempts(key, 2)
	if n := e.rows("SELECT count(*) FROM customers"); n != 1 {
		t.Errorf("%d customers, want 1", n)
	}
	if a := e.attemptsOf(key); len(a) == 2 && a[0].status != http.StatusOK {
		t.Errorf("first attempt answered %d before the drop, want 200", a[0].status)
	}
}

// TestPaymentFlow: a customer, a payment intent for it, confirmed, then
// refunded in two parts; a third refund is the service's own 400. One
// attempt each.
func TestPaymentFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	step := func(what string) *stripe.Params {
		return &stripe.Params{IdempotencyKey: stripe.String(newKey(what))}
	}
	cp := &stripe.CustomerCreateParams{Params: *step("customer"), Email: stripe.String("pay@example.com")}
	c, err := e.sc.V1Customers.Create(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	pp := &stripe.PaymentIntentCreateParams{Params: *step("intent"), Amount: stripe.Int64(5000), Currency: stripe.String("eur"),
		Customer: stripe.String(c.ID), PaymentMethod: stripe.String("pm_card_visa")}
	pp.AddMetadata("order_id", "A-1")
	pi, err := e.sc.V1PaymentIntents.Create(ctx, pp)
	if err != nil {
		t.Fatal(err)
	}
	if pi.Status != stripe.PaymentIntentStatusRequiresConfirmation || pi.Customer == nil || pi.Customer.ID != c.ID || pi.Metadata["order_id"] != "A-1" {
		t.Fatalf("created %+v", pi)
	}
	confirmed, err := e.sc.V1PaymentIntents.Confirm(ctx, pi.ID, &stripe.PaymentIntentConfirmParams{Params: *step("confirm")})
	if err != nil {
		t.Fatal(err)
	}
	if confirmed.Status != stripe.PaymentIntentStatusSucceeded || confirmed.AmountReceived != 5000 {
		t.Fatalf("confirmed %+v", confirmed)
	}
	for _, amount := range []int64{3000, 2000} {
		rp := &stripe.RefundCreateParams{Params: *step("refund"), PaymentIntent: stripe.String(pi.ID), Amount: stripe.Int64(amount)}
		rf, err := e.sc.V1Refunds.Create(ctx, rp)
		if err != nil || rf.Amount != amount || rf.Status != stripe.RefundStatusSucceeded {
			t.Fatalf("refund of %d: %+v %v", amount, rf, err)
		}
	}
	key := newKey("refund")
	_, err = e.sc.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Params: stripe.Params{IdempotencyKey: stripe.String(key)}, PaymentIntent: stripe.String(pi.ID)})
	e.wantStripeError(err, key, 400, stripe.ErrorTypeInvalidRequest, "amount_too_large", "amount")

	e.mu.Lock()
	defer e.mu.Unlock()
	for k, as := range e.attempts {
		if len(as) != 1 {
			t.Errorf("%q: %d attempts, want 1", k, len(as))
		}
	}
}

// TestRetryBodyIsTheSame guards the premise of counting attempts: stripe-go
// sends the same key and body on every attempt of a call.
func TestRetryBodyIsTheSame(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Get("Idempotency-Key")+" "+string(b))
		n := len(seen)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"lock_timeout","message":"locked"}}`)
			return
		}
		io.WriteString(w, `{"id":"cus_1","object":"customer"}`)
	}))
	defer srv.Close()
	e := &env{srv: srv}
	if _, err := e.client(apiKey).V1Customers.Create(context.Background(), &stripe.CustomerCreateParams{Email: stripe.String("a@example.com")}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != seen[1] {
		t.Errorf("attempts %q; want two equal ones", seen)
	}
}

// TestUndeclaredRoutes: a path the spec does not declare (404) and a
// declared path with a method it does not declare (405) are refusals like
// the engine's others, in the spec's profile: stripe-go reads a typed
// InvalidRequestError from each, after one attempt (no retry), and the
// 405 names the allowed methods.
func TestUndeclaredRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.sc.V1Charges.Retrieve(ctx, "ch_123", nil)
	e.wantStripeError(err, "GET /v1/charges/ch_123", 404, stripe.ErrorTypeInvalidRequest, "no_such_operation", "")

	cus, err := e.sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("del@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	key := newKey("delete")
	p := &stripe.CustomerDeleteParams{}
	p.SetIdempotencyKey(key)
	_, err = e.sc.V1Customers.Delete(ctx, cus.ID, p)
	if se := e.wantStripeError(err, key, 405, stripe.ErrorTypeInvalidRequest, "method_not_allowed", ""); se != nil && !strings.Contains(se.Msg, "GET") {
		t.Errorf("405 message %q does not name the allowed method", se.Msg)
	}
	req, err := http.NewRequest(http.MethodDelete, e.srv.URL+"/v1/customers/"+cus.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" || resp.Header.Get("Stripe-Should-Retry") != "false" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("DELETE: %d, Allow %q, Stripe-Should-Retry %q, Content-Type %q; want 405, GET, HEAD, false, application/json",
			resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Stripe-Should-Retry"), resp.Header.Get("Content-Type"))
	}
}
