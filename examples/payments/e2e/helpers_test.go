// Package e2e proves the idempotency contract of the payments example end to
// end: real HTTP, the generated handler, the real engine, real PostgreSQL,
// and for the crash test the service as a real process killed with SIGKILL.
package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/examples/payments/service"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// stack is the service served in-process by httptest over a pgtest schema.
type stack struct {
	srv *httptest.Server
	db  *pgtest.DB
	gw  *gateway.Simulator
	c   *harness.Client
}

// hangBound bounds the waits that only a hang exceeds (a load to get
// through, a service to start): what it takes on an idle machine may take
// many times as long on a busy one (make test-loaded) without anything
// being wrong, so the bound turns a hang into a failure and measures
// nothing. The go test timeout (20 min) is the bound of the whole.
const hangBound = 5 * time.Minute

func newStack(t *testing.T) *stack {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MaxConns: 32})
	gw := gateway.New()
	h, err := newHandler(db.Pool, gw)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &stack{srv: srv, db: db, gw: gw, c: &harness.Client{URL: srv.URL, HTTP: &http.Client{Timeout: 30 * time.Second}}}
}

// newHandler wires the service as cmd/payments does.
func newHandler(pool *pgxpool.Pool, gw gateway.Gateway) (http.Handler, error) {
	return newHandlerLogging(pool, gw, nil)
}

// newHandlerLogging is newHandler with the engine's log lines sent to log
// (nil: the default logger, the test's stderr).
func newHandlerLogging(pool *pgxpool.Pool, gw gateway.Gateway, log *slog.Logger) (http.Handler, error) {
	svc := service.New(pool, gw, nil)
	engine, err := idem.New(pool, idem.Config{
		Operations: api.IdempotentOperations,
		Recover:    svc.RecoveryHooks(),
		Hooks:      idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}},
		Logger:     log,
	})
	if err != nil {
		return nil, err
	}
	return api.NewHandler(svc, engine), nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ledger is what the payments table holds, by idempotency key.
type ledger struct {
	count  map[string]int
	amount map[string]int64
	charge map[string]string
	ids    map[string]bool
	total  int64
	rows   int
}

func readLedger(t *testing.T, db querier) ledger {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT id, idempotency_key, amount, charge_id FROM payments`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	l := ledger{count: map[string]int{}, amount: map[string]int64{}, charge: map[string]string{}, ids: map[string]bool{}}
	for rows.Next() {
		var id, key, charge string
		var amount int64
		if err := rows.Scan(&id, &key, &amount, &charge); err != nil {
			t.Fatal(err)
		}
		l.count[key]++
		l.amount[key] += amount
		l.charge[key] = charge
		l.ids[id] = true
		l.total += amount
		l.rows++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return l
}

// checkBooks asserts one payment per key, one charge per key, and that the
// ledger, the gateway and what the clients asked for agree.
//
// The gateway deduplicates charges by key, which would hide a service that
// charges twice; so the books are also checked against what the gateway saw
// of each key (gateway.KeyAudit): every call that reached the charging step
// beyond the first must be explained by an earlier one whose caller was not
// told the charge happened (a timeout, a crash mid-call), and no two charge
// calls for one key may ever be in flight at once (two holders of one lease).
func checkBooks(t *testing.T, l ledger, gw *gateway.Simulator, want map[string]int64) {
	t.Helper()
	charges := gw.Charges()
	audit := gw.Audit()
	raw, ambiguous := 0, 0
	for key := range want {
		a := audit[key]
		raw += a.Raw
		ambiguous += a.Ambiguous
		if a.Raw > 1+a.Ambiguous {
			t.Errorf("key %s: %d gateway calls reached the charge, only %d of them left the caller unsure: the service charged twice",
				key, a.Raw, a.Ambiguous)
		}
		if a.MaxInFlight > 1 {
			t.Errorf("key %s: %d charge calls in flight at once: two holders of one claim", key, a.MaxInFlight)
		}
	}
	t.Logf("gateway: %d keys, %d charge calls reached the charge (%d left the caller unsure), %d overlapping calls",
		len(want), raw, ambiguous, gw.Stats().Overlaps)
	dups := 0
	for key, n := range l.count {
		if n != 1 {
			dups++
			t.Errorf("ledger: %d payments for key %s", n, key)
		}
	}
	byKey := map[string]gateway.Charge{}
	for _, ch := range charges { // one per key: the gateway deduplicates
		byKey[ch.Key] = ch
	}
	var wantTotal, chargedTotal int64
	for key, amount := range want {
		wantTotal += amount
		if l.count[key] == 0 {
			t.Errorf("ledger: no payment for key %s", key)
		}
		if l.amount[key] != amount && l.count[key] == 1 {
			t.Errorf("ledger: key %s holds %d, the client asked for %d", key, l.amount[key], amount)
		}
		ch, ok := byKey[key]
		if !ok {
			t.Errorf("gateway: no charge for key %s", key)
			continue
		}
		if l.charge[key] != ch.ID {
			t.Errorf("key %s: ledger charge %s, gateway charge %s", key, l.charge[key], ch.ID)
		}
	}
	for _, ch := range charges {
		chargedTotal += ch.Amount
	}
	if len(l.count) != len(want) || len(charges) != len(want) {
		t.Errorf("keys: ledger %d, gateway %d, clients %d", len(l.count), len(charges), len(want))
	}
	if l.total != wantTotal || chargedTotal != wantTotal {
		t.Errorf("sums: ledger %d, gateway %d, clients %d", l.total, chargedTotal, wantTotal)
	}
	t.Logf("books: %d keys, %d payments, %d charges, sum %d; keys with duplicate payments: %d", len(want), l.rows, len(charges), l.total, dups)
}

func newPayment(amount int64) map[string]any {
	return map[string]any{"amount": amount, "currency": "EUR", "description": "e2e"}
}

func mustDo(t *testing.T, c *harness.Client, method, path, key string, body any) *harness.Exchange {
	t.Helper()
	ex, err := c.Do(context.Background(), method, path, key, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return ex
}

func wantProblem(t *testing.T, ex *harness.Exchange, status int, code, reason string) {
	t.Helper()
	p, ok := ex.Problem()
	if ex.Status != status || !ok || p.Code != code || p.Reason != reason {
		t.Fatalf("got %d %s %q, want %d problem+json %s / %s", ex.Status, ex.Header.Get("Content-Type"), ex.RespBody, status, code, reason)
	}
}

func wantStatus(t *testing.T, ex *harness.Exchange, status int) {
	t.Helper()
	if ex.Status != status {
		t.Fatalf("%s %s: got %d %s, want %d", ex.Method, ex.Path, ex.Status, ex.RespBody, status)
	}
}

// waitFor polls cond every 5ms until it holds; after hangBound it fails.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func chargesFor(gw *gateway.Simulator, key string) int {
	n := 0
	for _, ch := range gw.Charges() {
		if ch.Key == key {
			n++
		}
	}
	return n
}

var _ = fmt.Sprintf
