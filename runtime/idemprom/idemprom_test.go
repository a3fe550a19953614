package idemprom_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/idemprom"
	"github.com/idemgen/idemgen/runtime/idemredis"
	"github.com/idemgen/idemgen/runtime/internal/redistest"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

var schema = fstest.MapFS{"9000_things.up.sql": {Data: []byte(`CREATE TABLE things (id serial PRIMARY KEY, n int NOT NULL)`)}}

// service is one engine with a lease-mode operation whose handler blocks
// while the body says so, served over HTTP with the metrics at /metrics.
type service struct {
	t       *testing.T
	db      *pgtest.DB
	srv     *httptest.Server
	started chan struct{}
	release chan struct{}
}

func newService(t *testing.T, opts idemprom.Options) (*service, *idemprom.Metrics) {
	return newServiceWith(t, opts, idem.Config{})
}

// newServiceWith is newService with cfg's Cache.
func newServiceWith(t *testing.T, opts idemprom.Options, cfg idem.Config) (*service, *idemprom.Metrics) {
	db := pgtest.New(t, pgtest.Options{Migrations: schema})
	pol := idem.DefaultPolicy()
	pol.Mode, pol.Lease, pol.SchemaVersion = idem.ModeLease, 5*time.Second, "v1"
	op := &idem.Operation{ID: "createThing", Method: "POST", Pattern: "/things", Policy: pol}
	m := idemprom.New(opts)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, idemprom.NewOutboxCollector(db, "", 0))
	eng, err := idem.New(db, idem.Config{
		Operations: []*idem.Operation{op},
		Observers:  []idem.Observer{m},
		Scope:      func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		Cache:      cfg.Cache,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &service{t: t, db: db, started: make(chan struct{}, 10), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST /things", func(w http.ResponseWriter, r *http.Request) {
		eng.Serve(w, r, op, func(body []byte) (idem.Prepared, error) {
			return idem.Prepared{Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				if bytes.Contains(body, []byte("block")) {
					s.started <- struct{}{}
					<-s.release
				}
				var id int
				if err := tx.QueryRow(ctx, `INSERT INTO things (n) VALUES (1) RETURNING id`).Scan(&id); err != nil {
					return nil, err
				}
				return &idem.Response{Status: 201, Body: []byte(fmt.Sprintf(`{"id":%d}`, id))}, nil
			}}, nil
		})
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s, m
}

func (s *service) post(key, tenant, body string) int {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.srv.URL+"/things", strings.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Tenant", tenant)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (s *service) scrape() string {
	s.t.Helper()
	resp, err := http.Get(s.srv.URL + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestMetricsAfterAScriptedSequence runs execute, replay, conflict, in
// flight and expiry (and an outbox event left pending) and scrapes /metrics
// over HTTP: every counter has exactly the expected value.
func TestMetricsAfterAScriptedSequence(t *testing.T) {
	s, m := newService(t, idemprom.Options{TenantLabel: true, MaxTenants: 1})
	ctx := context.Background()
	k1, k2, k3 := uuid.NewString(), uuid.NewString(), uuid.NewString()

	want := func(status, got int, what string) {
		t.Helper()
		if got != status {
			t.Fatalf("%s: %d, want %d", what, got, status)
		}
	}
	want(201, s.post(k1, "acme", `{"n":1}`), "execute")
	want(201, s.post(k1, "acme", `{"n":1}`), "replay")
	want(409, s.post(k1, "acme", `{"n":2}`), "conflict")
	// Another tenant's record under the same key; beyond MaxTenants (1) its
	// label is "_other".
	want(201, s.post(k1, "globex", `{"n":1}`), "another tenant")
	done := make(chan int)
	go func() { done <- s.post(k2, "acme", `{"block":true}`) }()
	<-s.started
	want(409, s.post(k2, "acme", `{"block":true}`), "in flight")
	close(s.release)
	want(201, <-done, "the blocked first request")
	want(201, s.post(k3, "acme", `{"n":3}`), "k3")
	if _, err := s.db.Exec(ctx, `UPDATE idem_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, k3); err != nil {
		t.Fatal(err)
	}
	want(201, s.post(k3, "acme", `{"n":3}`), "expired, executed again")
	// One outbox event, pending.
	tx, _ := s.db.Begin(ctx)
	kctx := idem.ContextWithKey(ctx, idem.Key{Operation: "createThing", Value: k1})
	ev := cloudevents.New()
	ev.SetType("things.created")
	ev.SetSource("/things")
	if err := events.Enqueue(kctx, tx, ev); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// A sweeper pass, with one claim whose lease lapsed.
	if _, err := s.db.Exec(ctx, `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version, lease_expires_at, expires_at)
		VALUES (idem_record_id('', 'createThing', 'stuck'), '', 'createThing', 'stuck', 'IN_PROGRESS', sha256('x'), 'v1', now() - interval '1 minute', now() + interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.NewSweeper(s.db, admin.SweeperConfig{}).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := admin.NewSweeper(s.db, admin.SweeperConfig{}).RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveSweep(ctx, res)

	body := s.scrape()
	exact := []string{
		`idem_requests_total{operation="createThing",outcome="executed"} 4`,
		`idem_requests_total{operation="createThing",outcome="replayed"} 1`,
		`idem_requests_total{operation="createThing",outcome="conflict"} 1`,
		`idem_requests_total{operation="createThing",outcome="in_flight"} 1`,
		`idem_requests_total{operation="createThing",outcome="expired_executed"} 1`,
		`idem_new_keys_total{operation="createThing",tenant="acme"} 4`,
		`idem_new_keys_total{operation="createThing",tenant="_other"} 1`,
		`idem_conflicts_total{operation="createThing",tenant="acme"} 1`,
		`idem_stored_response_bytes_count{operation="createThing"} 5`,
		`idem_replay_age_seconds_count{operation="createThing"} 1`,
		`idem_phase_duration_seconds_count{operation="createThing",phase="handler"} 5`,
		`idem_phase_duration_seconds_count{operation="createThing",phase="replay"} 1`,
		`idem_requests_in_flight{operation="createThing"} 0`,
		`idem_outbox_pending 1`,
		`idem_outbox_dead 0`,
		`idem_outbox_up 1`,
		`idem_records{state="IN_PROGRESS"} 1`,
		`idem_records{state="UNKNOWN"} 0`,
		`idem_records_abandoned 1`,
		`idem_records_unresolved 0`,
		`idem_sweeper_pass_duration_seconds_count 1`,
	}
	for _, line := range exact {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", grep(body, "idem_"))
	}
	// The exposition is well formed and follows the naming conventions.
	if problems, err := testutil.CollectAndLint(m); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func grep(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestCacheMetrics: with a Redis cache, a first execution is a miss and its
// replay a hit (ratio 0.5); with Redis killed, a request falls back to
// PostgreSQL, the failed call is counted and the ratio falls to 1/3. Named
// as the founding design names them under Namespace "idempotency". A
// record write that lost on the primary key counts as a violation.
func TestCacheMetrics(t *testing.T) {
	srv := redistest.Start(t)
	// A second per call, not the default 25 ms: a call that times out on a
	// loaded machine falls back and is counted as such, not as the miss or
	// hit this test counts (a killed Redis refuses at once either way).
	cache, err := idemredis.New(srv.URL, idemredis.Options{Prefix: "m" + uuid.NewString()[:8] + ":", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cache.Close)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := cache.Get(context.Background(), "warm-up"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache did not connect")
		}
	}
	s, m := newServiceWith(t, idemprom.Options{Namespace: "idempotency"}, idem.Config{Cache: cache})
	k := uuid.NewString()
	for i, want := range []int{201, 201} {
		if st := s.post(k, "", `{"n":1}`); st != want {
			t.Fatalf("request %d: %d", i, st)
		}
	}
	want := `idempotency_cache_hit_ratio 0.5
idempotency_cache_requests_total{operation="createThing",result="hit"} 1
idempotency_cache_requests_total{operation="createThing",result="miss"} 1
`
	// The outcome is counted once the response is written: the client
	// may scrape before that.
	got := ""
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = grep(s.scrape(), "idempotency_cache_"); got == want {
			break
		}
	}
	if got != want {
		t.Fatalf("after a miss and a hit:\n%s\nwant\n%s", got, want)
	}
	srv.Kill()
	if st := s.post(uuid.NewString(), "", `{"n":2}`); st != 201 {
		t.Fatalf("with Redis killed: %d", st)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = s.scrape(); strings.Contains(got, `result="fallback"} 1`) {
			break
		}
	}
	if !strings.Contains(got, "idempotency_cache_hit_ratio 0.3333333333333333\n") ||
		!strings.Contains(got, `idempotency_cache_requests_total{operation="createThing",result="fallback"} 1`+"\n") ||
		!strings.Contains(got, `idempotency_cache_errors_total{operation="createThing"}`) {
		t.Fatalf("after a fallback:\n%s", grep(got, "idempotency_cache_"))
	}
	m.ObserveOutcome(&idem.Operation{ID: "createThing"}, idem.Outcome{Raced: true})
	if got := grep(s.scrape(), "idempotency_db_violations_total"); got != `idempotency_db_violations_total{operation="createThing"} 1`+"\n" {
		t.Fatalf("violations: %q", got)
	}
	if problems, err := testutil.CollectAndLint(m); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
