package idem_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// outside is the external system of TestFailedLeaseAttemptRecovers: a card
// processor that counts every charge it makes per key. Unlike a real
// gateway it does not deduplicate by key, so a service that charges twice
// shows.
type outside struct {
	mu      sync.Mutex
	charges map[string]int
}

func (o *outside) charge(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.charges[key]++
}

func (o *outside) charged(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.charges[key]
}

// TestFailedLeaseAttemptRecovers: a lease-mode handler acts outside the
// database (it charges a card), then fails: its own statement fails, the
// database cancels or kills it, it panics, or it answers a 5xx. The client
// retries with the same key and payload. The retry must not charge again
// blindly: the operation's recovery hook runs first, finds the charge and
// saves it as the recovery point, and the handler records it instead of
// charging. Every way of failing leaves exactly one charge per key, and the
// failed attempt's business writes never commit.
func TestFailedLeaseAttemptRecovers(t *testing.T) {
	t.Parallel()
	// How the first attempt fails after the charge, and what its client gets.
	fails := []struct {
		name   string
		status int
		reason string // of the problem answered; "" for the handler's own 5xx
		fail   func(ctx context.Context, e *env, tx pgx.Tx) (*idem.Response, error)
	}{
		{"its statement fails", 500, idemproblem.ReasonInternal, func(ctx context.Context, _ *env, tx pgx.Tx) (*idem.Response, error) {
			_, err := tx.Exec(ctx, "SELECT 1/0")
			return nil, fmt.Errorf("insert payment: %w", err)
		}},
		{"its statement is cancelled", 500, idemproblem.ReasonInternal, func(ctx context.Context, _ *env, tx pgx.Tx) (*idem.Response, error) {
			// What a statement_timeout, a lock_timeout or pg_cancel_backend
			// does: the statement fails, the connection stays open.
			if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 20"); err != nil {
				return nil, err
			}
			_, err := tx.Exec(ctx, "SELECT pg_sleep(5)")
			return nil, fmt.Errorf("insert payment: %w", err)
		}},
		{"its backend is terminated", 503, idemproblem.ReasonOutcomeUnknown, func(ctx context.Context, e *env, tx pgx.Tx) (*idem.Response, error) {
			var pid int32
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				return nil, err
			}
			var ok bool
			if err := e.db.QueryRow(ctx, "SELECT pg_terminate_backend($1, 5000)", pid).Scan(&ok); err != nil || !ok {
				return nil, fmt.Errorf("terminate backend %d: %v %w", pid, ok, err)
			}
			_, err := tx.Exec(ctx, "SELECT 1")
			return nil, fmt.Errorf("insert payment: %w", err)
		}},
		{"it panics", 500, idemproblem.ReasonInternal, func(context.Context, *env, pgx.Tx) (*idem.Response, error) {
			panic("handler bug after the charge")
		}},
		{"it answers 503", 503, "", func(context.Context, *env, pgx.Tx) (*idem.Response, error) {
			return &idem.Response{Status: 503, Body: []byte(`{"error":"ledger busy"}`)}, nil
		}},
	}
	for _, plain := range []bool{false, true} {
		session := "pipelined"
		if plain {
			session = "plain"
		}
		t.Run(session, func(t *testing.T) {
			t.Parallel()
			ext := &outside{charges: map[string]int{}}
			var hooked atomic.Int64
			hook := func(ctx context.Context, rec idem.Recovery) (idem.Decision, error) {
				hooked.Add(1)
				k, _ := idem.KeyFromContext(ctx)
				if rec.HasPoint || ext.charged(k.Value) == 0 {
					return idem.NotExecuted(), nil
				}
				if err := idem.SaveRecoveryPoint(ctx, "charged", []byte(k.Value)); err != nil {
					return idem.Unknown(), err
				}
				return idem.NotExecuted(), nil
			}
			p := testPolicy(idem.ModeLease)
			e := newEnvDB(t, plain, p, idem.Config{
				Recover: map[string]idem.RecoverFunc{"createPayment": hook},
				Hooks:   idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}},
			})
			var attempts sync.Map // key -> *atomic.Int64
			for _, f := range fails {
				e.handle(f.name, func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
					k, _ := idem.KeyFromContext(ctx)
					if point, _, ok := idem.RecoveryPointFrom(ctx); ok && point == "charged" {
						return &idem.Response{Status: 201, Body: []byte("recorded the earlier charge")}, nil
					}
					ext.charge(k.Value)
					n, _ := attempts.LoadOrStore(k.Value, new(atomic.Int64))
					if n.(*atomic.Int64).Add(1) == 1 {
						return f.fail(ctx, e, tx)
					}
					return &idem.Response{Status: 201, Body: []byte("charged")}, nil
				})
			}
			for _, f := range fails {
				t.Run(f.name, func(t *testing.T) {
					key := newKey()
					req := payReq{Amount: 7, Behave: f.name}
					first := e.post(key, req)
					if f.reason != "" {
						first.wantProblem(t, f.status, problemCode(f.status), f.reason)
					} else if first.Status != f.status {
						t.Fatalf("first attempt: %d %s, want %d", first.Status, first.Body, f.status)
					}
					if n := e.count("SELECT count(*) FROM payments WHERE idem_key = $1", key); n != 0 {
						t.Fatalf("the failed attempt committed %d business rows", n)
					}
					before := hooked.Load()
					retry := e.post(key, req)
					if retry.Status != 201 || string(retry.Body) != "recorded the earlier charge" {
						t.Errorf("retry: %d %s, want 201 recorded the earlier charge", retry.Status, retry.Body)
					}
					if n := hooked.Load() - before; n != 1 {
						t.Errorf("the recovery hook ran %d times before the retry's handler, want 1", n)
					}
					if n := ext.charged(key); n != 1 {
						t.Errorf("the card was charged %d times under one key", n)
					}
					again := e.post(key, req)
					if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" {
						t.Errorf("third request: %d (replayed %q)", again.Status, again.Header.Get("Idempotent-Replayed"))
					}
					if n := e.count("SELECT count(*) FROM payments WHERE idem_key = $1", key); n != 1 {
						t.Errorf("%d payments for the key, want 1", n)
					}
				})
			}
		})
	}
}

// problemCode is the profile-default code of an engine problem's status.
func problemCode(status int) string {
	switch status {
	case 500:
		return idemproblem.CodeInternal
	case 503:
		return idemproblem.CodeUnavailable
	}
	return ""
}
