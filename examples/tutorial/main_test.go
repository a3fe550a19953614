package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/conformance"
	"github.com/idemgen/idemgen/examples/tutorial/api"
	"github.com/idemgen/idemgen/runtime/idemclient"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// carrier is a fake of the carrier's API: it books a label once per key,
// and can be told to book and then fail, as a carrier that times out after
// doing its work.
type carrier struct {
	mu        sync.Mutex
	labels    map[string]Label
	bookings  int  // labels booked, not counting the same key again
	posts     int  // booking requests, the same key again included
	failAfter bool // the next POST books, then answers 504
}

func (c *carrier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		l, ok := c.labels[r.URL.Query().Get("key")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(l)
	case http.MethodPost:
		c.posts++
		var req struct{ Key, Address string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Key == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		l, ok := c.labels[req.Key]
		if !ok {
			c.bookings++
			l = Label{TrackingNumber: "TRK-" + uuid.NewString()[:8]}
			c.labels[req.Key] = l
		}
		if c.failAfter {
			c.failAfter = false
			http.Error(w, "gateway timeout", http.StatusGatewayTimeout)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(l)
	}
}

type env struct {
	t       *testing.T
	db      *pgtest.DB
	srv     *httptest.Server
	carrier *carrier
}

// newEnv starts the service as main does, on a fresh schema migrated by
// goose, against a fake carrier; with a Redis cache when REDIS_URL is set
// (make test sets it).
func newEnv(t *testing.T) *env {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{Bare: true})
	if err := migrate(t.Context(), db.Pool); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(t.Context(), `INSERT INTO stock (tenant, sku, available) VALUES ('acme', 'WIDGET', 5), ('acme', 'GADGET', 1)`); err != nil {
		t.Fatal(err)
	}
	c := &carrier{labels: map[string]Label{}}
	cs := httptest.NewServer(c)
	t.Cleanup(cs.Close)
	cache, closeCache, err := cacheFromEnv(os.Getenv("REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeCache)
	registry, metrics := newMetrics()
	svc := &Service{db: db.Pool, carrier: &Carrier{URL: cs.URL, HTTP: cs.Client()}}
	h, err := newHandler(db.Pool, svc, cache, metrics)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newMux(db.Pool, h, registry))
	t.Cleanup(srv.Close)
	return &env{t: t, db: db, srv: srv, carrier: c}
}

// post sends a POST as tenant with key and body.
func (e *env) post(tenant, path, key, body string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Tenant", tenant)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, string(b)
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(e.t.Context(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestOrders walks the tutorial's service: an order through the generated
// client and its replay, a business rule's 422 that reserves nothing and
// is replayed, the same key in another tenant, a shipment whose carrier
// booked and then timed out (the retry recovers the label, booked once),
// and the metrics on the service's own registry.
func TestOrders(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	// The generated client mints the key and retries safely.
	client, err := api.NewClient(e.srv.URL, idemclient.WithHTTPClient(e.srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.CreateOrder(ctx, api.CreateOrderRequest{Body: api.NewOrder{Items: []api.Item{{Sku: "WIDGET", Quantity: 2}}}},
		idemclient.WithHeader("X-Tenant", "acme"))
	if err != nil {
		t.Fatal(err)
	}
	created, ok := res.Response.(api.CreateOrder201Response)
	if !ok || res.Key == "" {
		t.Fatalf("CreateOrder: %T %+v", res.Response, res)
	}
	order := created.Body.ID
	// A retry of the same request replays it.
	body := `{"items":[{"sku":"WIDGET","quantity":2}]}`
	again, againBody := e.post("acme", "/orders", res.Key, body)
	if again.StatusCode != 201 || again.Header.Get("Idempotent-Replayed") != "true" || !strings.Contains(againBody, order.String()) {
		t.Fatalf("replay: %d %q %s", again.StatusCode, again.Header.Get("Idempotent-Replayed"), againBody)
	}

	// An item short: 422, nothing reserved and no order row (the savepoint),
	// and the 422 is the key's final answer.
	short := uuid.NewString()
	shortBody := `{"items":[{"sku":"WIDGET","quantity":1},{"sku":"GADGET","quantity":2}]}`
	for i, want := range []string{"", "true"} {
		resp, b := e.post("acme", "/orders", short, shortBody)
		if resp.StatusCode != 422 || !strings.Contains(b, "out_of_stock") || resp.Header.Get("Idempotent-Replayed") != want {
			t.Fatalf("short order, attempt %d: %d %q %s", i+1, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), b)
		}
	}
	if n := e.count(`SELECT available FROM stock WHERE tenant = 'acme' AND sku = 'WIDGET'`); n != 3 {
		t.Errorf("WIDGET available %d after the 422, want 3 (5 less the first order's 2)", n)
	}
	if n := e.count(`SELECT count(*) FROM orders`); n != 1 {
		t.Errorf("%d orders, want 1: the short order's row must roll back to the savepoint", n)
	}

	// The same key in another tenant is another record: globex has no
	// stock, so its request runs and is refused, never answered with acme's.
	other, otherBody := e.post("globex", "/orders", res.Key, body)
	if other.StatusCode != 422 || other.Header.Get("Idempotent-Replayed") == "true" {
		t.Fatalf("another tenant, same key: %d %q %s", other.StatusCode, other.Header.Get("Idempotent-Replayed"), otherBody)
	}
	if resp, _ := e.post("", "/orders", uuid.NewString(), body); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no tenant: %d, want 401", resp.StatusCode)
	}

	// A shipment: the carrier books, then times out. The client gets 502;
	// the retry's recovery hook finds the label, and the handler records it.
	e.carrier.mu.Lock()
	e.carrier.failAfter = true
	e.carrier.mu.Unlock()
	ship := uuid.NewString()
	path := "/orders/" + order.String() + "/shipments"
	first, firstBody := e.post("acme", path, ship, `{"address":"1 Main St"}`)
	if first.StatusCode != 502 {
		t.Fatalf("first shipment attempt: %d %s, want 502", first.StatusCode, firstBody)
	}
	retry, retryBody := e.post("acme", path, ship, `{"address":"1 Main St"}`)
	var s api.Shipment
	if retry.StatusCode != 201 || json.Unmarshal([]byte(retryBody), &s) != nil {
		t.Fatalf("shipment retry: %d %s", retry.StatusCode, retryBody)
	}
	e.carrier.mu.Lock()
	booked, posts, label := e.carrier.bookings, e.carrier.posts, e.carrier.labels["acme/"+ship]
	e.carrier.mu.Unlock()
	if booked != 1 || s.TrackingNumber != label.TrackingNumber {
		t.Errorf("carrier booked %d labels, the shipment has %q and the carrier %q: want one label, recorded", booked, s.TrackingNumber, label.TrackingNumber)
	}
	if posts != 1 {
		t.Errorf("%d booking requests, want 1: the retry's recovery hook finds the label, the handler does not book again", posts)
	}
	if n := e.count(`SELECT count(*) FROM shipments`); n != 1 {
		t.Errorf("%d shipments, want 1", n)
	}

	// The metrics are on the service's own registry.
	resp, err := e.srv.Client().Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`idem_requests_total{operation="createOrder",outcome="replayed"}`, `go_goroutines`, `process_cpu_seconds_total`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestConformance: idemgen's conformance checker finds nothing wrong with
// the service, as the tutorial's CI step runs it, the tenants check
// included (the same key in two tenants runs twice).
func TestConformance(t *testing.T) {
	e := newEnv(t)
	// An order to ship, in each tenant the tenants check uses.
	if _, err := e.db.Exec(t.Context(), `INSERT INTO orders (tenant, id, items) VALUES ('acme', $1, '[]'), ('globex', $1, '[]')`, fixtureOrder); err != nil {
		t.Fatal(err)
	}
	rep, err := conformance.Run(t.Context(), conformance.Config{
		Spec: "openapi.yaml", URL: e.srv.URL, Client: e.srv.Client(),
		Header:       http.Header{"X-Tenant": {"acme"}},
		TenantHeader: "X-Tenant", Tenants: []string{"acme", "globex"},
		Params: map[string]string{"orderId": fixtureOrder},
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Passed == 0 {
		t.Fatalf("%d checks failed, %d passed:\n%s", rep.Failed, rep.Passed, b.String())
	}
	t.Logf("%d passed, %d skipped", rep.Passed, rep.Skipped)
}

const fixtureOrder = "0190f3c1-7a2b-7cde-8f01-23456789abcd"

// TestNoCacheIsNil: without REDIS_URL the cache is a nil interface, not a
// nil *idemredis.Cache in one (the typed-nil trap).
func TestNoCacheIsNil(t *testing.T) {
	c, closeCache, err := cacheFromEnv("")
	if err != nil || c != nil || closeCache == nil {
		t.Fatalf("cacheFromEnv(\"\") = %#v, %v", c, err)
	}
	closeCache()
}
