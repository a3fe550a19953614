package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/examples/payments/shop"
	shopapi "github.com/idemgen/idemgen/examples/payments/shop/api"
	"github.com/idemgen/idemgen/runtime/downstream"
	"github.com/idemgen/idemgen/runtime/idemclient"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// The faults of TestDerivedKeysAcrossServices, each injected into the first
// attempt of an order. kill, hangup and rollback strike after the payments
// service committed the payment and before the shop commits the order;
// drop after the shop committed.
const (
	faultKill     = "kill"     // the shop's process is killed (SIGKILL)
	faultHangup   = "hangup"   // the shop's client hangs up
	faultRollback = "rollback" // the shop's transaction is rolled back (its connection terminated)
	faultDrop     = "drop"     // the shop's response never reaches its client
)

// faultOf is the fault injected into the first attempt of order i of n:
// a kill every n/6 orders, and a drop, a hangup or a rollback in three
// orders of eight.
func faultOf(i, n int) string {
	if i%(n/6) == n/12 {
		return faultKill
	}
	switch i % 8 {
	case 1:
		return faultDrop
	case 3:
		return faultHangup
	case 5:
		return faultRollback
	}
	return ""
}

// TestDerivedKeysAcrossServices runs two generated services as real
// processes, each with its records in a database of its own: the shop
// (examples/payments/shop), whose atomic-mode createOrder pays through the
// payments service's generated client, and the payments service. A
// retrying load places 500 orders while faults strike every point where an
// attempt of the shop can end after the payments service committed: the
// shop killed with SIGKILL, its client hanging up, its transaction rolled
// back, its response lost. The payment call of every retry carries the key
// derived from the order's key, so the payments service charges each order
// once and answers the retries with the payment it made, and the shop
// replays one outcome per order.
//
// With the generated client minting a fresh key per call instead (the
// mutation: idemclient.Do skipping derivedKey), every faulted order is paid
// twice.
func TestDerivedKeysAcrossServices(t *testing.T) {
	t.Parallel()
	const orders, workers = 500, 12
	secret := []byte("the shop's downstream secret, 32B")

	// The payments service, its gateway in this process (outliving it).
	pdb := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
	gw := gateway.New()
	gwSrv := httptest.NewServer(gw.Handler())
	t.Cleanup(gwSrv.Close)
	pay := startService(t, pdb.URL, gwSrv.URL)

	// The shop, in a database of its own, calling the payments service
	// through mid, and called through front.
	sdb := pgtest.New(t, pgtest.Options{Migrations: shop.Migrations, MigrationsTable: "shop_schema_migrations", Database: true})
	mid := &midProxy{t: t, target: pay.url(), db: sdb, kill: make(chan string),
		arrived: map[string]int{}, calls: map[string][]paymentCall{}, hangup: map[string]context.CancelFunc{}}
	midSrv := httptest.NewServer(mid)
	t.Cleanup(midSrv.Close)
	shopProc := startBinary(t, harness.ShopPackage, "DATABASE_URL="+sdb.URL, "PAYMENTS_URL="+midSrv.URL,
		"IDEM_DOWNSTREAM_SECRET="+base64.StdEncoding.EncodeToString(secret))
	front := &frontProxy{t: t, target: shopProc.url(), answers: map[string][][]byte{}}
	frontSrv := httptest.NewServer(front)
	t.Cleanup(frontSrv.Close)

	type order struct {
		key, ref, fault string
		amount          int64
	}
	list := make([]order, orders)
	for i := range list {
		list[i] = order{key: harness.NewKey(), ref: fmt.Sprintf("ref-%03d", i), fault: faultOf(i, orders), amount: int64(100 + i)}
		mid.plan(list[i].ref, list[i].fault)
		front.plan(list[i].ref, list[i].fault)
	}

	// The killer: each kill the mid proxy asks for, then a restart.
	stopKiller, killerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(killerDone)
		for {
			select {
			case <-mid.kill:
				shopProc.kill9()
				if err := shopProc.tryStart(); err != nil {
					t.Errorf("restarting the shop: %v", err)
					return
				}
			case <-stopKiller:
				return
			}
		}
	}()

	client, err := shopapi.NewClient(frontSrv.URL, idemclient.WithHTTPClient(&http.Client{Timeout: 2 * time.Minute}),
		idemclient.WithRetryPolicy(idemclient.RetryPolicy{MaxAttempts: 20, InitialBackoff: 50 * time.Millisecond, MaxBackoff: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	got := make([]shopapi.Order, orders)
	var next atomic.Int64
	var calls atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < orders && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				o := list[i]
				req := shopapi.CreateOrderRequest{Body: shopapi.NewOrder{Reference: o.ref, Amount: o.amount, Currency: "EUR"}}
				for ctx.Err() == nil {
					cctx, ccancel := context.WithCancel(ctx)
					mid.onHangup(o.ref, ccancel)
					res, err := client.CreateOrder(cctx, req, idemclient.WithIdempotencyKey(o.key))
					ccancel()
					calls.Add(1)
					if err == nil {
						switch r := res.Response.(type) {
						case shopapi.CreateOrder201Response:
							got[i] = r.Body
						case shopapi.CreateOrder502Response: // payments unavailable: retry
							continue
						default:
							t.Errorf("order %s: %d", o.ref, res.Status)
							return
						}
						break
					}
					if !idemclient.IsRetryable(err) {
						t.Errorf("order %s: %v", o.ref, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	loadTime := time.Since(start)
	close(stopKiller)
	<-killerDone
	if t.Failed() || ctx.Err() != nil {
		t.Fatalf("the load did not complete: %v", ctx.Err())
	}

	// Every order replays the outcome its client got, byte for byte as
	// every earlier answer.
	for i, o := range list {
		res, err := client.CreateOrder(ctx, shopapi.CreateOrderRequest{Body: shopapi.NewOrder{Reference: o.ref, Amount: o.amount, Currency: "EUR"}},
			idemclient.WithIdempotencyKey(o.key))
		if err != nil || !res.Replayed {
			t.Fatalf("order %s replayed: %v (replayed %v)", o.ref, err, res != nil && res.Replayed)
		}
		if r, _ := res.Response.(shopapi.CreateOrder201Response); r.Body != got[i] {
			t.Errorf("order %s: replayed %+v, its client got %+v", o.ref, r.Body, got[i])
		}
	}
	front.checkOneAnswer(t)

	// The payments service: one payment per order, the one the shop
	// recorded, under the key derived from the order's; its calls carried
	// that key on every attempt.
	want := map[string]int64{}
	derived := map[string]string{}
	for _, o := range list {
		k, err := downstream.Derive(secret, downstream.Record{Operation: "createOrder", Key: o.key}, "createPayment", downstream.UUID)
		if err != nil {
			t.Fatal(err)
		}
		want[k], derived[o.ref] = o.amount, k
	}
	mid.check(t, derived)
	checkBooks(t, readLedger(t, pdb), gw, want)
	paymentOf := map[string][]string{}
	rows, err := pdb.Query(ctx, `SELECT order_id, id FROM payments`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var ref, id string
		if err := rows.Scan(&ref, &id); err != nil {
			t.Fatal(err)
		}
		paymentOf[ref] = append(paymentOf[ref], id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	orderOf := map[string]shopapi.Order{}
	rows, err = sdb.Query(ctx, `SELECT id, reference, payment_id, charge_id FROM orders WHERE status = 'paid'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var o shopapi.Order
		if err := rows.Scan(&o.ID, &o.Reference, &o.PaymentID, &o.ChargeID); err != nil {
			t.Fatal(err)
		}
		orderOf[o.Reference] = o
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	dups := 0
	for i, o := range list {
		if len(paymentOf[o.ref]) != 1 {
			dups++
			t.Errorf("order %s (fault %q): %d payments %v, want 1", o.ref, o.fault, len(paymentOf[o.ref]), paymentOf[o.ref])
			continue
		}
		if s := orderOf[o.ref]; s.ID != got[i].ID || s.PaymentID != paymentOf[o.ref][0] || got[i].PaymentID != s.PaymentID {
			t.Errorf("order %s: the shop holds %+v, its client got %+v, the payments service made %s", o.ref, s, got[i], paymentOf[o.ref][0])
		}
	}
	if len(orderOf) != orders {
		t.Errorf("%d paid orders in the shop, want %d", len(orderOf), orders)
	}
	hit := mid.faults()
	hit[faultDrop] = front.dropped()
	for _, f := range []string{faultKill, faultHangup, faultRollback, faultDrop} {
		planned := 0
		for _, o := range list {
			if o.fault == f {
				planned++
			}
		}
		if hit[f] != planned || planned == 0 {
			t.Errorf("fault %s struck %d orders, %d planned", f, hit[f], planned)
		}
	}
	t.Logf("%d orders in %v, %d calls of the shop's client; faults struck: %v (%d transactions terminated); shop started %d times; orders paid more than once: %d",
		orders, loadTime.Round(time.Millisecond), calls.Load(), hit, mid.terminated, shopProc.starts, dups)
}

// paymentCall is one call of the payments service the mid proxy passed on.
type paymentCall struct {
	key      string
	status   int
	replayed bool
}

// midProxy stands between the shop and the payments service. It passes every
// call on (whatever the shop does meanwhile, so that the payment is made),
// then, on the first call of an order planned so, strikes the shop before
// it can commit: it asks for a kill and waits for the connection to die,
// makes the shop's client hang up and waits for the call to be cancelled,
// or terminates the shop's open transactions and answers.
type midProxy struct {
	t      *testing.T
	target string
	db     *pgtest.DB // the shop's database
	kill   chan string

	mu      sync.Mutex
	planned map[string]string
	arrived map[string]int           // calls by order reference
	calls   map[string][]paymentCall // by order reference, as answered
	hangup  map[string]context.CancelFunc
	struck  map[string]int
	// terminated counts the shop's transactions the rollback faults ended.
	terminated int
}

func (m *midProxy) plan(ref, fault string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.planned == nil {
		m.planned, m.struck = map[string]string{}, map[string]int{}
	}
	m.planned[ref] = fault
}

// onHangup registers how the client of ref's current call hangs up.
func (m *midProxy) onHangup(ref string, cancel context.CancelFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hangup[ref] = cancel
}

func (m *midProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var p struct {
		Metadata struct {
			OrderID string `json:"orderId"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(body, &p)
	ref := p.Metadata.OrderID
	// The first call of an order to arrive is the one a fault may strike
	// (a retry can overtake it only in the payments service's answers).
	m.mu.Lock()
	first := m.arrived[ref] == 0
	m.arrived[ref]++
	m.mu.Unlock()
	// Passed on whatever becomes of the shop's request: the fault must
	// strike after the payments service committed.
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, m.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		m.t.Error(err)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Errorf("order %s: the payments service: %v", ref, err)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	rbody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		m.t.Errorf("order %s: the payments service's answer: %v", ref, err)
		return
	}
	m.mu.Lock()
	m.calls[ref] = append(m.calls[ref], paymentCall{key: r.Header.Get("Idempotency-Key"), status: resp.StatusCode,
		replayed: resp.Header.Get("Idempotent-Replayed") == "true"})
	fault := ""
	if first {
		fault = m.planned[ref]
		if resp.StatusCode != http.StatusCreated {
			m.t.Errorf("order %s: the first payment call was answered %d %s", ref, resp.StatusCode, rbody)
			fault = ""
		}
	}
	hangup := m.hangup[ref]
	m.mu.Unlock()

	switch fault {
	case faultKill:
		select {
		case m.kill <- ref:
		case <-r.Context().Done(): // killed already, by another order's kill
		}
		m.strike(ref, fault, r)
		return
	case faultHangup:
		if hangup == nil {
			m.t.Errorf("order %s: no client to hang up", ref)
			break
		}
		hangup()
		m.strike(ref, fault, r)
		return
	case faultRollback:
		// Every open transaction of the shop: this order's, waiting for
		// this answer (unless a fault of another order ended it first), and
		// those of the orders in flight beside it. check proves this one
		// did not commit: its retry asked the payments service again.
		var n int
		err := m.db.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'idle in transaction' AND pid <> pg_backend_pid()) t`).Scan(&n)
		if err != nil {
			m.t.Errorf("order %s: terminating the shop's transactions: %v", ref, err)
		}
		m.mu.Lock()
		m.struck[fault]++
		m.terminated += n
		m.mu.Unlock()
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(rbody)
}

// strike waits for the shop's call to end (its process killed, or its
// client gone) and counts the fault.
func (m *midProxy) strike(ref, fault string, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
		m.t.Errorf("order %s: the shop's call outlived the %s fault by a minute", ref, fault)
	}
	m.mu.Lock()
	m.struck[fault]++
	m.mu.Unlock()
}

func (m *midProxy) faults() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for f, n := range m.struck {
		out[f] = n
	}
	return out
}

// check asserts that every payment call of an order carried the key derived
// from the order's key, and that the retries of a struck order asked the
// payments service again and were answered with the payment made.
func (m *midProxy) check(t *testing.T, derived map[string]string) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for ref, calls := range m.calls {
		for _, c := range calls {
			if c.key != derived[ref] {
				t.Errorf("order %s: a payment call carried key %s, want %s (derived from the order's key)", ref, c.key, derived[ref])
				break
			}
		}
		switch m.planned[ref] {
		case faultKill, faultHangup, faultRollback:
			replayed := false
			for _, c := range calls {
				replayed = replayed || c.status == http.StatusCreated && c.replayed
			}
			if !replayed {
				t.Errorf("order %s (%s): payment calls %+v; want a retry answered with the stored payment", ref, m.planned[ref], calls)
			}
		}
	}
}

// frontProxy stands between the shop's client and the shop. It keeps every
// answer of the shop, and loses the first one of an order planned so: the
// client sees its connection close.
type frontProxy struct {
	t      *testing.T
	target string

	mu      sync.Mutex
	planned map[string]string
	answers map[string][][]byte // 201 bodies by reference
	drops   int
}

func (f *frontProxy) plan(ref, fault string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.planned == nil {
		f.planned = map[string]string{}
	}
	f.planned[ref] = fault
}

func (f *frontProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var o shopapi.NewOrder
	_ = json.Unmarshal(body, &o)
	req, err := http.NewRequestWithContext(r.Context(), r.Method, f.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		f.t.Error(err)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	var rbody []byte
	if err == nil {
		rbody, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err != nil { // the shop died mid-request, or the client left
		hangUp(w)
		return
	}
	f.mu.Lock()
	drop := false
	if resp.StatusCode == http.StatusCreated {
		drop = len(f.answers[o.Reference]) == 0 && f.planned[o.Reference] == faultDrop
		f.answers[o.Reference] = append(f.answers[o.Reference], rbody)
		if drop {
			f.drops++
		}
	}
	f.mu.Unlock()
	if drop {
		hangUp(w)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(rbody)
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}

func (f *frontProxy) dropped() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drops
}

// checkOneAnswer asserts that the shop gave each order one answer, byte for
// byte, however many times it was asked.
func (f *frontProxy) checkOneAnswer(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for ref, answers := range f.answers {
		for _, a := range answers[1:] {
			if !bytes.Equal(a, answers[0]) {
				t.Errorf("order %s: the shop answered %s, then %s", ref, answers[0], a)
				break
			}
		}
	}
}
