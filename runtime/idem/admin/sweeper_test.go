package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
	"github.com/jackc/pgx/v5"
)

func TestSweeper(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	batch := 0
	insert := func(state string, n int, expired bool) {
		batch++
		t.Helper()
		exp := "now() + interval '1 hour'"
		if expired {
			exp = "now() - interval '1 minute'"
		}
		_, err := db.Exec(ctx, `
			INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
				response_status, response_body, completed_at, lease_expires_at, expires_at)
			SELECT idem_record_id('t', 'op', $1 || '-' || $3::int || '-' || g), 't', 'op', $1 || '-' || $3::int || '-' || g, $1, sha256(g::text::bytea), 'v1',
				CASE WHEN $1 IN ('COMPLETED', 'FAILED_REPLAYABLE') THEN 201 END,
				CASE WHEN $1 IN ('COMPLETED', 'FAILED_REPLAYABLE') THEN '\x00'::bytea END,
				CASE WHEN $1 IN ('COMPLETED', 'FAILED_REPLAYABLE') THEN now() END,
				CASE WHEN $1 = 'IN_PROGRESS' THEN now() + interval '1 minute' END,
				`+exp+`
			FROM generate_series(1, $2::int) g`, state, n, batch)
		if err != nil {
			t.Fatal(err)
		}
	}
	insert("COMPLETED", 250, true) // several pages: the walk crosses them
	insert("FAILED_REPLAYABLE", 3, true)
	insert("FAILED_RETRYABLE", 4, true)
	insert("IN_PROGRESS", 3, true) // a live claim past its ttl: never touched
	insert("UNKNOWN", 2, true)
	insert("COMPLETED", 5, false)
	count := func(where string) int {
		var n int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM idem_records WHERE "+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	var pages int64
	if err := db.QueryRow(ctx, "SELECT pg_relation_size('idem_records') / 8192").Scan(&pages); err != nil || pages < 4 {
		t.Fatalf("the table has %d pages (%v), want 4 or more", pages, err)
	}
	// Within the grace, expired records stay (onExpired: reject still
	// recognises their keys).
	s := admin.NewSweeper(db, admin.SweeperConfig{BatchSize: 10, Pages: 2, Budget: 1, Grace: time.Hour})
	res, err := s.RunOnce(ctx)
	if err != nil || counts(res) != (admin.SweepResult{Unknown: 2}) || res.Pages != pages {
		t.Fatalf("first pass: %+v, %v; want nothing deleted, %d pages walked", res, err, pages)
	}
	// Past the grace they go, in batches of 10, pages 2 at a time.
	if _, err := db.Exec(ctx, "UPDATE idem_records SET expires_at = now() - interval '2 hours' WHERE expires_at < now()"); err != nil {
		t.Fatal(err)
	}
	res, err = s.RunOnce(ctx)
	if err != nil || counts(res) != (admin.SweepResult{Deleted: 257, Unknown: 2}) {
		t.Fatalf("second pass: %+v, %v", res, err)
	}
	if count("state = 'IN_PROGRESS'") != 3 || count("state = 'UNKNOWN'") != 2 || count("state = 'COMPLETED'") != 5 || count("true") != 10 {
		t.Fatal("the sweeper touched live or unexpired records")
	}

	// Run loops until its context ends, and then returns nil.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- admin.NewSweeper(db, admin.SweeperConfig{Interval: 10 * time.Millisecond}).Run(rctx) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestAbandonedClaims: a lease claim whose holder died and whose client never
// retried, found past its key's expiry, becomes UNKNOWN, is counted and
// reported, and is deleted only after a resolution or a configured grace.
// Live claims are left alone.
// leaseEnv is a lease-mode engine serving POST /accounts/{account}/payments
// (operation createPayment, schema version v1, as the engine's own tests
// configure it) over a fresh schema: enough to see how the engine answers
// a key the sweeper changed.
type leaseEnv struct {
	t   *testing.T
	db  *pgtest.DB
	srv *httptest.Server
}

func newLeaseEnv(t *testing.T) *leaseEnv {
	t.Helper()
	p := idem.DefaultPolicy()
	p.Mode = idem.ModeLease
	p.SchemaVersion = "v1"
	op := &idem.Operation{ID: "createPayment", Method: "POST", Pattern: "/accounts/{account}/payments",
		PathParams: []string{"account"}, Policy: p}
	db := pgtest.New(t, pgtest.Options{})
	eng, err := idem.New(db, idem.Config{Operations: []*idem.Operation{op}})
	if err != nil {
		t.Fatal(err)
	}
	prepare := func(body []byte) (idem.Prepared, error) {
		return idem.Prepared{Handler: func(context.Context, pgx.Tx) (*idem.Response, error) {
			return &idem.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, nil
		}}, nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc(op.Method+" "+op.Pattern, func(w http.ResponseWriter, r *http.Request) { eng.Serve(w, r, op, prepare) })
	e := &leaseEnv{t: t, db: db, srv: httptest.NewServer(mux)}
	t.Cleanup(e.srv.Close)
	return e
}

func (e *leaseEnv) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.db.Exec(context.Background(), sql, args...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *leaseEnv) state(key string) idem.State {
	e.t.Helper()
	var s idem.State
	err := e.db.QueryRow(context.Background(), "SELECT state FROM idem_records WHERE idempotency_key = $1", key).Scan(&s)
	if errors.Is(err, pgx.ErrNoRows) {
		return "none"
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// postProblem posts body with key and checks the problem it gets back.
func (e *leaseEnv) postProblem(key, body string, status int, code, reason string) {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+"/accounts/acc-1/payments", strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	var m map[string]any
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" || json.Unmarshal(rb, &m) != nil {
		e.t.Fatalf("status %d, Content-Type %q, body %s: want a problem", resp.StatusCode, ct, rb)
	}
	if resp.StatusCode != status || m["code"] != code || m["reason"] != reason || m["status"] != float64(status) {
		e.t.Fatalf("got %d %v/%v (%s), want %d %s/%s", resp.StatusCode, m["code"], m["reason"], rb, status, code, reason)
	}
}

func newKey() string { return uuid.Must(uuid.NewV7()).String() }

func TestAbandonedClaims(t *testing.T) {
	t.Parallel()
	e := newLeaseEnv(t)
	ctx := context.Background()
	insert := func(key, state, lease, expires string) {
		t.Helper()
		e.exec(`INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
				recovery_point, lease_expires_at, expires_at, attempts, fence)
			VALUES (idem_record_id('', 'createPayment', $1::text), '', 'createPayment', $1::text, $2, sha256(convert_to($1::text, 'UTF8')), 'v1', 'charged', `+lease+`, `+expires+`, 3, 3)`, key, state)
	}
	abandoned, live, young, unknown := newKey(), newKey(), newKey(), newKey()
	insert(abandoned, "IN_PROGRESS", "now() - interval '1 hour'", "now() - interval '1 minute'")
	insert(live, "IN_PROGRESS", "now() + interval '1 minute'", "now() - interval '1 minute'") // its holder still renews
	insert(young, "IN_PROGRESS", "now() - interval '1 minute'", "now() + interval '1 hour'")  // a retry may still come
	insert(unknown, "UNKNOWN", "NULL", "now() - interval '1 minute'")

	var reported []admin.AbandonedClaim
	var passes []admin.SweepResult
	cfg := admin.SweeperConfig{
		OnAbandoned: func(_ context.Context, c admin.AbandonedClaim) { reported = append(reported, c) },
		OnPass:      func(_ context.Context, r admin.SweepResult) { passes = append(passes, r) },
	}
	res, err := admin.NewSweeper(e.db, cfg).RunOnce(ctx)
	if err != nil || counts(res) != (admin.SweepResult{Abandoned: 1, Unknown: 2}) {
		t.Fatalf("first pass: %+v, %v", res, err)
	}
	if len(reported) != 1 || reported[0].Key.Value != abandoned || reported[0].Key.Operation != "createPayment" ||
		reported[0].Attempts != 3 || reported[0].Recovery != "charged" || reported[0].ExpiresAt.IsZero() || reported[0].Key.Since.IsZero() {
		t.Fatalf("reported %+v", reported)
	}
	if len(passes) != 1 || !reflect.DeepEqual(passes[0], res) {
		t.Fatalf("OnPass got %+v", passes)
	}
	for key, want := range map[string]idem.State{abandoned: idem.StateUnknown, live: idem.StateInProgress,
		young: idem.StateInProgress, unknown: idem.StateUnknown} {
		if got := e.state(key); got != want {
			t.Errorf("%s: state %s, want %s", key, got, want)
		}
	}
	// Another payload on the abandoned key is still refused: its outcome is
	// not known.
	e.postProblem(abandoned, `{"amount":2}`, 409, idemproblem.CodeConflict, idemproblem.ReasonConflict)

	// Passes without a grace keep unresolved records, and report them again
	// as waiting, not as newly abandoned.
	res, err = admin.NewSweeper(e.db, cfg).RunOnce(ctx)
	if err != nil || counts(res) != (admin.SweepResult{Unknown: 2}) {
		t.Fatalf("second pass: %+v, %v", res, err)
	}

	// A resolution (what `idemgen records resolve ... expired` does) hands
	// the record to the ordinary expiry rules.
	e.exec(`UPDATE idem_records SET state = 'EXPIRED', fence = fence + 1, expires_at = least(expires_at, now())
		WHERE idempotency_key = $1 AND state = 'UNKNOWN'`, abandoned)
	res, err = admin.NewSweeper(e.db, admin.SweeperConfig{Grace: time.Millisecond}).RunOnce(ctx)
	if err != nil || counts(res) != (admin.SweepResult{Deleted: 1, Unknown: 1}) || e.state(abandoned) != "none" {
		t.Fatalf("after the resolution: %+v, %v, state %s", res, err, e.state(abandoned))
	}

	// With a grace for unresolved records, they go that long after expiry.
	s := admin.NewSweeper(e.db, admin.SweeperConfig{UnknownGrace: time.Hour})
	if res, err = s.RunOnce(ctx); err != nil || counts(res) != (admin.SweepResult{Unknown: 1}) {
		t.Fatalf("within the grace: %+v, %v", res, err)
	}
	e.exec(`UPDATE idem_records SET expires_at = now() - interval '2 hours' WHERE idempotency_key = $1`, unknown)
	if res, err = s.RunOnce(ctx); err != nil || counts(res) != (admin.SweepResult{UnknownDeleted: 1}) || e.state(unknown) != "none" {
		t.Fatalf("past the grace: %+v, %v", res, err)
	}
	if e.state(live) != idem.StateInProgress || e.state(young) != idem.StateInProgress {
		t.Fatal("live claims were touched")
	}
}

// counts is r without what varies from run to run (its duration and the
// sample of live records, see TestSweeperCountsLiveRecords).
func counts(r admin.SweepResult) admin.SweepResult {
	r.Duration, r.Live, r.Pages = 0, nil, 0
	return r
}
