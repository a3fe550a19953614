package cacheapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemredis"
	"github.com/idemgen/idemgen/runtime/idemredis/internal/cacheapi"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// payments is the service's own table: one row per execution.
var payments = fstest.MapFS{
	"9000_payments.up.sql": {Data: []byte(`CREATE TABLE payments (id bigserial PRIMARY KEY,
		tenant text NOT NULL, operation text NOT NULL, idem_key text NOT NULL, amount bigint NOT NULL)`)},
}

// service makes one payment per execution, in the engine's transaction;
// its id is new each time, so every execution answers with a body of its
// own. With a gate, executions wait for it to close once they have
// written.
type service struct {
	runs    atomic.Int64
	entered atomic.Int64
	gate    chan struct{}
}

var _ cacheapi.Server = (*service)(nil)

func (s *service) pay(ctx context.Context, tx pgx.Tx, amount int64) (cacheapi.Payment, error) {
	s.runs.Add(1)
	defer func() {
		if s.gate != nil {
			s.entered.Add(1)
			<-s.gate
		}
	}()
	k, _ := idem.KeyFromContext(ctx)
	p := cacheapi.Payment{Amount: amount}
	err := tx.QueryRow(ctx, `INSERT INTO payments (tenant, operation, idem_key, amount) VALUES ($1, $2, $3, $4) RETURNING id`,
		k.Tenant, k.Operation, k.Value, amount).Scan(&p.ID)
	return p, err
}

func (s *service) CreatePayment(ctx context.Context, tx pgx.Tx, req cacheapi.CreatePaymentRequest) (cacheapi.CreatePaymentResponse, error) {
	p, err := s.pay(ctx, tx, req.Body.Amount)
	if err != nil {
		return nil, err
	}
	return cacheapi.CreatePayment201Response{Body: p}, nil
}

func (s *service) CreateCharge(ctx context.Context, tx pgx.Tx, req cacheapi.CreateChargeRequest) (cacheapi.CreateChargeResponse, error) {
	p, err := s.pay(ctx, tx, req.Body.Amount)
	if err != nil {
		return nil, err
	}
	return cacheapi.CreateCharge201Response{Body: p}, nil
}

// paths are the operations' paths, by operation id.
var paths = map[string]string{"createPayment": "/payments", "createCharge": "/charges"}

// watch is the engine's Observer: it keeps every request's outcome, by
// tenant and key hash, and counts the entries the engine rejected.
type watch struct {
	mu       sync.Mutex
	outs     map[string][]idem.Outcome
	rejected atomic.Int64
	failed   atomic.Int64 // other cache errors
}

func (w *watch) Request(ctx context.Context, _ *idem.Operation) (context.Context, func(idem.Outcome)) {
	return ctx, func(o idem.Outcome) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.outs == nil {
			w.outs = map[string][]idem.Outcome{}
		}
		w.outs[o.Tenant+"/"+o.KeyHash] = append(w.outs[o.Tenant+"/"+o.KeyHash], o)
	}
}

func (w *watch) Phase(ctx context.Context, _ *idem.Operation, _ idem.Phase) (context.Context, func(error)) {
	return ctx, func(error) {}
}

func (w *watch) CacheError(_ context.Context, _ *idem.Operation, err error) {
	if errors.Is(err, idem.ErrCacheEntryRejected) {
		w.rejected.Add(1)
	} else {
		w.failed.Add(1)
	}
}

// caches counts the Outcome.Cache results seen.
func (w *watch) caches() map[idem.CacheResult]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := map[idem.CacheResult]int{}
	for _, outs := range w.outs {
		for _, o := range outs {
			n[o.Cache]++
		}
	}
	return n
}

// stack is one deployment of the generated service: an engine on a
// database, with a cache, served over HTTP.
type stack struct {
	t     *testing.T
	db    *pgtest.DB
	eng   *idem.Engine
	srv   *httptest.Server
	svc   *service
	watch *watch
}

// newDB is a database with the service's table.
func newDB(t *testing.T, own bool) *pgtest.DB {
	t.Helper()
	return pgtest.New(t, pgtest.Options{Migrations: payments, MaxConns: 16, Database: own})
}

// newStack starts the service on db, tenants from X-Tenant.
func newStack(t *testing.T, db *pgtest.DB, cache idem.Cache, sealer idem.Sealer) *stack {
	t.Helper()
	return newStackOn(t, db, db, cache, sealer, slog.New(slog.DiscardHandler))
}

// newStackOn starts the service with its engine on edb, a pool on db's
// schema, logging to log.
func newStackOn(t *testing.T, db *pgtest.DB, edb idem.DB, cache idem.Cache, sealer idem.Sealer, log *slog.Logger) *stack {
	t.Helper()
	s := &stack{t: t, db: db, svc: &service{}, watch: &watch{}}
	eng, err := idem.New(edb, idem.Config{
		Operations: cacheapi.IdempotentOperations,
		Scope:      func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		Cache:      cache,
		Sealer:     sealer,
		Observers:  []idem.Observer{s.watch},
		Logger:     log,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.eng = eng
	s.srv = httptest.NewServer(cacheapi.NewHandler(s.svc, eng))
	t.Cleanup(s.srv.Close)
	return s
}

// reply is an HTTP answer.
type reply struct {
	status   int
	body     string
	replayed bool
}

// post sends op's request for amount under tenant and key.
func (s *stack) post(op, tenant, key string, amount int) reply {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.srv.URL+paths[op], bytes.NewReader(fmt.Appendf(nil, `{"amount":%d}`, amount)))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if tenant != "" {
		req.Header.Set("X-Tenant", tenant)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Errorf("POST %s: %v", paths[op], err)
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: string(b), replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
}

// outcome returns the n-th (from 1) outcome of tenant's key, waiting for
// it: the engine reports it as it writes the response.
func (s *stack) outcome(op, tenant, key string, n int) idem.Outcome {
	s.t.Helper()
	h := tenant + "/" + idem.Key{Tenant: tenant, Operation: op, Value: key}.Hash()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		s.watch.mu.Lock()
		outs := s.watch.outs[h]
		s.watch.mu.Unlock()
		if len(outs) >= n {
			return outs[n-1]
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s %s: %d outcomes, waited for %d", op, key, len(outs), n)
		}
	}
}

// executions counts the payments made for tenant's key of op.
func (s *stack) executions(op, tenant, key string) int {
	s.t.Helper()
	var n int
	if err := s.db.QueryRow(context.Background(), `SELECT count(*) FROM payments WHERE tenant = $1 AND operation = $2 AND idem_key = $3`,
		tenant, op, key).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

// cacheKey is the key of tenant's key of op in the cache (without
// idemredis's prefix, which a Cache's Get and Set put before it).
func (s *stack) cacheKey(op, tenant, key string) string {
	s.t.Helper()
	k, err := s.eng.CacheKey(context.Background(), idem.Key{Tenant: tenant, Operation: op, Value: key})
	if err != nil {
		s.t.Fatal(err)
	}
	return k
}

// newCache is an idemredis cache on url with default options but the
// time-out (the machine is loaded: a slow call is a fallback, and the
// tests count fallbacks).
func newCache(t *testing.T, url string) *idemredis.Cache {
	t.Helper()
	return newCacheWith(t, url, idemredis.Options{Timeout: 2 * time.Second})
}

// newCacheWith is an idemredis cache on url with opts, connected.
func newCacheWith(t *testing.T, url string, opts idemredis.Options) *idemredis.Cache {
	t.Helper()
	c, err := idemredis.New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// It connects in the background: wait for it.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := c.Get(context.Background(), "warm-up"); err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache did not connect")
		}
	}
}

// entry waits until the cache holds an outcome (not a marker) under key,
// and returns it.
func entry(t *testing.T, c *idemredis.Cache, key string) []byte {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		v, err := c.Get(context.Background(), key)
		if err == nil && len(v) > 0 && v[0] == 'R' {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("no outcome cached under %s: %q, %v", key, v, err)
		}
	}
}

// newSealer is an AES-256-GCM sealer with one random key.
func newSealer(t *testing.T) idem.Sealer {
	t.Helper()
	secret := make([]byte, idemseal.KeySize)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	ring, err := idemseal.NewRing(idemseal.Key{ID: "k1", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	return idemseal.New(ring)
}

// paymentID is the id of the payment a 201 body holds.
func paymentID(t *testing.T, body string) int64 {
	t.Helper()
	var p cacheapi.Payment
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	return p.ID
}

// logBuffer is a log's output, safe for the engine's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
