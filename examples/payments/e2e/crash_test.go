package e2e

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/idemclient"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// serviceProc runs a binary of the example (the payments service, against
// one schema and one gateway; the shop) and restarts it on the same
// address.
type serviceProc struct {
	t      *testing.T
	bin    string
	addr   string
	env    []string
	mu     sync.Mutex
	proc   *harness.Process
	starts int
	logs   []string // of the runs that ended
}

func startService(t *testing.T, dbURL, gatewayURL string, env ...string) *serviceProc {
	t.Helper()
	return startBinary(t, harness.ServicePackage, append([]string{"DATABASE_URL=" + dbURL, "GATEWAY_URL=" + gatewayURL}, env...)...)
}

// startBinary builds the binary of the example's package pkg and runs it
// with env, as startService runs the payments service.
func startBinary(t *testing.T, pkg string, env ...string) *serviceProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := harness.BuildPackage(ctx, t.TempDir(), pkg, raceEnabled)
	if err != nil {
		t.Fatal(err)
	}
	s := &serviceProc{t: t, bin: bin, env: env}
	// The port FreeAddr found free may be taken before the service binds
	// it (by another test's outgoing connection: the tests run side by
	// side); the first start tries another port then. Restarts keep the
	// service's address.
	for attempt := 1; ; attempt++ {
		if s.addr, err = harness.FreeAddr(); err != nil {
			t.Fatal(err)
		}
		err = s.tryStart()
		if err == nil {
			break
		}
		if attempt == 5 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("service start %d: %s was taken, trying another port", attempt, s.addr)
	}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.proc != nil && !s.proc.Exited() {
			if err := s.proc.Stop(20 * time.Second); err != nil {
				t.Errorf("service stop: %v", err)
			}
		}
		if t.Failed() && s.proc != nil {
			t.Logf("service log (last run):\n%s", s.proc.Logs())
		}
	})
	return s
}

func (s *serviceProc) start() {
	if err := s.tryStart(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *serviceProc) tryStart() error {
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	p, err := harness.Start(ctx, s.bin, s.addr, s.env...)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.starts++
	s.mu.Unlock()
	return nil
}

// kill9 kills the service with SIGKILL: no graceful shutdown, no deferred
// code, transactions cut off mid-flight.
func (s *serviceProc) kill9() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	p.Kill()
	s.mu.Lock()
	s.logs = append(s.logs, p.Logs())
	s.mu.Unlock()
}

// recoveries counts, over every run so far, the payments recorded with a
// charge an earlier, killed attempt made.
func (s *serviceProc) recoveries() int {
	n := 0
	for _, l := range s.allLogs() {
		n += strings.Count(l, "recording a charge made by an earlier attempt")
	}
	return n
}

func (s *serviceProc) url() string { return "http://" + s.addr }

// allLogs returns the logs of every run so far, the current one last.
func (s *serviceProc) allLogs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(append([]string(nil), s.logs...), s.proc.Logs())
}

// TestProcessCrash runs the service as a real process and kills it with
// SIGKILL while requests are in flight.
func TestProcessCrash(t *testing.T) {
	t.Parallel()
	// The schema is migrated and recorded as the service's own start-up
	// would, so every restart of the process migrates nothing.
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
	pool, dbURL := db.Pool, db.URL
	gw := gateway.New() // in this process: it outlives the service
	gwSrv := httptest.NewServer(gw.Handler())
	t.Cleanup(gwSrv.Close)
	svc := startService(t, dbURL, gwSrv.URL)
	c := &harness.Client{URL: svc.url(), HTTP: &http.Client{Timeout: 10 * time.Second}}
	want := map[string]int64{}

	// A stuck lease-mode claim: the gateway charges, the service dies before
	// it records the payment. The claim stays IN_PROGRESS until its lease
	// (5s in openapi.yaml) lapses; then a retry takes it over, the recovery
	// hook finds the charge at the gateway, and the payment is recorded
	// with it: the card is not charged again.
	t.Run("stuck claim recovered after the lease", func(t *testing.T) {
		key := harness.NewKey()
		want[key] = 4321
		recovered := svc.recoveries()
		release := gw.Hold() // charged, never answered: the service dies first
		go func() { _, _ = c.Do(context.Background(), "POST", "/payments", key, newPayment(4321)) }()
		waitFor(t, "the gateway to charge", func() bool { _, ok, _ := gw.Lookup(context.Background(), key); return ok })
		svc.kill9()
		release()
		svc.start()

		// Until the lease lapses, retries are told the request is in
		// progress (unless restarting took longer than the lease).
		var got *harness.Exchange
		deadline := time.Now().Add(30 * time.Second)
		for polls := 0; ; polls++ {
			ex := mustDo(t, c, "POST", "/payments", key, newPayment(4321))
			if ex.Status == 201 {
				got = ex
				t.Logf("taken over after %d retries answered 409 in progress", polls)
				if polls == 0 {
					t.Log("the restart outlasted the lease: no retry saw the stuck claim")
				}
				break
			}
			wantProblem(t, ex, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
			if time.Now().After(deadline) {
				t.Fatal("the stuck claim was never taken over")
			}
			time.Sleep(200 * time.Millisecond)
		}
		var p paymentBody
		_ = got.Decode(&p)
		charged, _, _ := gw.Lookup(context.Background(), key)
		if p.ChargeID != charged.ID {
			t.Fatalf("payment carries charge %s, the gateway made %s", p.ChargeID, charged.ID)
		}
		if n := gw.Calls(key); n != 1 {
			t.Fatalf("the gateway was asked to charge %d times, want 1 (the recovery hook looks the charge up)", n)
		}
		// The recovery's line is logged before the answer and read from the
		// process's output beside it, so it may come after the answer: wait
		// for it here, or the next subtest, which counts its own, counts it.
		waitFor(t, "the restarted service to record the killed attempt's charge", func() bool { return svc.recoveries() > recovered })
		if n := svc.recoveries() - recovered; n != 1 {
			t.Errorf("the restarted service recorded %d charges made by the killed attempt, want 1", n)
		}
	})

	// One call of the generated client spans the crash: it is in flight at
	// the gateway's charge when the service is killed (the gateway holds
	// its answer until then), and the same call, with the same key,
	// retries through the refused connections of the restart and the 409s
	// in progress of the stuck claim (honouring their Retry-After) until
	// the lease lapses and its retry is taken over: the restarted process
	// records the charge the killed one made. Whether the client sees the
	// cut is not asserted: net/http sends a request with an
	// Idempotency-Key again by itself when its connection was reused and
	// closed before an answer, and that resend, answered by the restarted
	// process, is what the client's attempt then reports.
	t.Run("a generated client's call across the kill", func(t *testing.T) {
		key := harness.NewKey()
		want[key] = 5432
		recovered := svc.recoveries()
		gw.Set(gateway.Switches{HoldAfterCharge: hangBound})
		client := newAPIClient(t, svc.url())
		type result struct {
			res *idemclient.Result[api.CreatePaymentResponse]
			err error
		}
		done := make(chan result, 1)
		var mu sync.Mutex
		var attempts []idemclient.Attempt
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), hangBound)
			defer cancel()
			res, err := client.CreatePayment(ctx, paymentRequest(5432), idemclient.WithIdempotencyKey(key),
				idemclient.WithAttemptObserver(func(a idemclient.Attempt) { mu.Lock(); attempts = append(attempts, a); mu.Unlock() }))
			done <- result{res, err}
		}()
		waitFor(t, "the gateway to charge", func() bool { _, ok, _ := gw.Lookup(context.Background(), key); return ok })
		svc.kill9()
		gw.Set(gateway.Switches{})
		svc.start()
		r := <-done
		p, err := createdPayment(r.res, r.err)
		if err != nil {
			t.Fatalf("the call did not survive the crash: %v", err)
		}
		charged, _, _ := gw.Lookup(context.Background(), key)
		if p.ChargeID != charged.ID || r.res.Key != key {
			t.Fatalf("payment carries charge %s under key %s, the gateway made %s for %s", p.ChargeID, r.res.Key, charged.ID, key)
		}
		if n := gw.Calls(key); n != 1 {
			t.Fatalf("the gateway was asked to charge %d times, want 1", n)
		}
		mu.Lock()
		defer mu.Unlock()
		cut, inProgress := 0, 0
		for _, a := range attempts {
			if a.Key != key {
				t.Errorf("attempt %d carried key %s, want %s", a.N, a.Key, key)
			}
			switch {
			case a.Status == 0:
				cut++
			case a.Status == 409:
				inProgress++
			}
		}
		if len(attempts) != r.res.Attempts {
			t.Errorf("%d attempts observed, result says %d attempts", len(attempts), r.res.Attempts)
		}
		// The line is logged before the answer, and read from the
		// process's output beside it.
		waitFor(t, "the restarted service to record the killed attempt's charge", func() bool { return svc.recoveries() > recovered })
		if n := svc.recoveries() - recovered; n != 1 {
			t.Errorf("the restarted service recorded %d charges made by the killed attempt, want 1", n)
		}
		t.Logf("one call, %d attempts: %d cut or refused during the kill and restart, %d answered 409 in progress, then %d (replayed: %v)",
			r.res.Attempts, cut, inProgress, r.res.Status, r.res.Replayed)
	})

	// Load with kills at random points: the generated client retries
	// through the outages, with one key per intent.
	t.Run("kill -9 under load", func(t *testing.T) {
		gw.Set(gateway.Switches{Latency: 30 * time.Millisecond})
		defer gw.Set(gateway.Switches{})
		const keys, clientsPerKey, kills = 60, 2, 4
		ctx, cancel := context.WithTimeout(context.Background(), hangBound)
		defer cancel()

		st := newRetryStats()
		client := newAPIClient(t, svc.url())
		var wg sync.WaitGroup
		var failed atomic.Int32
		keyList := make([]string, keys)
		for i := range keys {
			keyList[i] = harness.NewKey()
			want[keyList[i]] = int64(1000 + i)
		}
		// Clients start in waves so kills land on requests at every stage.
		for i, key := range keyList {
			for range clientsPerKey {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(time.Duration(i*15) * time.Millisecond)
					res, err := client.CreatePayment(ctx, paymentRequest(want[key]), idemclient.WithIdempotencyKey(key),
						idemclient.WithAttemptObserver(st.noteAttempt))
					p, err := createdPayment(res, err)
					if err != nil {
						t.Errorf("key %s: %v", key, err)
						failed.Add(1)
						return
					}
					st.notePayment(key, p.ID, res.Replayed)
				}()
			}
		}
		for range kills {
			time.Sleep(time.Duration(100+rand.IntN(250)) * time.Millisecond)
			svc.kill9()
			time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
			svc.start()
		}
		wg.Wait()
		if n := failed.Load(); n > 0 {
			t.Fatalf("%d clients never got a 201", n)
		}
		for key, ids := range st.paymentOf {
			if len(ids) != 1 {
				t.Errorf("key %s: clients got %d different payments", key, len(ids))
			}
		}
		t.Logf("%d keys × %d clients, %d kills: %d attempts, %d transport errors, attempt statuses %v",
			keys, clientsPerKey, kills, st.attempts, st.timeouts, st.byOutcome)
		// Every payment a client was told about is in the ledger (nothing
		// committed was lost).
		l := readLedger(t, pool)
		for key, ids := range st.paymentOf {
			for id := range ids {
				if !l.ids[id] {
					t.Errorf("key %s: payment %s answered 201 but is not in the ledger", key, id)
				}
			}
		}
	})

	checkBooks(t, readLedger(t, pool), gw, want)
	t.Logf("service started %d times; %d payments recorded with the charge of a killed attempt", svc.starts, svc.recoveries())
}
