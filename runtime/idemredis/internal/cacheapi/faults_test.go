package cacheapi_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemredis"
	"github.com/idemgen/idemgen/runtime/internal/redistest"
)

// forge overwrites the entries under keys, one after the other, until
// stop closes: with the entry of the next key, with its own entry's last
// body byte changed, or with bytes the engine never wrote. Markers are
// overwritten too. Failed calls (Redis is being faulted) are ignored.
func forge(c *idemredis.Cache, keys []string, stop <-chan struct{}) {
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		key, next := keys[i%len(keys)], keys[(i+1)%len(keys)]
		switch i % 3 {
		case 0:
			if v, err := c.Get(ctx, next); err == nil && len(v) > 0 && v[0] == 'R' {
				_ = c.Set(ctx, key, v, time.Minute)
			}
		case 1:
			if v, err := c.Get(ctx, key); err == nil && len(v) > macSize && v[0] == 'R' {
				v[len(v)-macSize-1] ^= 1
				_ = c.Set(ctx, key, v, time.Minute)
			}
		case 2:
			_ = c.Set(ctx, key, []byte("R\x02forged"), time.Minute)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFaultsAndForgeries: Redis flushed, paused, or killed and restarted
// while two processes of the generated server serve clients that retry
// each key, and all along someone overwrites the keys' entries with
// other keys' entries, edited entries and garbage: every key runs once
// (one payment), every answer for a key is its one outcome, and no client
// gets an error (with inFlight: wait there is none to get without a
// cache). Then, with Redis up, every key's entry replaced by the next
// key's is answered with the key's own outcome.
//
// Fails when cacheIdentity.open skips its checks (keys answered with
// other keys' payments, edited bodies or 409s).
func TestFaultsAndForgeries(t *testing.T) {
	t.Parallel()
	faults := []struct {
		name string
		// during runs while the first executions wait in the handler
		// (untilEntered) and lets them go on (release).
		during func(srv *redistest.Server, untilEntered, release, untilFallback func())
	}{
		{"flushed", func(srv *redistest.Server, _, release, _ func()) {
			release()
			for range 5 {
				srv.Do("FLUSHALL")
				time.Sleep(30 * time.Millisecond)
			}
		}},
		{"paused", func(srv *redistest.Server, untilEntered, release, _ func()) {
			untilEntered()
			srv.Do("CLIENT", "PAUSE", "1500", "ALL")
			release()
		}},
		{"killed", func(srv *redistest.Server, untilEntered, release, untilFallback func()) {
			untilEntered()
			srv.Kill()
			release()
			untilFallback()
			srv.Restart()
		}},
	}
	for _, op := range []string{"createPayment", "createCharge"} {
		for _, f := range faults {
			t.Run(op+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				srv := redistest.Start(t)
				db := newDB(t, false)
				quiet := slog.New(slog.DiscardHandler)
				procs := []*stack{
					newStack(t, db, newCacheWith(t, srv.URL, idemredis.Options{Logger: quiet}), nil),
					newStack(t, db, newCacheWith(t, srv.URL, idemredis.Options{Logger: quiet}), nil),
				}
				gate := make(chan struct{})
				for _, p := range procs {
					p.svc.gate = gate
				}
				var once sync.Once
				release := func() { once.Do(func() { close(gate) }) }
				t.Cleanup(release)
				untilEntered := func() {
					for deadline := time.Now().Add(20 * time.Second); procs[0].svc.entered.Load()+procs[1].svc.entered.Load() == 0; time.Sleep(5 * time.Millisecond) {
						if time.Now().After(deadline) {
							t.Error("no execution reached the handler in 20 s")
							return
						}
					}
				}
				untilFallback := func() {
					for deadline := time.Now().Add(20 * time.Second); procs[0].watch.caches()[idem.CacheFallback]+procs[1].watch.caches()[idem.CacheFallback] == 0; time.Sleep(5 * time.Millisecond) {
						if time.Now().After(deadline) {
							t.Error("no request fell back to PostgreSQL in 20 s")
							return
						}
					}
				}
				forger := newCacheWith(t, srv.URL, idemredis.Options{Timeout: time.Second, Logger: quiet})

				const keys, clients, attempts = 8, 3, 3
				key := make([]string, keys)
				slot := make([]string, keys)
				for k := range key {
					key[k] = uuid.NewString()
					slot[k] = procs[0].cacheKey(op, "", key[k])
				}
				type answer struct {
					key int
					r   reply
				}
				var mu sync.Mutex
				var answers []answer
				ask := func(p *stack, k int) {
					r := p.post(op, "", key[k], 10+k)
					mu.Lock()
					answers = append(answers, answer{k, r})
					mu.Unlock()
				}
				stop := make(chan struct{})
				var forging sync.WaitGroup
				forging.Go(func() { forge(forger, slot, stop) })
				var wg sync.WaitGroup
				start := make(chan struct{})
				for k := range keys {
					for c := range clients {
						wg.Go(func() {
							<-start
							for range attempts {
								ask(procs[(k+c)%2], k)
							}
						})
					}
				}
				close(start)
				f.during(srv, untilEntered, release, untilFallback)
				release()
				wg.Wait()
				close(stop)
				forging.Wait()

				// With Redis up and the forger stopped: fresh keys, each
				// executed once and cached, then each key's entry replaced
				// by the next one's; every retry is answered with its
				// own key's outcome.
				fresh := make([]string, 4)
				genuine := make([][]byte, len(fresh))
				for i := range fresh {
					fresh[i] = uuid.NewString()
					key = append(key, fresh[i])
					// Asked again until its outcome is cached: the first
					// calls after the restart may fail (the circuit's
					// cool-down), and each answer from PostgreSQL is
					// cached anew.
					for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
						if v, err := forger.Get(context.Background(), procs[0].cacheKey(op, "", fresh[i])); err == nil && len(v) > 0 && v[0] == 'R' {
							genuine[i] = v
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("fresh key %d: no outcome cached in 20 s", i)
						}
						ask(procs[0], len(key)-1)
					}
				}
				for i, k := range fresh {
					set(t, forger, procs[0].cacheKey(op, "", k), genuine[(i+1)%len(fresh)])
				}
				for i := range fresh {
					for _, p := range procs {
						ask(p, keys+i)
					}
				}

				first := map[int]reply{}
				for _, a := range answers {
					if a.r.status != 201 {
						t.Errorf("key %d: %d %s", a.key, a.r.status, a.r.body)
						continue
					}
					if f, ok := first[a.key]; ok && f.body != a.r.body {
						t.Errorf("key %d: answered %s and %s", a.key, f.body, a.r.body)
					}
					if _, ok := first[a.key]; !ok {
						first[a.key] = a.r
					}
				}
				if len(first) != len(key) {
					t.Errorf("%d of %d keys answered with a 201", len(first), len(key))
				}
				for k := range key {
					if n := procs[0].executions(op, "", key[k]); n != 1 {
						t.Errorf("key %d: %d payments", k, n)
					}
				}
				rejected := procs[0].watch.rejected.Load() + procs[1].watch.rejected.Load()
				if rejected == 0 {
					t.Error("no entry was rejected: the forgeries did not bite")
				}
				c := procs[0].watch.caches()
				for r, n := range procs[1].watch.caches() {
					c[r] += n
				}
				if f.name != "flushed" && c[idem.CacheFallback] == 0 {
					t.Errorf("no request fell back to PostgreSQL: %v (the fault did not bite)", c)
				}
				t.Logf("%s: %d answers; cache results %v; %d entries rejected", f.name, len(answers), c, rejected)
			})
		}
	}
}
