package idem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// poolOn opens another pool on db's schema; edit adjusts its config.
func poolOn(t *testing.T, db *pgtest.DB, edit func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = db.Schema
	if edit != nil {
		edit(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestLeaseRenewalUnderSaturation: lease handlers hold every connection of
// their pool for several leases while requests queue for more; another
// process keeps retrying the same keys. The holders are alive, so no claim
// may be taken over: renewals must not wait for a free pool connection.
func TestLeaseRenewalUnderSaturation(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeLease)
	// Renewals are due every 1.3 s and a lease lapses only if none lands
	// for 2.7 s: 300 ms leases lapsed at load 25 with -race, 1 s leases
	// once in CI (lanes side by side on 2 cores). A renewal that waited for
	// a pool connection would still wait the holders' 6 s out.
	p.Lease = 4 * time.Second
	db := pgtest.New(t, pgtest.Options{Migrations: businessSchema, MaxConns: 32})
	small := poolOn(t, db, func(c *pgxpool.Config) { c.MaxConns = 4 })
	a := newEnvWith(t, db, small, p, idem.Config{Hooks: idem.Hooks{OnError: logErrors(t).add}})
	var mu sync.Mutex
	holding := map[string]chan struct{}{} // closed when the key's holder runs
	a.handle("hold", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
		k, _ := idem.KeyFromContext(ctx)
		mu.Lock()
		close(holding[k.Value])
		mu.Unlock()
		select {
		case <-time.After(3 * p.Lease / 2):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return &idem.Response{Status: 201, Body: []byte("held")}, nil
	})
	b := newEnvOn(t, db, p, idem.Config{}) // the other process
	b.handle("hold", func(context.Context, pgx.Tx) (*idem.Response, error) {
		return &idem.Response{Status: 201, Body: []byte("taken over")}, nil
	})

	const n = 8 // twice the pool
	keys := make([]string, n)
	results := make([]<-chan result, n)
	for i := range keys {
		keys[i] = newKey()
		holding[keys[i]] = make(chan struct{})
	}
	for i := range keys {
		results[i] = a.async(keys[i], payReq{Amount: 1, Behave: "hold"})
	}
	// Retry every claimed key from the other process until the holders are
	// done: any 201 there is a takeover.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var takeovers atomic.Int64
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-holding[k]:
			case <-stop:
				return
			}
			for {
				select {
				case <-stop:
					return
				case <-time.After(p.Lease / 3):
				}
				if r := b.post(k, payReq{Amount: 1, Behave: "hold"}); r.Status == 201 && r.Header.Get("Idempotent-Replayed") != "true" {
					takeovers.Add(1)
				}
			}
		}()
	}
	for i, ch := range results {
		r := recv(t, ch)
		if r.Status != 201 || string(r.Body) != "held" {
			t.Errorf("holder %d: %d %s", i, r.Status, r.Body)
		}
	}
	close(stop)
	wg.Wait()
	if n := takeovers.Load(); n > 0 || b.runs.Load() > 0 {
		t.Errorf("%d live claims taken over (%d handler runs in the other process)", n, b.runs.Load())
	}
	if n := a.count("SELECT count(*) FROM idem_records WHERE attempts > 1"); n > 0 {
		t.Errorf("%d records were claimed more than once", n)
	}
}

// TestHostileScopeValues: values that go into the record key or the
// fingerprint and that PostgreSQL (or the service's own text columns) cannot
// hold are refused with a 400 naming them, before any statement runs.
func TestHostileScopeValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{
		Scope: func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
	})
	cases := []struct {
		name, path, tenant, where string
	}{
		{"path NUL", "/accounts/%00/payments", "", `path parameter "account"`},
		{"path invalid UTF-8", "/accounts/%ff/payments", "", `path parameter "account"`},
		{"query NUL", "/accounts/a/payments?note=%00", "", `query parameter "note"`},
		{"query name invalid UTF-8", "/accounts/a/payments?%fe=1", "", "query parameter"},
		{"tenant invalid UTF-8", "/accounts/a/payments", "t\xff", "tenant"},
	}
	for _, c := range cases {
		var opts []reqOpt
		if c.tenant != "" {
			opts = append(opts, withHeader("X-Tenant", c.tenant))
		}
		r := e.postTo(c.path, newKey(), payReq{Amount: 1}, opts...)
		if r.Status != 400 {
			t.Errorf("%s: %d %s, want 400", c.name, r.Status, r.Body)
			continue
		}
		m := r.problem(t)
		if d, _ := m["detail"].(string); m["code"] != idemproblem.CodeInvalidRequest || !strings.Contains(d, c.where) {
			t.Errorf("%s: problem %v does not name %s", c.name, m, c.where)
		}
	}
	if n := e.records(); n != 0 {
		t.Errorf("%d records left behind", n)
	}
	if n := e.runs.Load(); n != 0 {
		t.Errorf("handler ran %d times", n)
	}
	// A tenant is otherwise free text: the same key in two tenants is two records.
	k := newKey()
	for _, tn := range []string{"tenant-ä", "tenant-b"} {
		if r := e.post(k, payReq{Amount: 1}, withHeader("X-Tenant", tn)); r.Status != 201 {
			t.Fatalf("tenant %q: %d %s", tn, r.Status, r.Body)
		}
	}
}

// TestScopeBounds: the tenant and the operation ID are part of the records'
// primary key, whose B-tree entries PostgreSQL bounds (2704 bytes). The
// longest tenant and operation ID allowed, with the longest opaque key, fit;
// a longer tenant, or one with a control character, from the request is the
// client's 400 naming the limit, sent before any statement runs; from the
// service's principal (PrincipalScope) it is a 500 whose cause is logged;
// and no log line echoes a long value. Both modes: lease mode writes the key
// first (Claim), atomic mode last (InsertOutcome).
func TestScopeBounds(t *testing.T) {
	t.Parallel()
	for _, mode := range []idem.Mode{idem.ModeLease, idem.ModeAtomic} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var logs bytes.Buffer
			p := testPolicy(mode)
			p.KeyFormat = idem.KeyFormatOpaque
			e := newEnv(t, p, idem.Config{
				Scope: func(r *http.Request) (string, error) {
					if org := r.Header.Get("X-Org"); org != "" {
						// As if a security hook had authenticated a principal of that organisation.
						ctx := idem.WithPrincipal(r.Context(), org)
						return idem.PrincipalScope(func(org string) string { return org })(r.WithContext(ctx))
					}
					return r.Header.Get("X-Tenant"), nil
				},
				Logger: slog.New(slog.NewJSONHandler(&lockedWriter{mu: &mu, w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			e.op.ID = strings.Repeat("o", idem.MaxOperationIDBytes)
			if err := e.eng.Register(e.op); err != nil {
				t.Fatal(err)
			}

			longest := strings.Repeat("ä", idem.MaxTenantBytes/2) + "a"
			// Text PostgreSQL cannot compress into an index entry, as a
			// repeated letter would be.
			huge := strings.Map(func(rune) rune { return rune('a' + rand.IntN(26)) }, strings.Repeat(" ", 3000))
			key := newKey() + strings.Repeat("k", 255-36)
			for i, want := range []string{"", "true"} {
				r := e.post(key, payReq{Amount: 1}, withHeader("X-Tenant", longest))
				if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != want {
					t.Fatalf("longest tenant, request %d: %d %s (replayed %q)", i+1, r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
				}
			}

			for _, c := range []struct{ name, tenant, detail string }{
				{"one byte too long", longest + "b", "256 bytes, more than the 255 allowed"},
				{"3000 bytes", huge, "3000 bytes, more than the 255 allowed"},
				{"a control character", "acme\tcorp", "control character"},
			} {
				r := e.post(newKey(), payReq{Amount: 1}, withHeader("X-Tenant", c.tenant))
				if r.Status != 400 {
					t.Errorf("tenant %s: %d %s, want 400", c.name, r.Status, r.Body)
					continue
				}
				m := r.problem(t)
				if d, _ := m["detail"].(string); m["code"] != idemproblem.CodeInvalidRequest || !strings.HasPrefix(d, "tenant: ") || !strings.Contains(d, c.detail) {
					t.Errorf("tenant %s: problem %v, want a detail naming the tenant and %q", c.name, m, c.detail)
				}
			}
			// What the engine echoes of a request is clipped: a parameter name
			// it refuses is named by its first bytes and its length.
			r := e.postTo("/accounts/a/payments?"+huge+"%ff=1", newKey(), payReq{Amount: 1})
			if d, _ := r.problem(t)["detail"].(string); r.Status != 400 || len(d) > 400 || !strings.Contains(d, huge[:100]) || !strings.Contains(d, "(3001 bytes)") {
				t.Errorf("a long query parameter name: %d, detail of %d bytes: %.300s", r.Status, len(d), d)
			}
			// The principal's tenant is the service's data: its error, not the client's.
			r = e.post(newKey(), payReq{Amount: 1}, withHeader("X-Org", huge))
			r.wantProblem(t, 500, idemproblem.CodeInternal, idemproblem.ReasonInternal)

			if n := e.records(); n != 1 {
				t.Errorf("%d records, want the longest tenant's only", n)
			}
			if n := e.runs.Load(); n != 1 {
				t.Errorf("the handler ran %d times, want once", n)
			}
			mu.Lock()
			defer mu.Unlock()
			cause := false
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				if len(line) > 2048 || strings.Contains(line, huge[:40]) {
					t.Errorf("a log line of %d bytes echoes a long value: %.200s...", len(line), line)
				}
				cause = cause || strings.Contains(line, "3000 bytes, more than the 255 allowed")
			}
			if !cause {
				t.Errorf("the principal's tenant: no log line says why:\n%s", logs.String())
			}
		})
	}
}

// countingConn counts the bytes PostgreSQL sends.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// TestClassificationSkipsStoredBody: a request that is refused because its
// key belongs to another payload, or is in flight, does not read the stored
// response body from the database; a replay does.
func TestClassificationSkipsStoredBody(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			t.Parallel()
			db := pgtest.New(t, pgtest.Options{Migrations: businessSchema})
			var read atomic.Int64
			pool := poolOn(t, db, func(c *pgxpool.Config) {
				d := &net.Dialer{}
				c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
					conn, err := d.DialContext(ctx, network, addr)
					if err != nil {
						return nil, err
					}
					return countingConn{Conn: conn, n: &read}, nil
				}
			})
			var edb idem.DB = pool
			if plain {
				edb = plainDB{pool}
			}
			e := newEnvWith(t, db, edb, testPolicy(idem.ModeAtomic), idem.Config{})
			const size = 256 << 10
			big := make([]byte, size)
			for i := range big {
				big[i] = 'a' + byte(i%26)
			}
			e.handle("big", func(context.Context, pgx.Tx) (*idem.Response, error) {
				return &idem.Response{Status: 201, Body: big}, nil
			})
			key := newKey()
			if r := e.post(key, payReq{Amount: 1, Behave: "big"}); r.Status != 201 || len(r.Body) != size {
				t.Fatalf("first: %d, %d bytes", r.Status, len(r.Body))
			}
			before := read.Load()
			const conflicts = 20
			for i := range conflicts {
				e.post(key, payReq{Amount: 2 + i, Behave: "big"}).wantProblem(t, 409, idemproblem.CodeConflict, idemproblem.ReasonConflict)
			}
			if got := read.Load() - before; got > conflicts*size/8 {
				t.Errorf("%d conflicting requests read %d bytes from PostgreSQL; the stored body is %d bytes", conflicts, got, size)
			}
			before = read.Load()
			if r := e.post(key, payReq{Amount: 1, Behave: "big"}); r.Header.Get("Idempotent-Replayed") != "true" || len(r.Body) != size {
				t.Fatalf("replay: %d, %d bytes", r.Status, len(r.Body))
			}
			if got := read.Load() - before; got < size {
				t.Errorf("a replay read %d bytes; the body alone is %d", got, size)
			}
		})
	}
}

// TestRetryAfterUsesDatabaseClock: the database's clock runs an hour ahead of
// the application's. A duplicate of a request in flight is told to retry
// after the lease by the database's reckoning, not after an hour and a lease.
func TestRetryAfterUsesDatabaseClock(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{Migrations: businessSchema})
	ctx := context.Background()
	// Unqualified now() resolves to this schema's function when pg_catalog
	// comes after the schema in search_path.
	if _, err := db.Exec(ctx, `CREATE FUNCTION now() RETURNS timestamptz LANGUAGE sql STABLE
		AS 'SELECT pg_catalog.now() + interval ''1 hour'''`); err != nil {
		t.Fatal(err)
	}
	skewed := poolOn(t, db, func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["search_path"] = db.Schema + ", pg_catalog"
	})
	var dbNow time.Time
	if err := skewed.QueryRow(ctx, "SELECT now()").Scan(&dbNow); err != nil || time.Until(dbNow) < 50*time.Minute {
		t.Fatalf("the database clock is not skewed: %v %v", dbNow, err)
	}
	p := testPolicy(idem.ModeLease)
	p.Lease = 20 * time.Second
	e := newEnvWith(t, db, skewed, p, idem.Config{})
	key := newKey()
	first := e.async(key, payReq{Amount: 1, Behave: "block"})
	waitStarted(t, e)
	r := e.post(key, payReq{Amount: 1, Behave: "block"})
	r.wantProblem(t, 409, idemproblem.CodeConflict, idemproblem.ReasonInProgress)
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > int(p.Lease/time.Second) {
		t.Errorf("Retry-After %q, want 1..%d seconds (the lease)", r.Header.Get("Retry-After"), int(p.Lease/time.Second))
	}
	close(e.release)
	if r := recv(t, first); r.Status != 201 {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}
}

// TestStoredResponseBound: a response too large to store for replay is not
// sent and not committed: the client gets a 500, the key may run again, and
// the error says why.
func TestStoredResponseBound(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			var reported []error
			var mu sync.Mutex
			e := newEnv(t, testPolicy(mode), idem.Config{MaxStoredResponseBytes: 1000,
				Hooks: idem.Hooks{OnError: func(_ context.Context, _ *idem.Operation, err error) {
					mu.Lock()
					reported = append(reported, err)
					mu.Unlock()
				}}})
			size := 1000
			e.handle("sized", func(context.Context, pgx.Tx) (*idem.Response, error) {
				return &idem.Response{Status: 201, Body: make([]byte, size)}, nil
			})
			key := newKey()
			if r := e.post(key, payReq{Amount: 1, Behave: "sized"}); r.Status != 201 || len(r.Body) != 1000 {
				t.Fatalf("at the bound: %d, %d bytes", r.Status, len(r.Body))
			}
			size = 1001
			key = newKey()
			e.post(key, payReq{Amount: 1, Behave: "sized"}).wantProblem(t, 500, idemproblem.CodeInternal, idemproblem.ReasonInternal)
			if s := e.state(key); s != idem.StateFailedRetryable {
				t.Errorf("state %s, want FAILED_RETRYABLE", s)
			}
			if n := e.count("SELECT count(*) FROM payments WHERE idem_key = $1", key); n != 0 {
				t.Errorf("%d payments committed for the unstorable response", n)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reported) != 1 || !errors.Is(reported[0], idem.ErrResponseTooLarge) {
				t.Errorf("OnError got %v", reported)
			}
		})
	}
	if _, err := idem.New(plainDB{}, idem.Config{MaxStoredResponseBytes: -1}); err == nil {
		t.Error("a negative bound was accepted")
	}
}

// TestAtomicDuplicatesAcrossProcesses: two processes get the same request
// at once, many times over. The record is written once, at commit, so both
// may run the handler, but exactly one execution commits and every client
// gets its response; inside one process, duplicates wait for the one that
// runs.
func TestAtomicDuplicatesAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			t.Parallel()
			p := testPolicy(idem.ModeAtomic)
			p.InFlight = idem.InFlightWait
			p.Wait = 20 * time.Second
			a := newEnvDB(t, plain, p, idem.Config{})
			var bdb idem.DB = a.db
			if plain {
				bdb = plainDB{a.db}
			}
			b := newEnvWith(t, a.db, bdb, p, idem.Config{})
			for _, e := range []*env{a, b} {
				e.handle("slow", func(context.Context, pgx.Tx) (*idem.Response, error) {
					time.Sleep(20 * time.Millisecond)
					return &idem.Response{Status: 201, Body: []byte("paid")}, nil
				})
			}
			const keys, perProcess = 10, 20
			bad := duplicatesFromTwo(t, a, b, keys, perProcess, payReq{Amount: 3, Behave: "slow"}, paid)
			if n := a.payments(); n != keys || bad > 0 {
				t.Fatalf("%d payments committed for %d keys (%d bad answers)", n, keys, bad)
			}
			runs := a.runs.Load() + b.runs.Load()
			if runs < keys || runs > 2*keys {
				t.Fatalf("%d handler runs for %d keys in 2 processes", runs, keys)
			}
			t.Logf("%d keys × %d requests: %d handler runs, %d committed", keys, 2*perProcess, runs, keys)
		})
	}
}

// TestAtomicRetriesOfAFailedKeyAcrossProcesses: a key's first attempt
// fails (its record is FAILED_RETRYABLE), then two processes retry it at
// once, many times over. Each retry that runs the handler replaces the
// record in its own transaction; only the first to commit may, and a retry
// that finds the record completed meanwhile must roll its writes back and
// replay, so one payment is committed per key.
func TestAtomicRetriesOfAFailedKeyAcrossProcesses(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeAtomic)
	p.InFlight = idem.InFlightWait
	p.Wait = 20 * time.Second
	quiet := idem.Config{Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}}
	a := newEnv(t, p, quiet)
	b := newEnvOn(t, a.db, p, quiet)
	var failing sync.Map // keys whose next attempt fails
	for _, e := range []*env{a, b} {
		e.handle("retried", func(ctx context.Context, _ pgx.Tx) (*idem.Response, error) {
			k, _ := idem.KeyFromContext(ctx)
			if _, fail := failing.LoadAndDelete(k.Value); fail {
				return nil, errors.New("the first attempt fails")
			}
			time.Sleep(20 * time.Millisecond) // let the retries overlap
			return &idem.Response{Status: 201, Body: []byte("paid")}, nil
		})
	}
	const keys, perProcess = 10, 10
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range keys {
		key := newKey()
		failing.Store(key, true)
		if r := a.post(key, payReq{Amount: 3, Behave: "retried"}); r.Status != 500 || a.state(key) != idem.StateFailedRetryable {
			t.Fatalf("first attempt: %d %s, record %s; want 500 and FAILED_RETRYABLE", r.Status, r.Body, a.state(key))
		}
		for i := range 2 * perProcess {
			e := a
			if i%2 == 1 {
				e = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r := e.post(key, payReq{Amount: 3, Behave: "retried"}); r.Status != 201 || string(r.Body) != "paid" {
					bad.Add(1)
					t.Errorf("retry: %d %s", r.Status, r.Body)
				}
			}()
		}
	}
	wg.Wait()
	if n := a.payments(); n != keys || bad.Load() > 0 {
		t.Fatalf("%d payments committed for %d keys (%d bad answers)", n, keys, bad.Load())
	}
	t.Logf("%d failed keys × %d retries: %d handler runs, %d committed", keys, 2*perProcess, a.runs.Load()+b.runs.Load(), keys)
}

// TestAtomicLoserOfBusinessConflictReplays: the business table has its own
// unique constraint on the key. A duplicate in another process blocks on
// the first's row, then fails on that constraint; its client gets the
// first's response, not the constraint error.
func TestAtomicLoserOfBusinessConflictReplays(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeAtomic)
	a := newEnv(t, p, idem.Config{Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}})
	b := newEnvOn(t, a.db, p, idem.Config{Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}})
	a.exec("CREATE TABLE charges (idem_key text PRIMARY KEY)")
	hold, inserted := make(chan struct{}), make(chan struct{})
	charge := func(wait bool) idem.Handler {
		return func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
			k, _ := idem.KeyFromContext(ctx)
			if _, err := tx.Exec(ctx, "INSERT INTO charges VALUES ($1)", k.Value); err != nil {
				return nil, err
			}
			if wait {
				close(inserted)
				<-hold
			}
			return &idem.Response{Status: 201, Body: []byte("charged once")}, nil
		}
	}
	a.handle("charge", charge(true))
	b.handle("charge", charge(false))
	key := newKey()
	first := a.async(key, payReq{Amount: 1, Behave: "charge"})
	<-inserted
	second := b.async(key, payReq{Amount: 1, Behave: "charge"})
	// The second waits on the first's uncommitted row.
	for a.count(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
		AND query = 'INSERT INTO charges VALUES ($1)' AND pid <> pg_backend_pid()`) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	close(hold)
	r1, r2 := recv(t, first), recv(t, second)
	if r1.Status != 201 || r2.Status != 201 || string(r2.Body) != "charged once" || r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("first %d %s; second %d %s %v", r1.Status, r1.Body, r2.Status, r2.Body, r2.Header)
	}
	if n := a.count("SELECT count(*) FROM charges"); n != 1 || a.state(key) != idem.StateCompleted {
		t.Fatalf("%d charges, state %s", n, a.state(key))
	}
}

// TestLeaseRenewalFailure: the renewer cannot reach the database (its
// connection cannot be opened, and the pool's only one is the handler's)
// while a lease handler runs past its lease.
// The failure is reported to Hooks.OnError, and the handler is cancelled with
// ErrLeaseLost once its lease has run out — another request may have taken
// the claim over — instead of running on as if it still held it.
func TestLeaseRenewalFailure(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeLease)
	p.Lease = 300 * time.Millisecond
	db := pgtest.New(t, pgtest.Options{Migrations: businessSchema})
	var refuse atomic.Bool
	pool := poolOn(t, db, func(c *pgxpool.Config) {
		c.MaxConns = 1
		c.BeforeConnect = func(context.Context, *pgx.ConnConfig) error {
			if refuse.Load() {
				return errors.New("injected: no new connections")
			}
			return nil
		}
	})
	var mu sync.Mutex
	var reported []error
	e := newEnvWith(t, db, pool, p, idem.Config{Hooks: idem.Hooks{
		OnError: func(_ context.Context, _ *idem.Operation, err error) {
			mu.Lock()
			reported = append(reported, err)
			mu.Unlock()
		}}})
	// Open the pool's connection first: the request then takes it, the
	// renewer is refused its own and waits for the pool's in vain.
	var conns []*pgxpool.Conn
	for range 1 {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	refuse.Store(true)
	cause := make(chan error, 1)
	e.handle("hold", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
		select {
		case <-time.After(20 * p.Lease):
			cause <- nil
			return &idem.Response{Status: 201, Body: []byte("ran on")}, nil
		case <-ctx.Done():
			cause <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}
	})
	start := time.Now()
	r := e.post(newKey(), payReq{Amount: 1, Behave: "hold"})
	if err := <-cause; !errors.Is(err, idem.ErrLeaseLost) {
		t.Errorf("handler ended with %v after %v, want ErrLeaseLost once its unrenewed lease ran out", err, time.Since(start))
	}
	if r.Status == 201 {
		t.Errorf("the request succeeded: %s", r.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, err := range reported {
		found = found || strings.Contains(err.Error(), "renew leases")
	}
	if !found {
		t.Errorf("OnError got %v, want the failed renewal", reported)
	}
}
