package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// businessSchema is the test service's own table, written through the
// engine's transaction.
var businessSchema = fstest.MapFS{
	"9000_payments.up.sql": {Data: []byte(`CREATE TABLE payments (
		id serial PRIMARY KEY, tenant text NOT NULL, idem_key text NOT NULL, amount int NOT NULL)`)},
}

// payReq is the test operation's body. Behave picks what the handler does.
type payReq struct {
	Amount int    `json:"amount"`
	Behave string `json:"behave,omitempty"`
	Note   string `json:"note,omitempty"`
	Meta   any    `json:"metadata,omitempty"`
}

// env is one test service: a database, an engine and an HTTP server with a
// payments operation at POST /accounts/{account}/payments.
type env struct {
	t    *testing.T
	db   *pgtest.DB
	eng  *idem.Engine
	op   *idem.Operation
	srv  *httptest.Server
	runs atomic.Int64 // handler executions
	// since holds the Key.Since of the last execution.
	since atomic.Value

	mu      sync.Mutex
	custom  map[string]idem.Handler
	started chan int32    // "block": the handler's backend pid, once it wrote
	release chan struct{} // "block": closed (or sent to) to let it finish
	unblock sync.Once     // closes release once (see releaseOnExit)
}

// releaseOnExit closes e.release, once, when the test ends (a failed check
// must not leave a blocked handler for the server's cleanup to wait on) or
// when the returned function is called.
func (e *env) releaseOnExit(t *testing.T) func() {
	release := func() { e.unblock.Do(func() { close(e.release) }) }
	t.Cleanup(release)
	return release
}

func testPolicy(mode idem.Mode) idem.Policy {
	p := idem.DefaultPolicy()
	p.Mode = mode
	p.ReplayStatuses = []int{402, 409, 422}
	p.SchemaVersion = "v1"
	p.FingerprintExclude = []string{"/metadata/sentAt"}
	return p
}

func testOp(p idem.Policy) *idem.Operation {
	return &idem.Operation{
		ID: "createPayment", Method: "POST", Pattern: "/accounts/{account}/payments",
		PathParams: []string{"account"}, Policy: p,
	}
}

func newEnv(t *testing.T, p idem.Policy, cfg idem.Config) *env {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{Migrations: businessSchema, MaxConns: 32})
	return newEnvOn(t, db, p, cfg)
}

// newEnvOn starts another service on the same database: a second process,
// or the next deployment.
func newEnvOn(t *testing.T, db *pgtest.DB, p idem.Policy, cfg idem.Config) *env {
	t.Helper()
	return newEnvWith(t, db, db, p, cfg)
}

// plainDB hides the pool's Acquire: the engine then sends its statements one
// per round trip instead of pipelining them on a connection of its own.
type plainDB struct{ idem.DB }

// newEnvDB is newEnv on a pool (pipelined) or, with plain, on plainDB.
func newEnvDB(t *testing.T, plain bool, p idem.Policy, cfg idem.Config) *env {
	t.Helper()
	if !plain {
		return newEnv(t, p, cfg)
	}
	db := pgtest.New(t, pgtest.Options{Migrations: businessSchema, MaxConns: 32})
	return newEnvWith(t, db, plainDB{db}, p, cfg)
}

func newEnvWith(t *testing.T, db *pgtest.DB, edb idem.DB, p idem.Policy, cfg idem.Config) *env {
	t.Helper()
	e := &env{t: t, db: db, op: testOp(p), custom: map[string]idem.Handler{},
		started: make(chan int32, 200), release: make(chan struct{})}
	cfg.Operations = append(cfg.Operations, e.op)
	eng, err := idem.New(edb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.eng = eng
	mux := http.NewServeMux()
	mux.HandleFunc(e.op.Method+" "+e.op.Pattern, func(w http.ResponseWriter, r *http.Request) {
		e.eng.Serve(w, r, e.op, e.prepare)
	})
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) handle(behave string, h idem.Handler) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.custom[behave] = h
}

// prepare leaves Prepared.Canonical nil: the engine fingerprints the raw
// request, as for a hand-written handler.
func (e *env) prepare(body []byte) (idem.Prepared, error) {
	h, err := e.handler(body)
	return idem.Prepared{Handler: h}, err
}

func (e *env) handler(body []byte) (idem.Handler, error) {
	var req payReq
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, idem.InvalidRequest("body", err)
	}
	if req.Amount <= 0 {
		return nil, idem.InvalidRequest("body: amount", errors.New("must be positive"))
	}
	if req.Behave == "invalid" { // what a generated decoder finds in a request that breaks its schema
		return nil, &idemproblem.ValidationError{Violations: []idemproblem.Violation{
			{In: "body", Pointer: "#/metadata/order~1id", Rule: "required", Detail: "is required"},
			{In: "body", Pointer: "#/note", Rule: "maxLength", Detail: "must be at most 10 characters long"},
		}}
	}
	e.mu.Lock()
	custom := e.custom[req.Behave]
	e.mu.Unlock()
	return func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
		e.runs.Add(1)
		k, ok := idem.KeyFromContext(ctx)
		if !ok {
			k = idem.Key{Value: "-"}
		}
		e.since.Store(k.Since)
		var id int
		if err := tx.QueryRow(ctx, `INSERT INTO payments (tenant, idem_key, amount) VALUES ($1, $2, $3) RETURNING id`,
			k.Tenant, k.Value, req.Amount).Scan(&id); err != nil {
			return nil, err
		}
		if custom != nil {
			return custom(ctx, tx)
		}
		switch {
		case req.Behave == "error":
			return nil, errors.New("secret database detail")
		case req.Behave == "panic":
			panic("handler bug")
		case req.Behave == "block":
			var pid int32
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				return nil, err
			}
			e.started <- pid
			<-e.release
			// The transaction may be dead by now (crash tests): use it.
			if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
				return nil, err
			}
		case strings.HasPrefix(req.Behave, "status:"):
			st, _ := strconv.Atoi(strings.TrimPrefix(req.Behave, "status:"))
			return &idem.Response{Status: st, Header: http.Header{"Content-Type": {"application/json"}},
				Body: []byte(fmt.Sprintf(`{"status":%d,"id":%d}`, st, id))}, nil
		}
		return &idem.Response{
			Status: http.StatusCreated,
			Header: http.Header{
				"Content-Type": {"application/json"},
				"Location":     {fmt.Sprintf("/payments/%d", id)},
				"Set-Cookie":   {"session=secret"},
				"X-Not-Stored": {"1"},
			},
			Body: []byte(fmt.Sprintf(`{"id":%d,"amount":%d}`, id, req.Amount)),
		}, nil
	}, nil
}

// result is one HTTP exchange.
type result struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r result) problem(t *testing.T) map[string]any {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d, Content-Type %q, body %s: want a problem", r.Status, ct, r.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// wantProblem checks status, code and reason of a problem response.
func (r result) wantProblem(t *testing.T, status int, code, reason string) {
	t.Helper()
	m := r.problem(t)
	if r.Status != status || m["code"] != code || m["reason"] != reason || m["status"] != float64(status) {
		t.Fatalf("got %d %v/%v (%s), want %d %s/%s", r.Status, m["code"], m["reason"], r.Body, status, code, reason)
	}
}

type reqOpt func(*http.Request)

func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Add(k, v) } }

// post sends a payment request with key (none when "").
func (e *env) post(key string, body any, opts ...reqOpt) result {
	return e.postTo("/accounts/acc-1/payments", key, body, opts...)
}

func (e *env) postTo(path, key string, body any, opts ...reqOpt) result {
	e.t.Helper()
	var b []byte
	switch v := body.(type) {
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			e.t.Fatal(err)
		}
	}
	req, err := http.NewRequest("POST", e.srv.URL+path, bytes.NewReader(b))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Errorf("post: %v", err)
		return result{}
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Errorf("post: read: %v", err)
	}
	return result{Status: resp.StatusCode, Header: resp.Header, Body: rb}
}

// async posts in the background.
func (e *env) async(key string, body any, opts ...reqOpt) <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- e.post(key, body, opts...) }()
	return ch
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) records() int  { return e.count("SELECT count(*) FROM idem_records") }
func (e *env) payments() int { return e.count("SELECT count(*) FROM payments") }

func (e *env) state(key string) idem.State {
	e.t.Helper()
	var s idem.State
	err := e.db.QueryRow(context.Background(),
		"SELECT state FROM idem_records WHERE idempotency_key = $1", strings.ToLower(key)).Scan(&s)
	if errors.Is(err, pgx.ErrNoRows) {
		return "none"
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.db.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatal(err)
	}
}

func newKey() string { return uuid.Must(uuid.NewV7()).String() }

func waitStarted(t *testing.T, e *env) int32 {
	t.Helper()
	select {
	case pid := <-e.started:
		return pid
	case <-time.After(30 * time.Second):
		t.Fatal("handler did not start")
		return 0
	}
}

func recv(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("request did not finish")
		return result{}
	}
}

// emptySchema returns a pool on a schema with nothing in it.
func emptySchema(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return pgtest.New(t, pgtest.Options{Bare: true}).Pool
}

// firstExecutions posts n fresh keys to e, each of which must answer 201,
// and returns the keys and each key's response body.
func firstExecutions(t *testing.T, e *env, n int) ([]string, map[string]string) {
	t.Helper()
	keys := make([]string, n)
	bodies := map[string]string{}
	for i := range keys {
		keys[i] = newKey()
		r := e.post(keys[i], payReq{Amount: i + 1})
		if r.Status != 201 {
			t.Fatalf("first execution %d: %d %s", i, r.Status, r.Body)
		}
		bodies[keys[i]] = string(r.Body)
	}
	return keys, bodies
}

// duplicatesFromTwo sends, for each of keys fresh keys, perProcess
// requests with body to a and as many to b, all at once, and reports each
// answer that ok refuses; it returns how many it refused.
func duplicatesFromTwo(t *testing.T, a, b *env, keys, perProcess int, body payReq, ok func(result) bool) int64 {
	t.Helper()
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range keys {
		key := newKey()
		for i := range 2 * perProcess {
			e := a
			if i%2 == 1 {
				e = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r := e.post(key, body); !ok(r) {
					bad.Add(1)
					t.Errorf("%d %s", r.Status, r.Body)
				}
			}()
		}
	}
	wg.Wait()
	return bad.Load()
}

// paid is the answer of the "slow" handler the duplicate tests install.
func paid(r result) bool { return r.Status == 201 && string(r.Body) == "paid" }
