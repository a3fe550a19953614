package idem_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemredis"
	"github.com/idemgen/idemgen/runtime/internal/redistest"
)

// outcomeLog keeps the Outcome of every request, in the order they ended,
// for a test to take one by one.
type outcomeLog struct {
	mu    sync.Mutex
	cond  *sync.Cond
	all   []idem.Outcome
	taken int
}

func newOutcomeLog() *outcomeLog {
	l := &outcomeLog{}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *outcomeLog) hook(_ context.Context, _ *idem.Operation, o idem.Outcome) {
	l.mu.Lock()
	l.all = append(l.all, o)
	l.mu.Unlock()
	l.cond.Broadcast()
}

// next waits for the outcome of the next request to end (OnOutcome runs
// after the response is written, when its client may have it already).
func (l *outcomeLog) next() idem.Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.all) == l.taken {
		l.cond.Wait()
	}
	l.taken++
	return l.all[l.taken-1]
}

// asked counts the requests taken so far that asked the cache
// (Outcome.Cache set).
func (l *outcomeLog) asked() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, o := range l.all[:l.taken] {
		if o.Cache != "" {
			n++
		}
	}
	return n
}

// newCachedEnv is an atomic-mode service with a cache whose calls are
// counted and whose requests' outcomes are kept.
func newCachedEnv(t *testing.T, p idem.Policy, cfg idem.Config) (*env, *callCounter, *outcomeLog) {
	t.Helper()
	cache, _ := newCache(t, redistest.URL(t), idemredis.Options{Timeout: 5 * time.Second})
	calls := &callCounter{Cache: cache}
	outs := newOutcomeLog()
	cfg.Cache, cfg.Hooks.OnOutcome = calls, outs.hook
	return newEnv(t, p, cfg), calls, outs
}

// untilCached waits until the cache holds key's committed outcome (the
// engine writes it after the response, in the background).
func untilCached(t *testing.T, e *env, cache idem.Cache, key string) {
	t.Helper()
	ck, err := e.eng.CacheKey(context.Background(), idem.Key{Operation: e.op.ID, Value: key})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		v, err := cache.Get(context.Background(), ck)
		if err == nil && len(v) > 0 && v[0] == 'R' {
			return
		}
		if i == 2000 {
			t.Fatalf("the outcome of key %s never reached the cache (last: %q, %v)", key, v, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCacheSkippedForNewKeys: once an atomic operation's keys are new
// (first executions, with no replay among them), its requests stop asking
// the cache: a first execution then makes no cache call, before it runs
// or after (Outcome.Cache is ""), and costs what it costs without a
// cache. The replays that come afterwards send the operation back to the
// cache: the first few run as without a cache (the handler rolls back on
// the primary key and the stored outcome is replayed), then one asks the
// cache and caches the outcome, and the next is answered from the cache.
// Every answer is the stored one, and every key's business write
// committed once.
func TestCacheSkippedForNewKeys(t *testing.T) {
	t.Parallel()
	e, calls, outs := newCachedEnv(t, testPolicy(idem.ModeAtomic), idem.Config{})
	const n, skipped = 150, 50
	keys := make([]string, n)
	bodies := map[string][]byte{}
	for i := range keys {
		keys[i] = newKey()
		asked := calls.lookups.Load() + calls.gets.Load()
		r := e.post(keys[i], payReq{Amount: i + 1})
		if r.Status != 201 {
			t.Fatalf("first execution %d: %d %s", i, r.Status, r.Body)
		}
		bodies[keys[i]] = r.Body
		o := outs.next()
		if i < n-skipped {
			continue
		}
		if now := calls.lookups.Load() + calls.gets.Load(); now != asked || o.Cache != "" {
			t.Fatalf("first execution %d of %d new keys asked the cache (%d calls, Outcome.Cache %q); want no call once new keys are the rule",
				i, n, now-asked, o.Cache)
		}
	}
	if got, want := calls.lookups.Load(), outs.asked(); got != want {
		t.Fatalf("%d cache lookups for %d requests that say they asked the cache", got, want)
	}
	if !idem.InsertsFirst(e.eng, e.op) {
		t.Fatal("after a run of first executions the operation still reads first")
	}

	// Replays of a key whose outcome was never cached.
	key := keys[n-1]
	replay := func(i int) idem.Outcome {
		t.Helper()
		r := e.post(key, payReq{Amount: n})
		if r.Status != 201 || !bytes.Equal(r.Body, bodies[key]) || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay %d: %d %s %v, want the replay of %s", i, r.Status, r.Body, r.Header, bodies[key])
		}
		return outs.next()
	}
	i := 0
	for ; ; i++ {
		o := replay(i)
		if o.Cache != "" {
			if o.Cache != idem.CacheMiss {
				t.Fatalf("replay %d asked the cache first and got %q; want a miss: the outcome was never cached", i, o.Cache)
			}
			break
		}
		if !o.Raced {
			t.Fatalf("replay %d went by the cache and PostgreSQL's read: %+v; want it to insert first and lose", i, o)
		}
		if i == 4 {
			t.Fatal("5 replays did not send the operation back to the cache")
		}
	}
	untilCached(t, e, calls.Cache, key)
	if o := replay(i + 1); o.Cache != idem.CacheHit {
		t.Fatalf("the replay after the outcome was cached: Outcome.Cache %q, want %q", o.Cache, idem.CacheHit)
	}
	if p := e.payments(); p != n {
		t.Fatalf("%d payments committed for %d keys", p, n)
	}
}

// TestCacheKeptUnderMixedLoad: an operation that serves a replay for every
// first execution keeps asking the cache, however long it runs: its
// replays are answered from the cache throughout (an answer from the
// cache counts, in the operation's guess, as a key that had an outcome).
func TestCacheKeptUnderMixedLoad(t *testing.T) {
	t.Parallel()
	e, calls, outs := newCachedEnv(t, testPolicy(idem.ModeAtomic), idem.Config{})
	stored := newKey()
	first := e.post(stored, payReq{Amount: 1})
	if first.Status != 201 {
		t.Fatalf("first execution: %d %s", first.Status, first.Body)
	}
	outs.next()
	untilCached(t, e, calls.Cache, stored)
	const rounds = 150
	for i := range rounds {
		if r := e.post(newKey(), payReq{Amount: 2 + i}); r.Status != 201 {
			t.Fatalf("round %d, first execution: %d %s", i, r.Status, r.Body)
		}
		outs.next()
		r := e.post(stored, payReq{Amount: 1})
		if r.Status != 201 || !bytes.Equal(r.Body, first.Body) {
			t.Fatalf("round %d, replay: %d %s, want %s", i, r.Status, r.Body, first.Body)
		}
		if o := outs.next(); o.Cache != idem.CacheHit {
			t.Fatalf("round %d of %d (a first execution, then a replay): the replay's Outcome.Cache is %q, want %q",
				i, rounds, o.Cache, idem.CacheHit)
		}
	}
}

// TestStormSendsBackToCache: an operation whose keys were new (no cache
// call) that meets a storm of duplicates in this process goes back to the
// cache: the duplicates handed the leader's outcome count, in the
// operation's guess, as requests whose key had an outcome, so that the
// next requests place the cache's in-flight marker for the duplicates
// other processes may be sending.
func TestStormSendsBackToCache(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeAtomic)
	p.InFlight, p.Wait = idem.InFlightWait, 30*time.Second
	phases := &phaseCounter{}
	e, _, outs := newCachedEnv(t, p, idem.Config{Observers: []idem.Observer{phases}})
	for i := 0; !idem.InsertsFirst(e.eng, e.op); i++ {
		if r := e.post(newKey(), payReq{Amount: 1 + i}); r.Status != 201 {
			t.Fatalf("first execution %d: %d %s", i, r.Status, r.Body)
		}
		outs.next()
		if i == 500 {
			t.Fatal("500 first executions did not make the operation insert first")
		}
	}
	// The leader, blocked in its handler until every duplicate waits for
	// it, then the duplicates.
	const dups = 10
	key := newKey()
	claims := phases.count("claim")
	var lead result
	done := make(chan struct{})
	go func() { defer close(done); lead = e.post(key, payReq{Amount: 7, Behave: "block"}) }()
	waitStarted(t, e)
	out := make([]result, dups)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = e.post(key, payReq{Amount: 7, Behave: "block"}) }()
	}
	for phases.count("claim") < claims+1+dups {
		time.Sleep(time.Millisecond)
	}
	e.release <- struct{}{}
	<-done
	wg.Wait()
	if lead.Status != 201 {
		t.Fatalf("leader: %d %s", lead.Status, lead.Body)
	}
	for i, r := range out {
		if r.Status != 201 || !bytes.Equal(r.Body, lead.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("duplicate %d: %d %s, want the replay of %s", i, r.Status, r.Body, lead.Body)
		}
	}
	for range 1 + dups {
		if o := outs.next(); o.Cache != "" {
			t.Fatalf("a request of the storm asked the cache (%q): the operation inserted first, without it", o.Cache)
		}
	}
	if idem.InsertsFirst(e.eng, e.op) {
		t.Fatalf("after a storm of %d duplicates the operation still inserts first, without the cache", dups)
	}
	r := e.post(newKey(), payReq{Amount: 1})
	if o := outs.next(); r.Status != 201 || o.Cache != idem.CacheMiss {
		t.Fatalf("the first execution after the storm: %d, Outcome.Cache %q; want it to ask the cache (%q)",
			r.Status, o.Cache, idem.CacheMiss)
	}
}
