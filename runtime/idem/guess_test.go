package idem_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestInsertFirstGuess: an atomic operation reads first until it has served
// about a hundred first executions with no record found, then inserts
// first (no read before its transaction); once replays come, it reads first
// again after the first one, so replays stop running the handler.
func TestInsertFirstGuess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{})
	if idem.InsertsFirst(e.eng, e.op) {
		t.Fatal("a new operation inserts first; want it to read first")
	}
	const n = 100
	keys, bodies := firstExecutions(t, e, n)
	if !idem.InsertsFirst(e.eng, e.op) {
		t.Fatalf("after %d first executions and no replay, the operation still reads first", n)
	}
	// The guess is the engine's: another engine over the same operation
	// has served nothing yet, and reads first.
	other, err := idem.New(e.db, idem.Config{Operations: []*idem.Operation{e.op}})
	if err != nil {
		t.Fatal(err)
	}
	if idem.InsertsFirst(other, e.op) {
		t.Fatal("a new engine over the operation inserts first; want the guess kept per engine")
	}
	before := e.runs.Load()
	for i, k := range keys {
		r := e.post(k, payReq{Amount: i + 1})
		if r.Status != 201 || string(r.Body) != bodies[k] || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay %d: %d %s %v, want the replay of %s", i, r.Status, r.Body, r.Header, bodies[k])
		}
	}
	// The first replay was guessed wrong: its handler ran, and rolled back.
	if extra := e.runs.Load() - before; extra < 1 || extra > 3 {
		t.Fatalf("%d replays ran the handler %d times; want 1 to 3 (the wrong guesses)", n, extra)
	}
	if idem.InsertsFirst(e.eng, e.op) {
		t.Fatal("after a run of replays the operation still inserts first")
	}
	if p := e.payments(); p != n {
		t.Fatalf("%d payments for %d keys", p, n)
	}
}

// TestInsertFirstAnswers: an atomic operation that inserts first answers
// every request as one that reads first does — a replay, a reused key, a
// retry after a failure that was not kept, duplicates from two processes —
// on a pool (pipelined) and on a plain DB.
func TestInsertFirstAnswers(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			t.Parallel()
			p := testPolicy(idem.ModeAtomic)
			p.InFlight = idem.InFlightWait
			p.Wait = 20 * time.Second
			a := newEnvDB(t, plain, p, idem.Config{Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}})
			var bdb idem.DB = a.db
			if plain {
				bdb = plainDB{a.db}
			}
			b := newEnvWith(t, a.db, bdb, p, idem.Config{})
			for _, e := range []*env{a, b} {
				idem.PinInsertFirst(e.eng, e.op, true)
			}

			// A replay: the handler runs and rolls back, the stored
			// response answers.
			key := newKey()
			first := a.post(key, payReq{Amount: 10})
			if first.Status != 201 {
				t.Fatalf("first: %d %s", first.Status, first.Body)
			}
			r := a.post(key, payReq{Amount: 10})
			if r.Status != 201 || string(r.Body) != string(first.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay: %d %s %v, want %s", r.Status, r.Body, r.Header, first.Body)
			}
			// A reused key with another payload.
			a.post(key, payReq{Amount: 11}).wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")
			if n := a.payments(); n != 1 {
				t.Fatalf("%d payments after a first execution, a replay and a conflict", n)
			}

			// A failure that is not kept, then the retry, then its replay.
			fail := true
			var mu sync.Mutex
			a.handle("flaky", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				mu.Lock()
				defer mu.Unlock()
				if fail {
					fail = false
					return &idem.Response{Status: 503, Body: []byte("try later")}, nil
				}
				return &idem.Response{Status: 201, Body: []byte("ok")}, nil
			})
			key = newKey()
			if r := a.post(key, payReq{Amount: 1, Behave: "flaky"}); r.Status != 503 {
				t.Fatalf("flaky, first: %d %s", r.Status, r.Body)
			}
			if r := a.post(key, payReq{Amount: 1, Behave: "flaky"}); r.Status != 201 || string(r.Body) != "ok" {
				t.Fatalf("flaky, retry: %d %s", r.Status, r.Body)
			}
			if r := a.post(key, payReq{Amount: 1, Behave: "flaky"}); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("flaky, replay: %d %s", r.Status, r.Body)
			}
			if a.state(key) != idem.StateCompleted || a.payments() != 2 {
				t.Fatalf("flaky: state %s, %d payments in all", a.state(key), a.payments())
			}

			// Duplicates from two processes, each inserting first.
			for _, e := range []*env{a, b} {
				e.handle("slow", func(context.Context, pgx.Tx) (*idem.Response, error) {
					time.Sleep(20 * time.Millisecond)
					return &idem.Response{Status: 201, Body: []byte("paid")}, nil
				})
			}
			const keys, perProcess = 10, 20
			bad := duplicatesFromTwo(t, a, b, keys, perProcess, payReq{Amount: 3, Behave: "slow"}, paid)
			if n := a.payments(); n != 2+keys || bad > 0 {
				t.Fatalf("%d payments committed for %d keys (%d bad answers)", n-2, keys, bad)
			}
		})
	}
}

// TestLeaseClaimFirstGuess: a lease operation reads before it claims until
// it has served about a hundred first executions with no record found,
// then claims first (no read); once replays come, it reads first again.
// A replay whose claim came first is answered from the record the failed
// claim reads: the handler never runs for it.
func TestLeaseClaimFirstGuess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testPolicy(idem.ModeLease), idem.Config{})
	if idem.InsertsFirst(e.eng, e.op) {
		t.Fatal("a new lease operation claims first; want it to read first")
	}
	const n = 100
	keys, bodies := firstExecutions(t, e, n)
	if !idem.InsertsFirst(e.eng, e.op) {
		t.Fatalf("after %d first executions and no replay, the lease operation still reads first", n)
	}
	before := e.runs.Load()
	for i, k := range keys {
		r := e.post(k, payReq{Amount: i + 1})
		if r.Status != 201 || string(r.Body) != bodies[k] || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay %d: %d %s %v, want the replay of %s", i, r.Status, r.Body, r.Header, bodies[k])
		}
	}
	if extra := e.runs.Load() - before; extra != 0 {
		t.Fatalf("%d replays ran the handler %d times; want 0", n, extra)
	}
	if idem.InsertsFirst(e.eng, e.op) {
		t.Fatal("after a run of replays the lease operation still claims first")
	}
	if p := e.payments(); p != n {
		t.Fatalf("%d payments for %d keys", p, n)
	}
}

// TestLeaseClaimFirstAnswers: a lease operation that claims first answers
// every request as one that reads first does — a replay, a reused key, a
// duplicate while the first holds the key, duplicates from two processes.
func TestLeaseClaimFirstAnswers(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeLease)
	a := newEnv(t, p, idem.Config{Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}})
	b := newEnvWith(t, a.db, a.db, p, idem.Config{})
	for _, e := range []*env{a, b} {
		idem.PinInsertFirst(e.eng, e.op, true)
	}

	key := newKey()
	first := a.post(key, payReq{Amount: 10})
	if first.Status != 201 {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	r := a.post(key, payReq{Amount: 10})
	if r.Status != 201 || string(r.Body) != string(first.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s %v, want %s", r.Status, r.Body, r.Header, first.Body)
	}
	a.post(key, payReq{Amount: 11}).wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")

	// A duplicate while the first holds its claim: in flight, from either
	// process; the first's outcome is then the one replayed.
	key = newKey()
	release := a.releaseOnExit(t)
	held := make(chan result, 1)
	go func() { held <- a.post(key, payReq{Amount: 5, Behave: "block"}) }()
	waitStarted(t, a)
	for _, e := range []*env{a, b} {
		e.post(key, payReq{Amount: 5, Behave: "block"}).wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
	}
	release()
	if r := recv(t, held); r.Status != 201 {
		t.Fatalf("the held request: %d %s", r.Status, r.Body)
	}
	if r := b.post(key, payReq{Amount: 5, Behave: "block"}); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after the held request: %d %s, want its replay", r.Status, r.Body)
	}
	if n := a.payments(); n != 2 {
		t.Fatalf("%d payments after two keys", n)
	}

	// Duplicates from two processes, each claiming first: one execution
	// per key; the others are in flight or replays.
	const keys, perProcess = 10, 10
	bad := duplicatesFromTwo(t, a, b, keys, perProcess, payReq{Amount: 3}, func(r result) bool { return r.Status == 201 || r.Status == 409 })
	if n := a.payments(); n != 2+keys || bad > 0 {
		t.Fatalf("%d payments committed for %d keys (%d bad answers)", n-2, keys, bad)
	}
}
