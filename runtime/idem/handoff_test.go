package idem_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemredis"
	"github.com/idemgen/idemgen/runtime/internal/redistest"
)

// phaseCounter counts the phases keyed requests enter.
type phaseCounter struct {
	mu sync.Mutex
	n  map[idem.Phase]int
}

func (c *phaseCounter) Request(ctx context.Context, _ *idem.Operation) (context.Context, func(idem.Outcome)) {
	return ctx, func(idem.Outcome) {}
}

func (c *phaseCounter) Phase(ctx context.Context, _ *idem.Operation, p idem.Phase) (context.Context, func(error)) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[idem.Phase]int{}
	}
	c.n[p]++
	c.mu.Unlock()
	return ctx, func(error) {}
}

func (c *phaseCounter) count(p idem.Phase) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[p]
}

// callCounter is a Cache that counts the calls made to it.
type callCounter struct {
	idem.Cache
	lookups, gets atomic.Int64
}

func (c *callCounter) Lookup(ctx context.Context, key string, marker []byte, ttl time.Duration) ([]byte, bool, error) {
	c.lookups.Add(1)
	return c.Cache.Lookup(ctx, key, marker, ttl)
}

func (c *callCounter) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	return c.Cache.Get(ctx, key)
}

// TestHandoff: duplicates of a request in flight in the same process wait
// for it and are answered with the outcome it committed, without a read
// of their own (and, with a cache, without a cache call): the storm of one
// key costs the database and the cache what one request costs. A duplicate
// with another payload is refused; when the first request's outcome is not
// kept, nothing is handed over and a duplicate runs the request.
func TestHandoff(t *testing.T) {
	t.Parallel()
	for _, withCache := range []bool{false, true} {
		name := "postgres"
		if withCache {
			name = "redis"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := testPolicy(idem.ModeAtomic)
			p.InFlight, p.Wait = idem.InFlightWait, 30*time.Second
			phases := &phaseCounter{}
			cfg := idem.Config{Observers: []idem.Observer{phases}}
			var calls *callCounter
			if withCache {
				srv := redistest.Start(t)
				cache, _ := newCache(t, srv.URL, idemredis.Options{Timeout: 5 * time.Second})
				calls = &callCounter{Cache: cache}
				cfg.Cache = calls
			}
			e := newEnv(t, p, cfg)
			idem.PinInsertFirst(e.eng, e.op, false) // every leader reads first

			// storm sends the leader (blocked in its handler until every
			// duplicate waits), then the duplicates, and returns the
			// leader's answer and theirs.
			storm := func(key string, leader payReq, dups []payReq) (result, []result) {
				t.Helper()
				claims := phases.count("claim")
				var lead result
				done := make(chan struct{})
				go func() { defer close(done); lead = e.post(key, leader) }()
				<-e.started
				out := make([]result, len(dups))
				var wg sync.WaitGroup
				for i, d := range dups {
					wg.Add(1)
					go func() { defer wg.Done(); out[i] = e.post(key, d) }()
				}
				// The leader entered its claim; each duplicate enters
				// one as it starts waiting.
				for phases.count("claim") < claims+1+len(dups) {
					time.Sleep(time.Millisecond)
				}
				e.release <- struct{}{}
				<-done
				wg.Wait()
				return lead, out
			}

			// A storm of one key: one read (the leader's), one run.
			const n = 20
			dups := make([]payReq, n)
			for i := range dups {
				dups[i] = payReq{Amount: 7, Behave: "block"}
			}
			dups[n-1] = payReq{Amount: 8, Behave: "block"} // another payload
			reads, runs := phases.count("read"), e.runs.Load()
			lead, out := storm(newKey(), payReq{Amount: 7, Behave: "block"}, dups)
			if lead.Status != 201 {
				t.Fatalf("leader: %d %s", lead.Status, lead.Body)
			}
			for i, r := range out[:n-1] {
				if r.Status != 201 || !bytes.Equal(r.Body, lead.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("duplicate %d: %d %s %v, want the replay of %s", i, r.Status, r.Body, r.Header, lead.Body)
				}
			}
			out[n-1].wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")
			if got := e.runs.Load() - runs; got != 1 {
				t.Fatalf("the handler ran %d times for one key", got)
			}
			// The leader reads first; with a cache, the marker it placed
			// says there is nothing to read.
			wantReads := 1
			if withCache {
				wantReads = 0
			}
			if got := phases.count("read") - reads; got != wantReads {
				t.Fatalf("%d reads of the record for a storm of %d duplicates; want %d (the leader's)", got, n, wantReads)
			}
			if calls != nil {
				if l, g := calls.lookups.Load(), calls.gets.Load(); l != 1 || g != 0 {
					t.Fatalf("%d cache lookups and %d gets for a storm of %d duplicates; want 1 lookup", l, g, n)
				}
			}

			// The leader's outcome is not kept (503): nothing is handed
			// over, one duplicate runs and the others replay its outcome.
			var failed atomic.Bool
			e.handle("fail-once", func(context.Context, pgx.Tx) (*idem.Response, error) {
				if failed.CompareAndSwap(false, true) {
					e.started <- 0
					<-e.release
					return &idem.Response{Status: 503, Body: []byte("try later")}, nil
				}
				return &idem.Response{Status: 201, Body: []byte("paid")}, nil
			})
			dups = make([]payReq, 5)
			for i := range dups {
				dups[i] = payReq{Amount: 9, Behave: "fail-once"}
			}
			runs, paid := e.runs.Load(), e.payments()
			lead, out = storm(newKey(), payReq{Amount: 9, Behave: "fail-once"}, dups)
			if lead.Status != 503 {
				t.Fatalf("leader: %d %s, want its 503", lead.Status, lead.Body)
			}
			executed := 0
			for i, r := range out {
				if r.Status != 201 || string(r.Body) != "paid" {
					t.Fatalf("duplicate %d after a 503: %d %s, want 201 paid", i, r.Status, r.Body)
				}
				if r.Header.Get("Idempotent-Replayed") != "true" {
					executed++
				}
			}
			// With a cache, the next leader may find the 503's marker
			// gone and insert first onto the retryable record: that run
			// loses and rolls back, and runs again over the record.
			if got, p := e.runs.Load()-runs, e.payments()-paid; executed != 1 || got < 2 || p != 1 {
				t.Fatalf("after a 503, %d duplicates executed, the handler ran %d times, %d payments committed; want 1, 2 or more, 1", executed, got, p)
			}
		})
	}
}

// readBlocker is an Observer that holds the next "read" phase, once armed,
// until released.
type readBlocker struct {
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (b *readBlocker) Request(ctx context.Context, _ *idem.Operation) (context.Context, func(idem.Outcome)) {
	return ctx, func(idem.Outcome) {}
}

func (b *readBlocker) Phase(ctx context.Context, _ *idem.Operation, p idem.Phase) (context.Context, func(error)) {
	if p == "read" && b.armed.CompareAndSwap(true, false) {
		close(b.entered)
		<-b.release
	}
	return ctx, func(error) {}
}

// TestHandoffWaitEnds: a duplicate whose leader is slow (here: held in its
// read of a completed key) waits its LockTimeout, then goes on by itself
// and replays the stored outcome; a retry of a completed request is never
// refused as in flight because another retry is slow. A duplicate whose
// leader is running the handler past the LockTimeout is refused as in
// flight, without a read of its own.
func TestHandoffWaitEnds(t *testing.T) {
	t.Parallel()
	b := &readBlocker{entered: make(chan struct{}), release: make(chan struct{})}
	phases := &phaseCounter{}
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{LockTimeout: 20 * time.Millisecond, Observers: []idem.Observer{b, phases}})
	idem.PinInsertFirst(e.eng, e.op, false)
	key := newKey()
	first := e.post(key, payReq{Amount: 4})
	if first.Status != 201 {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	b.armed.Store(true)
	var lead result
	done := make(chan struct{})
	go func() { defer close(done); lead = e.post(key, payReq{Amount: 4}) }()
	<-b.entered
	r := e.post(key, payReq{Amount: 4}) // the leader is held until this returns
	close(b.release)
	<-done
	for i, got := range []result{r, lead} {
		if got.Status != 201 || !bytes.Equal(got.Body, first.Body) || got.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry %d: %d %s, want the replay of %s", i, got.Status, got.Body, first.Body)
		}
	}

	// The leader runs the handler (held there) past the duplicate's wait.
	key = newKey()
	done = make(chan struct{})
	go func() { defer close(done); lead = e.post(key, payReq{Amount: 5, Behave: "block"}) }()
	<-e.started
	reads := phases.count("read")
	r = e.post(key, payReq{Amount: 5})
	dupReads := phases.count("read") - reads
	e.release <- struct{}{} // before any Fatal: the server waits for the leader
	<-done
	r.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
	if dupReads != 0 {
		t.Fatalf("the refused duplicate read the record %d times; want 0", dupReads)
	}
	if lead.Status != 201 {
		t.Fatalf("leader: %d %s", lead.Status, lead.Body)
	}
}
