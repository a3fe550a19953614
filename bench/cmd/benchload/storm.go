package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// stormTarget is a system a storm and the reused-key check drive.
type stormTarget struct {
	name    string
	path    string
	fiber   bool   // on the Fiber listener
	counter string // its handler's counter in /_stats
	idemgen bool
}

var stormTargets = []stormTarget{
	{name: "idemgen", path: "/atomic", counter: "atomic", idemgen: true},
	{name: "naive", path: "/naive", counter: "naive"},
	{name: "fiber", path: "/fiber", fiber: true, counter: "fiber"},
}

func (t stormTarget) url(srv *server) string {
	return scenario{path: t.path, fiber: t.fiber}.url(srv)
}

type stormResult struct {
	target         stormTarget
	procs          int
	keys           int
	lat            []time.Duration
	statuses       map[int]int
	minEff, maxEff int   // committed business writes per key
	runs           int64 // handler runs, all keys
	// cache counts the Redis engine's requests by what its cache did
	// (hit, miss, fallback), all processes.
	cache map[string]int64
	// pool: the server pools' acquires that found no idle connection and
	// their total wait; waits: PostgreSQL backends of the benchmark's
	// database seen waiting, by wait event, sampled every 2 ms during the
	// storm (a backend waiting 10 ms counts about 5 times).
	pool  map[string]int64
	waits map[string]int
}

func (r stormResult) runsPerKey() float64 {
	if r.keys == 0 {
		return 0
	}
	return float64(r.runs) / float64(r.keys)
}

// servers returns the processes a storm spreads over: the main one, and a
// second one when procs is 2.
func (b *bench) servers(procs int) ([]*server, error) {
	if procs == 1 {
		return []*server{b.srv}, nil
	}
	if b.extra == nil {
		srv, err := b.start()
		if err != nil {
			return nil, err
		}
		b.extra = srv
	}
	return []*server{b.srv, b.extra}, nil
}

// storm sends size concurrent requests with one key (and one body), spread
// over procs server processes, for keys keys per round, and counts per key
// the business writes that committed and the handler runs it took.
func (b *bench) storm(tg stormTarget, procs, keys, size, rounds int) (stormResult, error) {
	srvs, err := b.servers(procs)
	if err != nil {
		return stormResult{target: tg, procs: procs}, err
	}
	return b.stormOn(tg, srvs, keys, size, rounds, nil)
}

// stormOn is storm on the given processes; released, when set, is called
// with each key's number as its requests are released.
func (b *bench) stormOn(tg stormTarget, srvs []*server, keys, size, rounds int, released func(k int)) (stormResult, error) {
	res := stormResult{target: tg, procs: len(srvs), statuses: map[int]int{}, minEff: 1 << 30}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.db)
	if err != nil {
		return res, err
	}
	defer conn.Close(ctx)
	runs := func(sign int64) (int64, error) {
		var n int64
		for _, srv := range srvs {
			st, err := b.stats(srv)
			if err != nil {
				return 0, err
			}
			n += st.Invocations[tg.counter]
			for k, v := range st.Cache {
				res.cache[k] += sign * v
			}
			for k, v := range st.Pool {
				res.pool[k] += sign * v
			}
		}
		return n, nil
	}
	// Warm every process up (connections, pool, goroutines) with as many
	// concurrent requests of the baseline as the storm sends, uncounted.
	for _, srv := range srvs {
		var wg sync.WaitGroup
		for i := 0; i < size; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, _ = b.exchange(srv.base+"/baseline", "", b.body())
			}()
		}
		wg.Wait()
	}
	res.cache, res.pool, res.waits = map[string]int64{}, map[string]int64{}, map[string]int{}
	before, err := runs(-1)
	if err != nil {
		return res, err
	}
	stopSampling := b.sampleWaits(res.waits)
	defer stopSampling()
	var mu sync.Mutex
	for r := 0; r < rounds; r++ {
		for k := 0; k < keys; k++ {
			key := uuid.Must(uuid.NewV7()).String()
			body := b.body()
			var wg sync.WaitGroup
			gate := make(chan struct{})
			var firstErr error
			for i := 0; i < size; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-gate
					t0 := time.Now()
					status, _, err := b.exchange(tg.url(srvs[i%len(srvs)]), key, body)
					d := time.Since(t0)
					mu.Lock()
					defer mu.Unlock()
					res.lat = append(res.lat, d)
					res.statuses[status]++
					if err != nil && firstErr == nil {
						firstErr = err
					}
				}()
			}
			close(gate)
			if released != nil {
				released(r*keys + k)
			}
			wg.Wait()
			if firstErr != nil {
				return res, firstErr
			}
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM bench_payments WHERE idempotency_key = $1", key).Scan(&n); err != nil {
				return res, err
			}
			res.minEff = min(res.minEff, n)
			res.maxEff = max(res.maxEff, n)
			res.keys++
		}
	}
	stopSampling()
	after, err := runs(1)
	if err != nil {
		return res, err
	}
	res.runs = after - before
	sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
	return res, nil
}

// mismatchResult is what a system answers to a key reused with another body.
type mismatchResult struct {
	target         stormTarget
	first, second  int
	sameBody       bool // the second request got the first one's response
	secondExecuted bool // the handler ran for the second request
}

// mismatch sends a request, then another with the same key and another
// amount.
func (b *bench) mismatch(tg stormTarget) (mismatchResult, error) {
	res := mismatchResult{target: tg}
	key := uuid.Must(uuid.NewV7()).String()
	url := tg.url(b.srv)
	st0, err := b.stats(b.srv)
	if err != nil {
		return res, err
	}
	s1, b1, err := b.exchange(url, key, []byte(`{"amount":100,"currency":"EUR","reference":"first"}`))
	if err != nil {
		return res, err
	}
	st1, err := b.stats(b.srv)
	if err != nil {
		return res, err
	}
	s2, b2, err := b.exchange(url, key, []byte(`{"amount":99900,"currency":"EUR","reference":"second"}`))
	if err != nil {
		return res, err
	}
	st2, err := b.stats(b.srv)
	if err != nil {
		return res, err
	}
	if st1.Invocations[tg.counter]-st0.Invocations[tg.counter] != 1 {
		return res, fmt.Errorf("the first request ran the handler %d times", st1.Invocations[tg.counter]-st0.Invocations[tg.counter])
	}
	res.first, res.second = s1, s2
	res.sameBody = s2 < 300 && bytes.Equal(b1, b2)
	res.secondExecuted = st2.Invocations[tg.counter] > st1.Invocations[tg.counter]
	return res, nil
}

// verdict says in words what the second request of a mismatch got.
func (m mismatchResult) verdict() string {
	switch {
	case m.sameBody:
		return fmt.Sprintf("%d with the first request's response", m.second)
	case m.secondExecuted:
		return fmt.Sprintf("%d, executed as a new payment", m.second)
	case m.second == 409 || m.second == 422:
		return fmt.Sprintf("%d, refused", m.second)
	}
	return fmt.Sprintf("%d", m.second)
}

// sampleWaits counts, every 2 ms until the returned stop is called, the
// backends of the benchmark's database that wait, by wait event type and
// event ("Lock/transactionid", "IO/WALSync", ...); "Client/ClientRead"
// (idle in a transaction, waiting for the server's next statement) too.
func (b *bench) sampleWaits(into map[string]int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := pgx.Connect(ctx, b.db)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		for ctx.Err() == nil {
			rows, err := conn.Query(ctx, `SELECT wait_event_type || '/' || wait_event FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle' AND wait_event IS NOT NULL`)
			if err != nil {
				return
			}
			for rows.Next() {
				var w string
				if rows.Scan(&w) == nil {
					into[w]++
				}
			}
			rows.Close()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}
