package idem_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/idemredis"
	"github.com/idemgen/idemgen/runtime/internal/redistest"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// outcomes records each request's Outcome, by key.
type outcomes struct {
	mu  sync.Mutex
	all map[string][]idem.Outcome
}

func (o *outcomes) hook(_ context.Context, _ *idem.Operation, out idem.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.all == nil {
		o.all = map[string][]idem.Outcome{}
	}
	o.all[out.KeyHash] = append(o.all[out.KeyHash], out)
}

// caches counts the Outcome.Cache results seen.
func (o *outcomes) caches() map[idem.CacheResult]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := map[idem.CacheResult]int{}
	for _, outs := range o.all {
		for _, out := range outs {
			n[out.Cache]++
		}
	}
	return n
}

// gated is the handler of requests with Behave "gated": it waits until
// release, then answers 201 with a body of its own run.
type gated struct {
	entered atomic.Int32
	gate    chan struct{}
	once    sync.Once
	runs    atomic.Int64
}

func newGated(envs ...*env) *gated {
	g := &gated{gate: make(chan struct{})}
	for _, e := range envs {
		e.handle("gated", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
			g.entered.Add(1)
			<-g.gate
			return &idem.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}},
				Body: []byte(fmt.Sprintf(`{"run":%d}`, g.runs.Add(1)))}, nil
		})
	}
	return g
}

// untilEntered waits until a request is in the handler, or 10 s.
func (g *gated) untilEntered() {
	for deadline := time.Now().Add(10 * time.Second); g.entered.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

func (g *gated) release() { g.once.Do(func() { close(g.gate) }) }

// untilFallback waits until a request has fallen back to PostgreSQL, or
// 10 s have passed (the test then says the fault did not bite).
func (o *outcomes) untilFallback() {
	for deadline := time.Now().Add(10 * time.Second); o.caches()[idem.CacheFallback] == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// newCache returns an idemredis cache on url under a prefix of the test's
// own, and the prefix.
func newCache(t *testing.T, url string, opts idemredis.Options) (*idemredis.Cache, string) {
	t.Helper()
	opts.Prefix = "t" + uuid.NewString()[:8] + ":"
	c, err := idemredis.New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// It connects in the background: wait for it, so that the test's
	// requests do not fall back to PostgreSQL for that.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := c.Get(context.Background(), "warm-up")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache did not connect: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c, opts.Prefix
}

// TestCacheServes: with a cache, a replay and a reused key with another
// payload are answered from it exactly as PostgreSQL answers them: the same
// bytes, status and headers, the same 409; the handler ran once.
func TestCacheServes(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	for _, mode := range []idem.Mode{idem.ModeAtomic, idem.ModeLease} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			cache, _ := newCache(t, url, idemredis.Options{Timeout: time.Second})
			var outs outcomes
			e := newEnv(t, testPolicy(mode), idem.Config{Cache: cache, Hooks: idem.Hooks{OnOutcome: outs.hook}})
			key := newKey()
			first := e.post(key, payReq{Amount: 3})
			if first.Status != 201 {
				t.Fatalf("first: %d %s", first.Status, first.Body)
			}
			// The outcome reaches the cache after the response.
			var replay result
			deadline := time.Now().Add(20 * time.Second)
			for {
				replay = e.post(key, payReq{Amount: 3})
				if outs.caches()[idem.CacheHit] > 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if outs.caches()[idem.CacheHit] == 0 {
				t.Fatalf("no replay was answered from the cache: %v", outs.caches())
			}
			if replay.Status != 201 || !bytes.Equal(replay.Body, first.Body) || replay.Header.Get("Location") != first.Header.Get("Location") ||
				replay.Header.Get("Content-Type") != first.Header.Get("Content-Type") || replay.Header.Get("Idempotent-Replayed") != "true" ||
				replay.Header.Get("Last-Modified") == "" {
				t.Fatalf("cached replay %d %s %v, first %s %v", replay.Status, replay.Body, replay.Header, first.Body, first.Header)
			}
			// The same answer as PostgreSQL's replay, header for header.
			fromDB := newEnvOn(t, e.db, testPolicy(mode), idem.Config{}).post(key, payReq{Amount: 3})
			for _, h := range []string{"Content-Type", "Location", "Last-Modified", "Idempotent-Replayed"} {
				if fromDB.Header.Get(h) != replay.Header.Get(h) {
					t.Errorf("%s: cached replay %q, PostgreSQL's %q", h, replay.Header.Get(h), fromDB.Header.Get(h))
				}
			}
			hits := outs.caches()[idem.CacheHit]
			e.post(key, payReq{Amount: 4}).wantProblem(t, 409, idemproblem.CodeConflict, idemproblem.ReasonConflict)
			if outs.caches()[idem.CacheHit] != hits+1 {
				t.Errorf("the conflict was not answered from the cache: %v", outs.caches())
			}
			if e.runs.Load() != 1 || e.payments() != 1 {
				t.Fatalf("%d runs, %d payments", e.runs.Load(), e.payments())
			}
		})
	}
}

// TestCacheTTLWithinRecord: an outcome is cached for no longer than its
// record lives (less a margin), however long Config.CacheTTL is, so the
// cache never answers for a record PostgreSQL counts expired.
func TestCacheTTLWithinRecord(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cache, prefix := newCache(t, srv.URL, idemredis.Options{Timeout: time.Second})
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{Cache: cache, CacheTTL: time.Hour})
	key := newKey()
	if r := e.post(key, payReq{Amount: 3}); r.Status != 201 {
		t.Fatal(r.Status)
	}
	// The record has 8 s left; the cache forgets the first outcome.
	e.exec("UPDATE idem_records SET expires_at = now() + interval '8 seconds'")
	srv.Do("FLUSHALL")
	if r := e.post(key, payReq{Amount: 3}); r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	// The replay, read from PostgreSQL, is cached for what is left of it.
	var ttl int
	deadline := time.Now().Add(20 * time.Second)
	for ttl <= 0 && time.Now().Before(deadline) {
		for _, k := range splitLines(srv.Do("KEYS", prefix+"*")) {
			ttl, _ = strconv.Atoi(srv.Do("PTTL", k))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ttl <= 0 || ttl > 3000 {
		t.Fatalf("cached for %d ms, want at most the 8 s left less the 5 s margin", ttl)
	}
}

func splitLines(s string) []string {
	var out []string
	for _, l := range bytes.Split([]byte(s), []byte("\n")) {
		if len(l) > 0 {
			out = append(out, string(l))
		}
	}
	return out
}

// TestCacheStaleMarker: a marker left by a request that died (or a marker
// that never turns into an outcome) holds duplicates back only for their
// wait; then PostgreSQL decides, as without a cache: the request runs.
func TestCacheStaleMarker(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cache, prefix := newCache(t, srv.URL, idemredis.Options{Timeout: time.Second})
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{Cache: cache})
	key := newKey()
	// The marker of a request that died, under the record's cache key.
	stale := prefix + e.cacheKey("", key)
	srv.Do("SET", stale, "Mdeadbeef", "PX", "60000")
	r := e.post(key, payReq{Amount: 2})
	if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" || e.runs.Load() != 1 {
		t.Fatalf("behind a stale marker: %d %s, %d runs; want the request run", r.Status, r.Body, e.runs.Load())
	}
}

// TestCacheStampede: a completed key's cache entry has expired, and a
// spike of retries arrives at two processes at once: one request asks
// PostgreSQL, the others wait for what it puts back; the handler runs at
// most once more (and its writes roll back), every retry gets the replay.
func TestCacheStampede(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cache, _ := newCache(t, srv.URL, idemredis.Options{Timeout: time.Second})
	p := testPolicy(idem.ModeAtomic)
	p.InFlight, p.Wait = idem.InFlightWait, 10*time.Second
	db := pgtest.New(t, pgtest.Options{Migrations: businessSchema, MaxConns: 32})
	a := newEnvOn(t, db, p, idem.Config{Cache: cache})
	b := newEnvOn(t, db, p, idem.Config{Cache: cache})
	key := newKey()
	first := a.post(key, payReq{Amount: 5})
	time.Sleep(200 * time.Millisecond) // let the outcome reach the cache
	srv.Do("FLUSHALL")                 // the entry expired
	var wg sync.WaitGroup
	results := make([]result, 40)
	for i := range results {
		e := a
		if i%2 == 1 {
			e = b
		}
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = e.post(key, payReq{Amount: 5}) }()
	}
	wg.Wait()
	for i, r := range results {
		if r.Status != 201 || !bytes.Equal(r.Body, first.Body) {
			t.Fatalf("retry %d: %d %s, want the replay of %s", i, r.Status, r.Body, first.Body)
		}
	}
	if runs := a.runs.Load() + b.runs.Load(); runs > 2 || a.payments() != 1 {
		t.Fatalf("%d handler runs (at most 2: the first, and one that lost to it), %d payments", runs, a.payments())
	}
}

// cacheKey is the key of a record of e's operation in e's cache.
func (e *env) cacheKey(tenant, key string) string {
	e.t.Helper()
	k, err := e.eng.CacheKey(context.Background(), idem.Key{Tenant: tenant, Operation: e.op.ID, Value: key})
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

// TestCacheFaults: Redis stopped, flushed, paused or killed and restarted
// while two processes serve retrying clients: every key still runs once
// (one payment), every answer is the key's one response, and no client
// gets an error it would not get without a cache (with inFlight: wait,
// that is none at all).
func TestCacheFaults(t *testing.T) {
	t.Parallel()
	// The first executions wait in the handler (gated) until the fault
	// is in place: a fault struck after a fixed delay could fall after a
	// load that took less, or before one that had not yet reached Redis.
	faults := []struct {
		name string
		// before runs before the load. during runs while it waits in
		// the handler (g.untilEntered) and lets it go on (g.release).
		before func(srv *redistest.Server)
		during func(srv *redistest.Server, g *gated, outs *outcomes)
	}{
		{name: "stopped", before: func(srv *redistest.Server) { srv.Kill() }},
		{name: "flushed", during: func(srv *redistest.Server, g *gated, _ *outcomes) {
			g.release()
			for range 5 {
				srv.Do("FLUSHALL")
				time.Sleep(30 * time.Millisecond)
			}
		}},
		{name: "paused", during: func(srv *redistest.Server, g *gated, _ *outcomes) {
			g.untilEntered()
			srv.Do("CLIENT", "PAUSE", "1500", "ALL")
			g.release()
		}},
		{name: "killed", during: func(srv *redistest.Server, g *gated, outs *outcomes) {
			g.untilEntered()
			srv.Kill()
			g.release()
			outs.untilFallback()
			srv.Restart()
		}},
	}
	for _, mode := range []idem.Mode{idem.ModeAtomic, idem.ModeLease} {
		for _, f := range faults {
			t.Run(string(mode)+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				srv := redistest.Start(t)
				cache, _ := newCache(t, srv.URL, idemredis.Options{})
				p := testPolicy(mode)
				p.InFlight, p.Wait = idem.InFlightWait, 20*time.Second
				var outs outcomes
				cfg := idem.Config{Cache: cache, Hooks: idem.Hooks{OnOutcome: outs.hook}}
				db := pgtest.New(t, pgtest.Options{Migrations: businessSchema, MaxConns: 32})
				procs := []*env{newEnvOn(t, db, p, cfg), newEnvOn(t, db, p, cfg)}
				g := newGated(procs...)
				if f.before != nil {
					f.before(srv)
				}
				const keys, clients, attempts = 8, 3, 2
				type answer struct {
					key    string
					status int
					body   string
				}
				answers := make(chan answer, keys*clients*attempts)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for k := range keys {
					key := newKey()
					for c := range clients {
						wg.Add(1)
						go func() {
							defer wg.Done()
							<-start
							e := procs[(k+c)%2]
							for range attempts {
								r := e.post(key, payReq{Amount: 10 + k, Behave: "gated"})
								answers <- answer{key, r.Status, string(r.Body)}
							}
						}()
					}
				}
				close(start)
				if f.during != nil {
					f.during(srv, g, &outs)
				}
				g.release()
				wg.Wait()
				close(answers)
				first := map[string]string{}
				for a := range answers {
					if a.status != 201 {
						t.Errorf("key %s: %d %s", a.key, a.status, a.body)
						continue
					}
					if b, ok := first[a.key]; ok && b != a.body {
						t.Errorf("key %s: answered %s and %s", a.key, b, a.body)
					}
					first[a.key] = a.body
				}
				if n := procs[0].count("SELECT count(*) FROM payments"); n != keys {
					t.Errorf("%d payments for %d keys", n, keys)
				}
				if n := procs[0].count("SELECT count(DISTINCT idem_key) FROM payments"); n != keys {
					t.Errorf("payments for %d keys, want %d", n, keys)
				}
				if c := outs.caches(); f.name != "flushed" && c[idem.CacheFallback] == 0 {
					t.Errorf("no request fell back to PostgreSQL: %v (the fault did not bite)", c)
				}
			})
		}
	}
}

// TestCacheMissOnStoredKey: a key PostgreSQL holds but the cache does not
// (stored before the cache was configured, by a process without it, or
// evicted) is replayed byte for byte by a process with the cache: the
// insert-first path that a miss takes finds the record on conflict.
func TestCacheMissOnStoredKey(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, mode := range []idem.Mode{idem.ModeAtomic, idem.ModeLease} {
		t.Run(string(mode), func(t *testing.T) {
			cache, _ := newCache(t, srv.URL, idemredis.Options{Timeout: time.Second})
			db := pgtest.New(t, pgtest.Options{Migrations: businessSchema})
			plain := newEnvOn(t, db, testPolicy(mode), idem.Config{})
			cached := newEnvOn(t, db, testPolicy(mode), idem.Config{Cache: cache})
			keys := make([]string, 20)
			want := map[string]string{}
			for i := range keys {
				keys[i] = newKey()
				r := plain.post(keys[i], payReq{Amount: i + 1})
				if r.Status != 201 {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				want[keys[i]] = string(r.Body)
			}
			var wg sync.WaitGroup
			for c := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 3 {
						for i, k := range keys {
							r := cached.post(k, payReq{Amount: i + 1})
							if r.Status != 201 || string(r.Body) != want[k] || r.Header.Get("Idempotent-Replayed") != "true" {
								t.Errorf("client %d, key %d: %d %s %v, want the replay of %s", c, i, r.Status, r.Body, r.Header, want[k])
							}
						}
					}
				}()
			}
			wg.Wait()
			if n := plain.payments(); n != len(keys) {
				t.Fatalf("%d payments for %d keys", n, len(keys))
			}
		})
	}
}
