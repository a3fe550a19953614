package idem_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestFailingRequestsSaturatingPool: four times as many requests as the
// pool has connections, every handler failing after a write (a retryable
// outcome), in each mode, pipelined and plain: every request records
// FAILED_RETRYABLE. The failure path writes that record through the pool;
// if it did so while the request's transaction still held its connection,
// two failing requests would hold both connections and wait for a third
// until the bookkeeping deadline, and their records would not be written.
func TestFailingRequestsSaturatingPool(t *testing.T) {
	t.Parallel()
	for _, mode := range []idem.Mode{idem.ModeAtomic, idem.ModeLease} {
		for _, plain := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/plain=%v", mode, plain), func(t *testing.T) {
				t.Parallel()
				db := pgtest.New(t, pgtest.Options{Migrations: businessSchema, MaxConns: 8})
				var edb idem.DB = poolOn(t, db, func(c *pgxpool.Config) { c.MaxConns = 2 })
				if plain {
					edb = plainDB{edb}
				}
				e := newEnvWith(t, db, edb, testPolicy(mode), idem.Config{})
				e.handle("fail", func(context.Context, pgx.Tx) (*idem.Response, error) {
					return &idem.Response{Status: 500, Body: []byte("{}")}, nil
				})
				const n = 8 // four times the pool
				keys := make([]string, n)
				var wg sync.WaitGroup
				for i := range keys {
					keys[i] = newKey()
					wg.Add(1)
					go func() {
						defer wg.Done()
						if r := e.post(keys[i], payReq{Amount: 1, Behave: "fail"}); r.Status != 500 {
							t.Errorf("key %d: %d %s", i, r.Status, r.Body)
						}
					}()
				}
				wg.Wait()
				for i, k := range keys {
					if s := e.state(k); s != idem.StateFailedRetryable {
						t.Errorf("key %d: record %q, want FAILED_RETRYABLE", i, s)
					}
				}
			})
		}
	}
}
