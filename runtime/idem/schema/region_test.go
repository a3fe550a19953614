package schema_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// regionDB is one region's database for these tests: a database of its
// own on DATABASE_URL's server (the schemas idem_a and idem_b have fixed
// names, so two regions cannot share one), set up by SetupRegion.
// Replication is not running: a test applies a peer's row itself by
// writing the replica table, as the subscription's apply worker would.
type regionDB struct {
	*pgxpool.Pool
	region idem.Region
}

func newRegionDBs(t *testing.T) (a, b *regionDB) {
	t.Helper()
	base := pgtest.URL(t)
	ctx := context.Background()
	var rb [4]byte
	if _, err := rand.Read(rb[:]); err != nil {
		t.Fatal(err)
	}
	prefix := "rt_" + hex.EncodeToString(rb[:])
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	open := func(name string, peer string) *regionDB {
		dbname := prefix + "_" + name
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbname); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c, err := pgx.Connect(context.Background(), base)
			if err != nil {
				t.Logf("drop database %s: %v", dbname, err)
				return
			}
			defer c.Close(context.Background())
			if _, err := c.Exec(context.Background(), "DROP DATABASE "+dbname+" WITH (FORCE)"); err != nil {
				t.Logf("drop database %s: %v", dbname, err)
			}
		})
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + dbname
		cfg, err := pgxpool.ParseConfig(u.String())
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = schema.RegionSchema(name) + ",public"
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		r := idem.Region{Name: name, Peers: []string{peer}}
		if err := schema.SetupRegion(ctx, pool, r); err != nil {
			t.Fatal(err)
		}
		// Twice: a restarted service runs it again.
		if err := schema.SetupRegion(ctx, pool, r); err != nil {
			t.Fatalf("second SetupRegion: %v", err)
		}
		if _, err := pool.Exec(ctx, `CREATE TABLE payments (idem_key text PRIMARY KEY, amount int NOT NULL,
			reversed boolean NOT NULL DEFAULT false)`); err != nil {
			t.Fatal(err)
		}
		return &regionDB{Pool: pool, region: r}
	}
	return open("a", "b"), open("b", "a")
}

// put writes key's record of region `of` into d: its own table when of is
// d's region, else the replica of of's records (what the apply worker does).
func (d *regionDB) put(t *testing.T, of, key, state string, created time.Time) {
	t.Helper()
	final := state == "COMPLETED" || state == "FAILED_REPLAYABLE"
	_, err := d.Exec(context.Background(), `INSERT INTO `+schema.RegionSchema(of)+`.idem_records
		(id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
		 response_status, response_body, completed_at, expires_at, created_at)
		VALUES (idem_record_id('', 'createPayment', $1), '', 'createPayment', $1, $2, sha256('x'::bytea), 'v1',
		 CASE WHEN $3 THEN 201 END, CASE WHEN $3 THEN '{}'::bytea END, CASE WHEN $3 THEN now() END,
		 now() + interval '2 hours', $4)
		ON CONFLICT (id) DO UPDATE SET state = excluded.state, response_status = excluded.response_status,
		 response_body = excluded.response_body, completed_at = excluded.completed_at`, key, state, final, created)
	if err != nil {
		t.Fatalf("put %s record of %s into region %s: %v", state, of, d.region.Name, err)
	}
}

// conflict returns what d recorded about key (ok false: nothing).
func (d *regionDB) conflict(t *testing.T, key string) (idem.RegionConflict, bool) {
	t.Helper()
	cs, err := d.region.Conflicts(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Key == key {
			return c, true
		}
	}
	return idem.RegionConflict{}, false
}

// TestRegions runs the region tests on one pair of databases set up by
// SetupRegion: the conflict triggers and rule it installs, seen through
// idem.Region's audit and compensations, and a region engine's home check
// over the replica tables it creates. One pair for all (creating a
// database costs about a second): each uses keys of its own, and they run
// in an order where no test's queued compensations reach another's drain.
func TestRegions(t *testing.T) {
	a, b := newRegionDBs(t)
	t.Run("CompensationDrain", func(t *testing.T) { testRegionCompensationDrain(t, b) })
	t.Run("Home", func(t *testing.T) { testRegionHome(t, b) })
	t.Run("DetectsConcurrentWriters", func(t *testing.T) { testRegionDetectsConcurrentWriters(t, b) })
	t.Run("ConflictRule", func(t *testing.T) { testRegionConflictRule(t, a, b) })
	t.Run("PruneConflicts", func(t *testing.T) { testRegionPruneConflicts(t, b) })
}

// testRegionPruneConflicts: pruning keeps every queued compensation and
// every conflict younger than the bound.
func testRegionPruneConflicts(t *testing.T, b *regionDB) {
	ctx := context.Background()
	count := func(where string) int {
		var n int
		if err := b.QueryRow(ctx, "SELECT count(*) FROM idem_b.idem_region_conflicts WHERE "+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	queued, settled := count("compensation = 'QUEUED'"), count("compensation <> 'QUEUED'")
	if queued == 0 || settled == 0 {
		t.Fatalf("the earlier subtests left %d queued and %d settled conflicts; want some of each", queued, settled)
	}
	if n, err := b.region.PruneConflicts(ctx, b, time.Hour); err != nil || n != 0 {
		t.Fatalf("prune older than an hour: %d, %v; want 0", n, err)
	}
	if _, err := b.Exec(ctx, "UPDATE idem_b.idem_region_conflicts SET updated_at = now() - interval '2 hours'"); err != nil {
		t.Fatal(err)
	}
	n, err := b.region.PruneConflicts(ctx, b, time.Hour)
	if err != nil || n != int64(settled) {
		t.Fatalf("prune: %d, %v; want %d", n, err, settled)
	}
	if got := count("true"); got != queued {
		t.Fatalf("%d conflicts left, want the %d queued", got, queued)
	}
}

// testRegionConflictRule: whatever order the two copies of a key arrive
// in, both regions record the same winner by the rule (COMPLETED over
// FAILED_REPLAYABLE over a claim over FAILED_RETRYABLE/EXPIRED; then the
// region that sorts first), and only a completed loser queues a
// compensation, in its own region.
func testRegionConflictRule(t *testing.T, a, b *regionDB) {
	early, late := time.Now().Add(-time.Minute), time.Now()
	cases := []struct {
		aState, bState string
		aAt, bAt       time.Time
		winner         string
		queued         string // region whose own execution must be undone; "" none
	}{
		{"COMPLETED", "IN_PROGRESS", late, early, "a", ""},
		{"IN_PROGRESS", "COMPLETED", early, late, "b", ""},
		{"UNKNOWN", "COMPLETED", early, late, "b", ""},
		{"COMPLETED", "FAILED_RETRYABLE", late, early, "a", ""},
		{"FAILED_REPLAYABLE", "COMPLETED", early, late, "b", ""},
		{"FAILED_RETRYABLE", "FAILED_REPLAYABLE", early, late, "b", ""},
		{"UNKNOWN", "FAILED_RETRYABLE", late, early, "a", ""},
		{"EXPIRED", "IN_PROGRESS", early, late, "b", ""},
		// Two executions: the region decides, before the timestamps.
		{"COMPLETED", "COMPLETED", late, early, "a", "b"},
		{"COMPLETED", "COMPLETED", early, late, "a", "b"},
		{"IN_PROGRESS", "IN_PROGRESS", late, early, "a", ""},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s_%s", c.aState, c.bState), func(t *testing.T) {
			key := fmt.Sprintf("rule-%d", i)
			// In a, its own record first, then b's arrives; in b, a's
			// record arrives before b's own: both triggers decide.
			a.put(t, "a", key, c.aState, c.aAt)
			a.put(t, "b", key, c.bState, c.bAt)
			b.put(t, "a", key, c.aState, c.aAt)
			b.put(t, "b", key, c.bState, c.bAt)
			ca, okA := a.conflict(t, key)
			cb, okB := b.conflict(t, key)
			if !okA || !okB {
				t.Fatalf("conflict recorded in a: %v, in b: %v; want both", okA, okB)
			}
			if ca.Winner != c.winner || cb.Winner != c.winner {
				t.Errorf("winner: a says %s, b says %s; want %s", ca.Winner, cb.Winner, c.winner)
			}
			if ca.State != c.aState || ca.PeerState != c.bState || cb.State != c.bState || cb.PeerState != c.aState {
				t.Errorf("states: a %s/%s, b %s/%s", ca.State, ca.PeerState, cb.State, cb.PeerState)
			}
			wantA, wantB := "NONE", "NONE"
			switch c.queued {
			case "a":
				wantA = "QUEUED"
			case "b":
				wantB = "QUEUED"
			}
			if ca.Compensation != wantA || cb.Compensation != wantB {
				t.Errorf("compensation: a %s, b %s; want %s, %s", ca.Compensation, cb.Compensation, wantA, wantB)
			}
		})
	}

	t.Run("a claim that completes later", func(t *testing.T) {
		// b completed while a's lease claim ran: b wins, nothing to undo.
		// Then a completes too: two executions, a wins by region, b queues.
		key := "later"
		a.put(t, "a", key, "IN_PROGRESS", early)
		a.put(t, "b", key, "COMPLETED", late)
		b.put(t, "b", key, "COMPLETED", late)
		b.put(t, "a", key, "IN_PROGRESS", early)
		if cb, _ := b.conflict(t, key); cb.Winner != "b" || cb.Compensation != "NONE" {
			t.Fatalf("before a completes: b says winner %s, compensation %s", cb.Winner, cb.Compensation)
		}
		a.put(t, "a", key, "COMPLETED", early) // a's own update
		b.put(t, "a", key, "COMPLETED", early) // its replication to b
		ca, _ := a.conflict(t, key)
		cb, _ := b.conflict(t, key)
		if ca.Winner != "a" || cb.Winner != "a" || ca.Compensation != "NONE" || cb.Compensation != "QUEUED" {
			t.Fatalf("after: a %s/%s, b %s/%s; want winner a, b QUEUED", ca.Winner, ca.Compensation, cb.Winner, cb.Compensation)
		}
		// A compensation once queued stays: b's record expiring later does
		// not undo the fact that it ran.
		b.put(t, "b", key, "EXPIRED", late)
		if cb, _ := b.conflict(t, key); cb.Compensation != "QUEUED" {
			t.Fatalf("after b's record expired: compensation %s, want QUEUED", cb.Compensation)
		}
	})

	t.Run("no conflict for a key one region holds", func(t *testing.T) {
		a.put(t, "a", "alone", "COMPLETED", late)
		b.put(t, "a", "alone", "COMPLETED", late)
		if _, ok := a.conflict(t, "alone"); ok {
			t.Fatal("a recorded a conflict for its own key")
		}
		if _, ok := b.conflict(t, "alone"); ok {
			t.Fatal("b recorded a conflict for a's replicated key")
		}
	})
}

// testRegionDetectsConcurrentWriters: a key's own record and its peer's
// copy written at the same time, each in a transaction that cannot see
// the other's uncommitted row: the later one waits for the earlier to
// commit and records the conflict.
func testRegionDetectsConcurrentWriters(t *testing.T, b *regionDB) {
	ctx := context.Background()
	key := "race"
	local, err := b.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Rollback(ctx)
	if _, err := local.Exec(ctx, `INSERT INTO idem_b.idem_records (id, tenant, operation, idempotency_key, state, fingerprint,
		schema_version, response_status, response_body, completed_at, expires_at)
		VALUES (idem_record_id('', 'createPayment', $1), '', 'createPayment', $1, 'COMPLETED', sha256('x'::bytea), 'v1',
		201, '{}'::bytea, now(), now() + interval '2 hours')`, key); err != nil {
		t.Fatal(err)
	}
	// The apply worker's side, on a connection of its own, as a replica
	// session (the trigger is ALWAYS; session_replication_role is what
	// the apply worker runs with).
	applied := make(chan error, 1)
	apply, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer apply.Release()
	var applyPID int32
	if err := apply.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&applyPID); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := apply.Exec(ctx, `SET session_replication_role = replica;
			INSERT INTO idem_a.idem_records (id, tenant, operation, idempotency_key, state, fingerprint,
			schema_version, response_status, response_body, completed_at, expires_at)
			VALUES (idem_record_id('', 'createPayment', 'race'), '', 'createPayment', 'race', 'COMPLETED', sha256('x'::bytea), 'v1',
			201, '{}'::bytea, now(), now() + interval '2 hours');
			SET session_replication_role = origin`)
		applied <- err
	}()
	// Wait until the apply side either waits for a lock or is done.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting bool
		if err := b.QueryRow(ctx, "SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1",
			applyPID).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting || len(applied) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := local.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	c, ok := b.conflict(t, key)
	if !ok {
		t.Fatal("two concurrent writers of one key: no conflict recorded")
	}
	if c.Winner != "a" || c.Compensation != "QUEUED" {
		t.Fatalf("winner %s, compensation %s; want a, QUEUED", c.Winner, c.Compensation)
	}
}

// testRegionCompensationDrain: a queued compensation is handed to the
// service once, in the transaction that marks it done; a failing one
// stays queued.
func testRegionCompensationDrain(t *testing.T, b *regionDB) {
	ctx := context.Background()
	now := time.Now()
	for _, k := range []string{"dup-1", "dup-2"} {
		if _, err := b.Exec(ctx, "INSERT INTO payments (idem_key, amount) VALUES ($1, 5)", k); err != nil {
			t.Fatal(err)
		}
		b.put(t, "b", k, "COMPLETED", now)
		b.put(t, "a", k, "COMPLETED", now)
	}
	b.put(t, "b", "fine", "IN_PROGRESS", now)
	b.put(t, "a", "fine", "COMPLETED", now)

	boom := errors.New("ledger closed")
	n, err := b.region.DrainCompensations(ctx, b, 0, func(ctx context.Context, tx pgx.Tx, c idem.RegionConflict) error {
		if _, err := tx.Exec(ctx, "UPDATE payments SET reversed = true WHERE idem_key = $1", c.Key); err != nil {
			return err
		}
		return boom
	})
	if n != 0 || !errors.Is(err, boom) {
		t.Fatalf("failing compensation: n %d, err %v", n, err)
	}
	var reversed int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM payments WHERE reversed").Scan(&reversed); err != nil {
		t.Fatal(err)
	}
	if reversed != 0 {
		t.Fatalf("a failed compensation's writes committed (%d reversed)", reversed)
	}
	var seen []string
	n, err = b.region.DrainCompensations(ctx, b, 0, func(ctx context.Context, tx pgx.Tx, c idem.RegionConflict) error {
		seen = append(seen, c.Key)
		if c.Winner != "a" || c.State != "COMPLETED" || c.PeerState != "COMPLETED" || c.Peer != "a" {
			t.Errorf("conflict handed over: %+v", c)
		}
		_, err := tx.Exec(ctx, "UPDATE payments SET reversed = true WHERE idem_key = $1", c.Key)
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("drain: n %d, err %v; want 2", n, err)
	}
	if err := b.QueryRow(ctx, "SELECT count(*) FROM payments WHERE reversed").Scan(&reversed); err != nil {
		t.Fatal(err)
	}
	if reversed != 2 {
		t.Fatalf("%d payments reversed, want 2 (%v)", reversed, seen)
	}
	if n, err := b.region.DrainCompensations(ctx, b, 0, func(context.Context, pgx.Tx, idem.RegionConflict) error {
		t.Error("a compensation handed over twice")
		return nil
	}); n != 0 || err != nil {
		t.Fatalf("second drain: %d, %v", n, err)
	}
	for _, k := range []string{"dup-1", "dup-2"} {
		if c, _ := b.conflict(t, k); c.Compensation != "DONE" || c.CompensatedAt == nil {
			t.Fatalf("%s: compensation %s at %v", k, c.Compensation, c.CompensatedAt)
		}
	}
}

// regionPolicy is the atomic-mode policy package idem's own tests use.
func regionPolicy() idem.Policy {
	p := idem.DefaultPolicy()
	p.Mode = idem.ModeAtomic
	p.ReplayStatuses = []int{402, 409, 422}
	p.SchemaVersion = "v1"
	p.FingerprintExclude = []string{"/metadata/sentAt"}
	return p
}

func newKey() string { return uuid.Must(uuid.NewV7()).String() }

// regionServer serves POST /pay through an engine of region d.
func regionServer(t *testing.T, d *regionDB, cfg idem.Config) (*httptest.Server, *int) {
	t.Helper()
	runs := new(int)
	op := &idem.Operation{ID: "createPayment", Method: "POST", Pattern: "/pay", Policy: regionPolicy()}
	cfg.Operations = []*idem.Operation{op}
	eng, err := idem.New(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		eng.Serve(w, r, op, func(body []byte) (idem.Prepared, error) {
			return idem.Prepared{Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				*runs++
				k, _ := idem.KeyFromContext(ctx)
				if _, err := tx.Exec(ctx, "INSERT INTO payments (idem_key, amount) VALUES ($1, 1)", k.Value); err != nil {
					return nil, err
				}
				return &idem.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}},
					Body: []byte(`{"ok":true}`)}, nil
			}}, nil
		})
	}))
	t.Cleanup(srv.Close)
	return srv, runs
}

func postKey(t *testing.T, srv *httptest.Server, key string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/pay", bytes.NewReader([]byte(`{"amount":1}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(body)
}

// testRegionHome: a region engine names the key's home region on its
// answers, and refuses (421, naming it) a key whose record replicated in
// from another region, running nothing.
func testRegionHome(t *testing.T, b *regionDB) {
	srv, runs := regionServer(t, b, idem.Config{Region: &idem.Region{Name: "b", Peers: []string{"a"}}})

	key, fromA, both := newKey(), newKey(), newKey()
	st, h, body := postKey(t, srv, key)
	if st != http.StatusCreated || h.Get(idem.HomeRegionHeader) != "b" {
		t.Fatalf("new key: %d, home %q: %s", st, h.Get(idem.HomeRegionHeader), body)
	}
	st, h, _ = postKey(t, srv, key)
	if st != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" || h.Get(idem.HomeRegionHeader) != "b" {
		t.Fatalf("replay: %d, replayed %q, home %q", st, h.Get("Idempotent-Replayed"), h.Get(idem.HomeRegionHeader))
	}

	// A key region a holds (its record replicated here).
	b.put(t, "a", fromA, "COMPLETED", time.Now())
	st, h, body = postKey(t, srv, fromA)
	if st != http.StatusMisdirectedRequest || h.Get(idem.HomeRegionHeader) != "a" ||
		!strings.Contains(body, idemproblem.ReasonWrongRegion) {
		t.Fatalf("a's key sent to b: %d, home %q: %s", st, h.Get(idem.HomeRegionHeader), body)
	}
	if *runs != 1 {
		t.Fatalf("handler ran %d times, want 1 (the misdirected key ran)", *runs)
	}
	var n int
	if err := b.QueryRow(context.Background(), "SELECT count(*) FROM idem_b.idem_records WHERE idempotency_key = $1", fromA).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("the misdirected key left a record in b")
	}
	// A key both regions hold (an earlier duplicate): served here (a
	// conflict: the stored record has another request's fingerprint).
	b.put(t, "b", both, "COMPLETED", time.Now())
	b.put(t, "a", both, "COMPLETED", time.Now())
	if st, h, _ := postKey(t, srv, both); st != http.StatusConflict || h.Get(idem.HomeRegionHeader) != "b" {
		t.Fatalf("key held by both: %d, home %q", st, h.Get(idem.HomeRegionHeader))
	}

	t.Run("without Region nothing changes", func(t *testing.T) {
		srv, _ := regionServer(t, b, idem.Config{})
		st, h, _ := postKey(t, srv, newKey())
		if st != http.StatusCreated || h.Get(idem.HomeRegionHeader) != "" {
			t.Fatalf("%d, home %q", st, h.Get(idem.HomeRegionHeader))
		}
	})
	t.Run("a search path that misses the region's schema", func(t *testing.T) {
		cfg := b.Config().Copy()
		// The peer's replica first: the engine would write into it.
		cfg.ConnConfig.RuntimeParams["search_path"] = "idem_a,idem_b"
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		srv, runs := regionServer(t, &regionDB{Pool: pool, region: b.region}, idem.Config{Region: &idem.Region{Name: "b", Peers: []string{"a"}}})
		st, _, _ := postKey(t, srv, newKey())
		if st != http.StatusInternalServerError || *runs != 0 {
			t.Fatalf("%d, %d runs; want 500 and none", st, *runs)
		}
	})
}
