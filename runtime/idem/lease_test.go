package idem_test

import (
	"context"
	"errors"
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
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// blockOnce returns a handler that, on its first call, saves a recovery
// point (lease mode), reports its backend pid and blocks until e.release;
// later calls return 201 "second" at once.
func blockOnce(e *env, saveRecovery bool) idem.Handler {
	var calls atomic.Int64
	return func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
		if calls.Add(1) == 1 {
			if saveRecovery {
				if err := idem.SaveRecoveryPoint(ctx, "charged", []byte("ch_123")); err != nil {
					return nil, err
				}
			}
			var pid int32
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				return nil, err
			}
			e.started <- pid
			<-e.release
			if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
				return nil, err
			}
			return &idem.Response{Status: 201, Body: []byte("first")}, nil
		}
		point, data, ok := idem.RecoveryPointFrom(ctx)
		body := "second"
		if ok {
			body += " after " + point + "/" + string(data)
		}
		return &idem.Response{Status: 201, Body: []byte(body)}, nil
	}
}

// TestZombieCannotCommit: a lease-mode holder whose claim was taken over
// after its lease lapsed cannot store its outcome; its business writes roll
// back and the taker's stand.
func TestZombieCannotCommit(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeLease)
	p.Lease = time.Hour // no background renewal during the test
	e := newEnv(t, p, idem.Config{})
	e.handle("once", blockOnce(e, false))
	key := newKey()
	zombie := e.async(key, payReq{Amount: 1, Behave: "once"})
	waitStarted(t, e)
	if s := e.state(key); s != idem.StateInProgress {
		t.Fatalf("lease claim not committed first: %s", s)
	}
	// The holder stalls past its lease.
	e.exec("UPDATE idem_records SET lease_expires_at = now() - interval '1 second'")
	taker := e.post(key, payReq{Amount: 1, Behave: "once"})
	if taker.Status != 201 || string(taker.Body) != "second" {
		t.Fatalf("taker: %d %s", taker.Status, taker.Body)
	}
	close(e.release)
	r := recv(t, zombie)
	r.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENCY_LEASE_LOST")
	if e.payments() != 1 {
		t.Fatalf("%d payments; want the taker's only", e.payments())
	}
	var attempts, fence int
	if err := e.db.QueryRow(context.Background(), "SELECT attempts, fence FROM idem_records").Scan(&attempts, &fence); err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || fence != 2 {
		t.Fatalf("attempts %d fence %d", attempts, fence)
	}
	if again := e.post(key, payReq{Amount: 1, Behave: "once"}); string(again.Body) != "second" || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", again.Status, again.Body)
	}
}

// TestLeaseRenewal: a handler that outlives its lease keeps its claim while
// it runs, because the engine renews the lease.
func TestLeaseRenewal(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeLease)
	// Renewals are due every 1.3 s; the claim is lost only if none lands
	// for 2.7 s (2 s leases lapsed once in CI, lanes side by side on 2
	// cores with -race). Each renewal error is logged.
	p.Lease = 4 * time.Second
	e := newEnv(t, p, idem.Config{Hooks: idem.Hooks{OnError: logErrors(t).add}})
	outliveLease(t, e, p.Lease)
}

// TestLeaseRenewalThroughPool: when the renewer cannot open a connection of
// its own (the server refuses more clients), it renews through the pool,
// and says why.
func TestLeaseRenewalThroughPool(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeLease)
	p.Lease = 4 * time.Second
	db := pgtest.New(t, pgtest.Options{Migrations: businessSchema, MaxConns: 32})
	var refuse atomic.Bool
	pool := poolOn(t, db, func(c *pgxpool.Config) {
		c.MaxConns = 4
		c.BeforeConnect = func(context.Context, *pgx.ConnConfig) error {
			if refuse.Load() {
				return errors.New("sorry, too many clients already (test)")
			}
			return nil
		}
	})
	// The pool opens its connections, then the server takes no more.
	held := make([]*pgxpool.Conn, 4)
	for i := range held {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held[i] = c
	}
	for _, c := range held {
		c.Release()
	}
	refuse.Store(true)
	errs := logErrors(t)
	e := newEnvWith(t, db, pool, p, idem.Config{Hooks: idem.Hooks{OnError: errs.add}})
	outliveLease(t, e, p.Lease)
	if err := errs.first(); err == nil || !strings.Contains(err.Error(), "open the renewer's connection") ||
		!strings.Contains(err.Error(), "too many clients") || !strings.Contains(err.Error(), "renewed through the pool") {
		t.Fatalf("first error reported: %v; want the refused connection, renewed through the pool", err)
	}
}

// outliveLease runs a handler past the lease its claim was taken with and
// checks the claim held: renewed in the database, a duplicate sent then is
// in flight, and the handler's outcome is the one stored.
func outliveLease(t *testing.T, e *env, lease time.Duration) {
	t.Helper()
	e.handle("once", blockOnce(e, false))
	release := e.releaseOnExit(t)
	key := newKey()
	first := e.async(key, payReq{Amount: 1, Behave: "once"})
	waitStarted(t, e)
	pastFirstLease(t, e, key, lease)
	r := e.post(key, payReq{Amount: 1, Behave: "once"})
	r.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
	release()
	if r := recv(t, first); r.Status != 201 || string(r.Body) != "first" {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}
}

// pastFirstLease waits until the lease key was claimed with has run out by
// the database's clock (the handler started after the claim, so its lease
// ends before started+lease), and checks the claim is still held: renewed,
// with its first fence.
func pastFirstLease(t *testing.T, e *env, key string, lease time.Duration) {
	t.Helper()
	time.Sleep(lease + 250*time.Millisecond)
	var live bool
	var fence int64
	err := e.db.QueryRow(context.Background(),
		"SELECT lease_expires_at > now(), fence FROM idem_records WHERE idempotency_key = $1", strings.ToLower(key)).Scan(&live, &fence)
	if err != nil || !live || fence != 1 {
		t.Fatalf("after the first lease: live %v, fence %d, %v; want a renewed claim", live, fence, err)
	}
}

// TestAtomicCrash kills the backend of an atomic-mode request mid-transaction:
// nothing is left behind, and a retry (sent to another process, as a client
// whose server died would) runs cleanly.
func TestAtomicCrash(t *testing.T) {
	t.Parallel()
	cfg := idem.Config{Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}}
	e := newEnv(t, testPolicy(idem.ModeAtomic), cfg)
	e.handle("once", blockOnce(e, false))
	other := newEnvOn(t, e.db, testPolicy(idem.ModeAtomic), cfg)
	other.handle("once", func(context.Context, pgx.Tx) (*idem.Response, error) {
		return &idem.Response{Status: 201, Body: []byte("second")}, nil
	})
	key := newKey()
	crashed := e.async(key, payReq{Amount: 1, Behave: "once"})
	pid := waitStarted(t, e)
	var ok bool
	if err := e.db.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate backend %d: %v %v", pid, ok, err)
	}
	// The crashed request's process is gone as far as the database knows.
	if n := e.records(); n != 0 {
		t.Fatalf("%d records after the crash", n)
	}
	retry := other.post(key, payReq{Amount: 1, Behave: "once"})
	close(e.release) // the stalled handler finds its connection dead
	if retry.Status != 201 || string(retry.Body) != "second" || retry.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry: %d %s", retry.Status, retry.Body)
	}
	// Its client gets the outcome the retry stored (or, had there been
	// none yet, 503 and a retry with the same key).
	if r := recv(t, crashed); r.Status != 201 || string(r.Body) != "second" || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("crashed request: %d %s", r.Status, r.Body)
	}
	if e.state(key) != idem.StateCompleted || e.payments() != 1 {
		t.Fatalf("state %s, %d payments", e.state(key), e.payments())
	}
}

// TestLeaseCrashRecovery: a lease-mode holder stalls (its process is as good
// as dead) after an external step; the next retry takes the claim over and
// the operation's recovery hook decides.
func TestLeaseCrashRecovery(t *testing.T) {
	t.Parallel()
	for _, decision := range []string{"completed", "not-executed", "unknown", "hook-error"} {
		t.Run(decision, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var seen []idem.Recovery
			next := decision
			hook := func(ctx context.Context, rec idem.Recovery) (idem.Decision, error) {
				if _, ok := idem.KeyFromContext(ctx); !ok {
					return idem.Unknown(), errors.New("no key in the hook's context")
				}
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, rec)
				switch next {
				case "completed":
					return idem.Completed(&idem.Response{Status: 201,
						Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("recovered " + string(rec.Data))}), nil
				case "not-executed":
					return idem.NotExecuted(), nil
				case "hook-error":
					return idem.Decision{}, errors.New("payment provider down")
				}
				return idem.Unknown(), nil
			}
			p := testPolicy(idem.ModeLease)
			p.Lease = time.Hour
			e := newEnv(t, p, idem.Config{
				Recover: map[string]idem.RecoverFunc{"createPayment": hook},
				Hooks:   idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}},
			})
			e.handle("once", blockOnce(e, true))
			// A failed check must not leave the stalled handler blocked: the
			// server's cleanup would wait for it until the suite times out.
			var once sync.Once
			release := func() { once.Do(func() { close(e.release) }) }
			defer release()
			key := newKey()
			stalled := e.async(key, payReq{Amount: 1, Behave: "once"})
			waitStarted(t, e)
			e.exec("UPDATE idem_records SET lease_expires_at = now() - interval '1 second'")

			r := e.post(key, payReq{Amount: 1, Behave: "once"})
			mu.Lock()
			if len(seen) != 1 || !seen[0].HasPoint || seen[0].Point != "charged" || string(seen[0].Data) != "ch_123" || seen[0].Attempts != 2 {
				t.Fatalf("hook saw %+v", seen)
			}
			mu.Unlock()
			switch decision {
			case "completed":
				if r.Status != 201 || string(r.Body) != "recovered ch_123" || r.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("recovered: %d %s %v", r.Status, r.Body, r.Header)
				}
				if e.state(key) != idem.StateCompleted {
					t.Fatal(e.state(key))
				}
				again := e.post(key, payReq{Amount: 1, Behave: "once"})
				if string(again.Body) != "recovered ch_123" || again.Header.Get("Content-Type") != "text/plain" {
					t.Fatalf("replay of the recovered outcome: %s", again.Body)
				}
			case "not-executed":
				if r.Status != 201 || string(r.Body) != "second after charged/ch_123" {
					t.Fatalf("re-executed: %d %s", r.Status, r.Body)
				}
			default: // unknown, hook-error
				r.wantProblem(t, 503, "ERR503_SERVICE_UNAVAILABLE", "IDEMPOTENT_REQUEST_OUTCOME_UNKNOWN")
				if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 1 {
					t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
				}
				if s := e.state(key); s != idem.StateUnknown {
					t.Fatalf("state %s", s)
				}
				// Another payload is still refused while UNKNOWN.
				e.post(key, payReq{Amount: 2}).wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")
				// A later retry asks the hook again; now it knows.
				mu.Lock()
				next = "not-executed"
				mu.Unlock()
				r = e.post(key, payReq{Amount: 1, Behave: "once"})
				if r.Status != 201 || string(r.Body) != "second after charged/ch_123" {
					t.Fatalf("retry after unknown: %d %s", r.Status, r.Body)
				}
				mu.Lock()
				if len(seen) != 2 || seen[1].Attempts != 3 {
					t.Fatalf("hook calls %+v", seen)
				}
				mu.Unlock()
			}
			release()
			recv(t, stalled).wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENCY_LEASE_LOST")
		})
	}
}

func TestRecoveryPoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testPolicy(idem.ModeLease), idem.Config{})
	var calls atomic.Int64
	e.handle("steps", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
		if calls.Add(1) == 1 {
			if _, _, ok := idem.RecoveryPointFrom(ctx); ok {
				return nil, errors.New("fresh request has a recovery point")
			}
			if err := idem.SaveRecoveryPoint(ctx, "step-1", []byte("ref-9")); err != nil {
				return nil, err
			}
			return &idem.Response{Status: 502, Body: []byte("step 2 failed")}, nil
		}
		p, d, ok := idem.RecoveryPointFrom(ctx)
		if !ok {
			return &idem.Response{Status: 200, Body: []byte("from scratch")}, nil
		}
		return &idem.Response{Status: 200, Body: []byte("resumed at " + p + " " + string(d))}, nil
	})
	key := newKey()
	if r := e.post(key, payReq{Amount: 1, Behave: "steps"}); r.Status != 502 {
		t.Fatalf("first: %d", r.Status)
	}
	if r := e.post(key, payReq{Amount: 1, Behave: "steps"}); string(r.Body) != "resumed at step-1 ref-9" {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}

	// Outside a lease-mode handler there is no claim to record against.
	a := newEnvOn(t, e.db, func() idem.Policy { p := testPolicy(idem.ModeAtomic); return p }(), idem.Config{})
	a.op.ID = "atomicOp"
	a.handle("steps", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
		if err := idem.SaveRecoveryPoint(ctx, "x", nil); !errors.Is(err, idem.ErrNoLease) {
			return nil, err
		}
		return &idem.Response{Status: 200, Body: []byte("ok")}, nil
	})
	if r := a.post(newKey(), payReq{Amount: 1, Behave: "steps"}); r.Status != 200 {
		t.Fatalf("atomic: %d %s", r.Status, r.Body)
	}
	if err := idem.SaveRecoveryPoint(context.Background(), "x", nil); !errors.Is(err, idem.ErrNoLease) {
		t.Fatal(err)
	}
}

// TestMaxHoldEndsAStuckHandler: a lease-mode handler blocked on a pool whose
// only connection sits idle in a transaction (the service's own pool, as
// exhausted) gets a context that ends at the operation's maximum hold, with
// ErrHoldExpired as its cause. Its client gets 503 outcome unknown, and the
// claim is left to lapse rather than made FAILED_RETRYABLE: a retry from
// another process takes it over through the recovery hook.
func TestMaxHoldEndsAStuckHandler(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeLease)
	p.Lease, p.MaxHold = time.Second, 2*time.Second
	var hooked atomic.Int64
	cfg := idem.Config{
		Recover: map[string]idem.RecoverFunc{"createPayment": func(context.Context, idem.Recovery) (idem.Decision, error) {
			hooked.Add(1)
			return idem.NotExecuted(), nil
		}},
		Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}},
	}
	a := newEnv(t, p, cfg)
	busy := poolOn(t, a.db, func(c *pgxpool.Config) { c.MaxConns = 1 })
	idle, err := busy.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Runs first (cleanups run last-registered first), so that a handler
	// still waiting when a check fails gets its connection and ends.
	t.Cleanup(func() { _ = idle.Rollback(context.Background()) })
	type seen struct {
		deadline bool
		cause    error
	}
	saw := make(chan seen, 1)
	a.handle("pool", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
		_, deadline := ctx.Deadline()
		var one int
		err := busy.QueryRow(ctx, "SELECT 1").Scan(&one)
		saw <- seen{deadline, context.Cause(ctx)}
		if err != nil {
			return nil, err
		}
		return &idem.Response{Status: 201, Body: []byte("got a connection")}, nil
	})
	b := newEnvOn(t, a.db, p, cfg) // another process
	b.handle("pool", func(context.Context, pgx.Tx) (*idem.Response, error) {
		return &idem.Response{Status: 201, Body: []byte("second")}, nil
	})

	key := newKey()
	recv(t, a.async(key, payReq{Amount: 1, Behave: "pool"})).
		wantProblem(t, 503, "ERR503_SERVICE_UNAVAILABLE", "IDEMPOTENT_REQUEST_OUTCOME_UNKNOWN")
	if s := <-saw; !s.deadline || !errors.Is(s.cause, idem.ErrHoldExpired) {
		t.Errorf("the handler's context: deadline %v, cause %v; want a deadline and ErrHoldExpired", s.deadline, s.cause)
	}
	if s := a.state(key); s != idem.StateInProgress {
		t.Errorf("state %s after the hold ran out; want the claim left IN_PROGRESS to lapse", s)
	}
	r := untilTakenOver(t, b, key, payReq{Amount: 1, Behave: "pool"})
	if r.Status != 201 || string(r.Body) != "second" || hooked.Load() != 1 {
		t.Fatalf("retry: %d %s, recovery hook called %d times; want 201 second after the hook", r.Status, r.Body, hooked.Load())
	}
	if n := a.count("SELECT attempts FROM idem_records"); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
}

// untilTakenOver posts body under key to e until the answer is not "in
// progress" (the claim lapsed), for at most 30 seconds.
func untilTakenOver(t *testing.T, e *env, key string, body payReq) result {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); ; {
		r := e.post(key, body)
		if r.Status != 409 || time.Now().After(end) {
			return r
		}
		r.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFencedOutHolderCannotCommit: two processes, one key. The first
// holder is stuck on something that ignores its context; its renewals stop
// at its maximum hold, its lease lapses, and the other process takes the
// claim over and is still running when the first holder finishes. The first
// holder's outcome must not be stored, nor its business writes committed
// (409 lease lost), and the taker's stand. (A holder that finishes after
// its taker, TestZombieCannotCommit, finds the record final anyway; this
// one finds it IN_PROGRESS under the next fence, so only the fence stops
// it.) Both record stores: pipelined (CompleteOrAbort) and plain
// (Complete).
func TestFencedOutHolderCannotCommit(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "pipelined", true: "plain"}[plain], func(t *testing.T) {
			t.Parallel()
			p := testPolicy(idem.ModeLease)
			p.Lease, p.MaxHold = time.Second, 2*time.Second
			cfg := idem.Config{Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}}
			a := newEnvDB(t, plain, p, cfg)
			var edb idem.DB = a.db
			if plain {
				edb = plainDB{a.db}
			}
			b := newEnvWith(t, a.db, edb, p, cfg) // another process
			stuck := func(e *env, name string, release <-chan struct{}) idem.Handler {
				return func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
					if _, err := tx.Exec(ctx, `INSERT INTO payments (tenant, idem_key, amount) VALUES ('', $1, 1)`, name); err != nil {
						return nil, err
					}
					e.started <- 0
					<-release // ignores ctx
					return &idem.Response{Status: 201, Body: []byte(name)}, nil
				}
			}
			releaseA, releaseB := make(chan struct{}), make(chan struct{})
			var onceA, onceB sync.Once
			freeA, freeB := func() { onceA.Do(func() { close(releaseA) }) }, func() { onceB.Do(func() { close(releaseB) }) }
			t.Cleanup(freeA)
			t.Cleanup(freeB)
			a.handle("stuck", stuck(a, "first holder", releaseA))
			b.handle("stuck", stuck(b, "taker", releaseB))

			key := newKey()
			first := a.async(key, payReq{Amount: 1, Behave: "stuck"})
			waitStarted(t, a)
			// Retry from the other process until one attempt takes the claim
			// over (its handler starts) instead of answering in progress.
			var taker <-chan result
			for end := time.Now().Add(30 * time.Second); taker == nil; {
				ch := b.async(key, payReq{Amount: 1, Behave: "stuck"})
				select {
				case <-b.started:
					taker = ch
				case r := <-ch:
					r.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
					if time.Now().After(end) {
						t.Fatal("the stuck holder's claim was never taken over: its lease outlived its maximum hold")
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			freeA() // the first holder finishes while the taker runs
			recv(t, first).wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENCY_LEASE_LOST")
			freeB()
			if r := recv(t, taker); r.Status != 201 || string(r.Body) != "taker" {
				t.Fatalf("taker: %d %s", r.Status, r.Body)
			}
			// Each run writes two payments in its transaction: the env's
			// handler's and the one that names it.
			if n, first := a.count(`SELECT count(*) FROM payments WHERE idem_key = 'taker'`),
				a.count(`SELECT count(*) FROM payments WHERE idem_key = 'first holder'`); n != 1 || first != 0 || a.payments() != 2 {
				t.Errorf("%d payments, %d the taker's, %d the first holder's; want the taker's only", a.payments(), n, first)
			}
			if r := a.post(key, payReq{Amount: 1, Behave: "stuck"}); string(r.Body) != "taker" || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay: %d %s", r.Status, r.Body)
			}
		})
	}
}

// errLog is a Hooks.OnError that keeps what it is given and logs it to t
// while the test runs: a failed test shows them.
type errLog struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
	errs []error
}

func logErrors(t *testing.T) *errLog {
	l := &errLog{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return l
}

func (l *errLog) add(_ context.Context, _ *idem.Operation, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
	if !l.done {
		l.t.Log(err)
	}
}

func (l *errLog) first() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) == 0 {
		return nil
	}
	return l.errs[0]
}
