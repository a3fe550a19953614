package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestPoolSaturation: more slow lease-mode requests than the pool has
// connections. Each holds its transaction's connection while the gateway
// takes longer than a third of the lease, so the engine renews the lease
// while every connection is taken. All requests must still complete.
func TestPoolSaturation(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MaxConns: 4})
	gw := gateway.New()
	gw.Set(gateway.Switches{Latency: 2 * time.Second}) // lease 5s: renewed every ~1.7s
	h, err := newHandler(db.Pool, gw)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	const n = 12
	// Three rounds of four 2 s gateway calls: 6 s on an idle machine; the
	// bound only turns a hang (a renewal that waits for a connection the
	// handlers hold) into a failure.
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	want := map[string]int64{}
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := range n {
		key := harness.NewKey()
		amount := int64(300 + i)
		want[key] = amount
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &harness.Client{URL: srv.URL, HTTP: &http.Client{}}
			ex, err := c.Do(ctx, "POST", "/payments", key, newPayment(amount))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				statuses[0]++
				return
			}
			statuses[ex.Status]++
		}()
	}
	wg.Wait()
	t.Logf("%d requests over 4 connections: statuses %v (0 = no answer before hangBound)", n, statuses)
	if statuses[201] != n {
		t.Fatalf("want %d × 201", n)
	}
	checkBooks(t, readLedger(t, db), gw, want)
}
