package idem_test

import (
	"context"
	"errors"
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

// TestRenewerResumesAfterBackoff: the renewer's rounds fail for a while
// (its connection cannot be opened, and renewals through the pool fail),
// and a claim starts while it backs off.
// Once the database is reachable again, that claim's lease is renewed: the
// claim that woke the renewer during its backoff must not leave it stuck
// (it waited for a timer it had stopped, and every lease of the engine
// lapsed).
func TestRenewerResumesAfterBackoff(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeLease)
	// Long enough that a renewal delayed by a busy machine still comes
	// before the lease runs out (the engine would then cancel the handler).
	p.Lease = 5 * time.Second
	db := pgtest.New(t, pgtest.Options{Migrations: businessSchema})
	var refuse atomic.Bool
	pool := poolOn(t, db, func(c *pgxpool.Config) {
		c.BeforeConnect = func(context.Context, *pgx.ConnConfig) error {
			if refuse.Load() {
				return errors.New("injected: no new connections")
			}
			return nil
		}
	})
	failed := make(chan struct{})
	var once sync.Once
	e := newEnvWith(t, db, refusingRenewals{pool, &refuse}, p, idem.Config{Hooks: idem.Hooks{
		OnError: func(_ context.Context, _ *idem.Operation, err error) {
			if strings.Contains(err.Error(), "renew leases") {
				once.Do(func() { close(failed) })
			}
		}}})
	// The requests take idle pool connections; only the renewer, opening
	// its own, is refused.
	var conns []*pgxpool.Conn
	for range 3 {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	running := make(chan string, 2)
	// The handler answers once its lease has been renewed (the record's
	// lease_expires_at moved past where its claim set it), read in its own
	// transaction, which sees each renewal once committed. A renewer stuck
	// after its backoff never renews: after many renewal periods (each a
	// third of the lease; the backoff is at most 1 s) it answers "lapsed".
	e.handle("hold", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
		k, _ := idem.KeyFromContext(ctx)
		lease := func() (at time.Time, err error) {
			err = tx.QueryRow(ctx, "SELECT lease_expires_at FROM idem_records WHERE idempotency_key = $1", k.Value).Scan(&at)
			return at, err
		}
		claimed, err := lease()
		if err != nil {
			return nil, err
		}
		running <- k.Value
		for range 600 { // 30 s of 50 ms polls: a hang, not a slow machine
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			at, err := lease()
			if err != nil {
				return nil, err
			}
			if at.After(claimed) {
				return &idem.Response{Status: 201, Body: []byte("renewed")}, nil
			}
		}
		return &idem.Response{Status: 201, Body: []byte("lapsed")}, nil
	})
	refuse.Store(true)
	first := e.async(newKey(), payReq{Amount: 1, Behave: "hold"}) // its renewals fail
	select {
	case <-failed:
	case <-time.After(30 * time.Second):
		t.Fatal("no renewal failed")
	}
	// The renewer backs off now (its rounds keep failing); a new claim
	// wakes it, and then the database comes back.
	<-running
	key := newKey()
	second := e.async(key, payReq{Amount: 1, Behave: "hold"})
	if k := <-running; k != key {
		t.Fatalf("running %s, want %s", k, key)
	}
	refuse.Store(false)
	if r := recv(t, second); r.Status != 201 || string(r.Body) != "renewed" {
		t.Errorf("the claim made during the backoff: %d %s, want its lease renewed", r.Status, r.Body)
	}
	recv(t, first) // lost or renewed, depending on timing: either is right
}

// refusingRenewals is a pool whose lease renewals fail while refuse is set,
// as if the database could not be reached for them.
type refusingRenewals struct {
	*pgxpool.Pool
	refuse *atomic.Bool
}

func (p refusingRenewals) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if p.refuse.Load() && strings.Contains(sql, "-- name: RenewLeases ") {
		return nil, errors.New("injected: database unreachable")
	}
	return p.Pool.Query(ctx, sql, args...)
}
