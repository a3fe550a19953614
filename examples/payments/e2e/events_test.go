package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/bookkeeper"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/natsjs"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// startNATS runs a real nats-server with JetStream inside the test process.
func startNATS(t *testing.T) *server.Server {
	t.Helper()
	s, err := harness.StartNATS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

func connectNATS(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := payments.ConnectNATS(t.Context(), url, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	return nc, js
}

// errDied is what a dying bookkeeper's Ack returns: it never reaches the
// server.
var errDied = errors.New("bookkeeper died before acknowledging")

// dyingMsg is a message whose consumer dies after the inbox transaction
// committed and before the acknowledgement left the process.
type dyingMsg struct {
	jetstream.Msg
	died *atomic.Bool
}

func (m dyingMsg) Ack() error {
	m.died.Store(true)
	return errDied
}

// bookkeepers runs bookkeeper workers in this process, each on its own NATS
// connection. Every dieEvery-th message the workers book (about maxDeaths
// times in all: the check races between workers), the worker dies between its commit and its Ack: the Ack is not
// sent, its connection is closed with the rest of its fetched batch
// unacknowledged, and a fresh worker takes its place.
type bookkeepers struct {
	t         *testing.T
	url       string
	dieEvery  int64
	maxDeaths int64

	applied  atomic.Int64 // Apply calls
	booked   atomic.Int64 // Processed outcomes
	dups     atomic.Int64 // Duplicate outcomes
	failed   atomic.Int64 // Failed or Conflict outcomes
	deaths   atomic.Int64
	lastErr  atomic.Value
	wg       sync.WaitGroup
	stopping atomic.Bool
}

func (b *bookkeepers) start(ctx context.Context, workers int, db *pgtest.DB) {
	for range workers {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for ctx.Err() == nil {
				b.work(ctx, db)
			}
		}()
	}
}

// work is one worker's life: it returns when it dies or ctx ends.
func (b *bookkeepers) work(ctx context.Context, db *pgtest.DB) {
	nc, err := nats.Connect(b.url)
	if err != nil {
		b.lastErr.Store(err)
		time.Sleep(50 * time.Millisecond)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		b.lastErr.Store(err)
		return
	}
	cons, err := js.Consumer(ctx, payments.Stream, bookkeeper.Name)
	if err != nil {
		if ctx.Err() == nil {
			b.lastErr.Store(err)
			time.Sleep(50 * time.Millisecond)
		}
		return
	}
	apply := func(ctx context.Context, tx pgx.Tx, ev cloudevents.Event) error {
		b.applied.Add(1)
		return bookkeeper.Apply(ctx, tx, ev)
	}
	c, err := bookkeeper.New(db, apply, bookkeeper.Options{})
	if err != nil {
		b.t.Error(err)
		return
	}
	for ctx.Err() == nil {
		batch, err := cons.Fetch(5, jetstream.FetchMaxWait(250*time.Millisecond))
		if err != nil {
			b.lastErr.Store(err)
			return
		}
		for msg := range batch.Messages() {
			var died atomic.Bool
			var m jetstream.Msg = msg
			if n := b.booked.Load() + 1; n%b.dieEvery == 0 && b.deaths.Load() < b.maxDeaths {
				m = dyingMsg{Msg: msg, died: &died}
			}
			out, err := c.HandleMsg(ctx, m)
			switch out {
			case events.Processed:
				b.booked.Add(1)
			case events.Duplicate:
				b.dups.Add(1)
			default:
				if ctx.Err() != nil && errors.Is(err, context.Canceled) {
					// Stopped mid-message at the test's end (a late
					// redelivery, say): unacknowledged, it would be
					// delivered again. Not a failed delivery.
					return
				}
				b.failed.Add(1)
				b.lastErr.Store(err)
			}
			if died.Load() {
				if out != events.Processed && out != events.Duplicate {
					b.t.Errorf("a dying bookkeeper's message: outcome %s: %v", out, err)
				}
				b.deaths.Add(1)
				return // closes the connection; the rest of batch was never acknowledged
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			b.lastErr.Store(err)
		}
	}
}

// dyingPublisher publishes a batch, then kills the database session of the
// relay that claimed it (pg_terminate_backend), as if the relay died between
// publishing and marking the events: they stay PENDING and another relay
// publishes them again. It does so kills times, then publishes normally.
type dyingPublisher struct {
	pub    *natsjs.Publisher
	db     *pgtest.DB
	app    string       // application_name of the relay's connections
	kills  atomic.Int32 // kills left
	died   atomic.Int32 // kills done
	killed atomic.Int32 // sessions terminated (the batch's, and the relay's LISTEN one)
	sent   atomic.Int32 // events published by batches whose relay died
}

func (p *dyingPublisher) Publish(ctx context.Context, ev cloudevents.Event) error {
	return p.PublishBatch(ctx, []cloudevents.Event{ev})[0]
}

func (p *dyingPublisher) PublishBatch(ctx context.Context, evs []cloudevents.Event) []error {
	errs := p.pub.PublishBatch(ctx, evs)
	if p.kills.Add(-1) >= 0 {
		var n int32
		if err := p.db.Pool.QueryRow(context.Background(),
			`SELECT count(pg_terminate_backend(pid))::int FROM pg_stat_activity WHERE application_name = $1`, p.app).Scan(&n); err != nil {
			errs[0] = errors.Join(errs[0], err)
		}
		p.died.Add(1)
		p.killed.Add(n)
		p.sent.Add(int32(len(evs)))
	}
	return errs
}

// TestPaymentEventsBookedOnce follows createPayment's event from the HTTP
// request to the ledger, under duplicates and crashes everywhere:
//
//   - three clients per key send the same POST at once and retry;
//   - two service processes, each running an outbox relay, serve them
//     (two relays claim the same outbox), and one is killed with SIGKILL
//     twice mid-load (relay batches cut between publish and mark, lease
//     claims taken over);
//   - three bookkeeper workers consume the stream; some die after their
//     inbox transaction committed and before acknowledging, so JetStream
//     redelivers those messages (and the rest of the dead worker's batch);
//   - a third relay, in this process, has its database session killed
//     three times right after publishing a batch and before marking it
//     (the first payments go through a service without a relay, so that
//     this relay claims their events);
//   - copies of published messages are injected under new Nats-Msg-Ids, as
//     a re-publish after the stream's duplicate window would arrive.
//
// Afterwards every payment has exactly one ledger entry, the balance equals
// the payments' sum, the inbox holds one record per event, the outbox is
// empty, and the bookkeeper's Apply ran once per payment.
func TestPaymentEventsBookedOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
	ns := startNATS(t)
	nc, js := connectNATS(t, ns.ClientURL())
	t.Cleanup(nc.Close)
	// A bound for a hang, not a measure: the test kills relays, bookkeepers
	// and a service and waits for each to recover, which beside two busy
	// cores took 141 s of the 2 min this was, and its clients gave up.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := payments.EnsureStream(ctx, js, 1, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const ackWait = time.Second
	if _, err := bookkeeper.EnsureConsumer(ctx, js, ackWait); err != nil {
		t.Fatal(err)
	}

	gw := gateway.New()
	gwSrv := httptest.NewServer(gw.Handler())
	t.Cleanup(gwSrv.Close)
	gw.Set(gateway.Switches{Latency: 20 * time.Millisecond})
	// The dying relay: its own pool, with an application_name to find its
	// sessions by, and a publisher that kills them after publishing.
	relayCfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	relayCfg.ConnConfig.RuntimeParams["application_name"] = "e2e-dying-relay"
	relayPool, err := pgxpool.NewWithConfig(ctx, relayCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(relayPool.Close)
	var testRelayDups atomic.Int32
	dp := &dyingPublisher{db: db, app: "e2e-dying-relay", pub: natsjs.NewPublisher(js, natsjs.PublisherConfig{
		ExpectStream: payments.Stream,
		OnDuplicate:  func(cloudevents.Event) { testRelayDups.Add(1) },
	})}
	dp.kills.Store(3)
	relay := events.NewRelay(relayPool, dp, events.RelayConfig{
		BatchSize: 4, PollInterval: 50 * time.Millisecond, MinBackoff: 50 * time.Millisecond,
		Listen: func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, relayCfg.ConnConfig) },
	})
	rctx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan struct{})
	go func() { defer close(relayDone); _ = relay.Run(rctx) }()
	t.Cleanup(func() { stopRelay(); <-relayDone })

	bk := &bookkeepers{t: t, url: ns.ClientURL(), dieEvery: 4, maxDeaths: 6}
	bctx, stopBookkeepers := context.WithCancel(ctx)
	bk.start(bctx, 3, db)
	t.Cleanup(func() { stopBookkeepers(); bk.wg.Wait() })

	const keys, clientsPerKey = 30, 3
	want := map[string]int64{}
	keyList := make([]string, keys)
	for i := range keys {
		keyList[i] = harness.NewKey()
		want[keyList[i]] = int64(500 + i)
	}
	st2 := newRetryStats()

	// The first payments go through a service without a relay of its own,
	// before the others start: the dying relay is then the only one to
	// claim their events, so its kills happen whatever the machine's load
	// (racing two services' relays, it could lose every claim).
	const early = 3
	svc0 := startService(t, db.URL, gwSrv.URL)
	cl0 := &harness.Client{URL: svc0.url(), HTTP: &http.Client{}}
	for _, key := range keyList[:early] {
		if !createUntilDone(ctx, cl0, key, want[key], 500*time.Millisecond, st2) {
			t.Fatalf("key %s: no 201 from the relay-less service", key)
		}
	}
	waitFor(t, "the dying relay to publish the first payments' events and die", func() bool {
		return dp.died.Load() > 0
	})

	env := []string{"NATS_URL=" + ns.ClientURL()}
	svcA := startService(t, db.URL, gwSrv.URL, env...)
	svcB := startService(t, db.URL, gwSrv.URL, env...)
	var wg sync.WaitGroup
	var gaveUp atomic.Int32
	for i, key := range keyList[early:] {
		for c := range clientsPerKey {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i*20) * time.Millisecond)
				url := svcA.url()
				if (i+c)%2 == 1 {
					url = svcB.url()
				}
				cl := &harness.Client{URL: url, HTTP: &http.Client{}}
				if !createUntilDone(ctx, cl, key, want[key], 500*time.Millisecond, st2) {
					gaveUp.Add(1)
				}
			}()
		}
	}
	for range 2 {
		time.Sleep(time.Duration(150+rand.IntN(200)) * time.Millisecond)
		svcA.kill9()
		time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
		svcA.start()
	}
	wg.Wait()
	if n := gaveUp.Load(); n > 0 {
		t.Fatalf("%d clients never got a 201", n)
	}

	// Every payment's event is booked, eventually.
	count := func(sql string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := db.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	waitFor(t, "every payment booked and the outbox drained", func() bool {
		return count(`SELECT count(*) FROM ledger_entries`) >= keys &&
			count(`SELECT count(*) FROM idem_outbox`) == 0
	})

	// Copies of published messages under new message ids: the stream keeps
	// them (they are not duplicates by Nats-Msg-Id), the inbox must not book
	// them again.
	const copies = 8
	for seq := uint64(1); seq <= copies; seq++ {
		raw, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(raw.Subject)
		m.Data, m.Header = raw.Data, nats.Header{"Content-Type": {"application/cloudevents+json"}}
		if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(fmt.Sprintf("copy-%d", seq))); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the bookkeepers acknowledged everything, including the
	// redeliveries of what dead workers left.
	waitFor(t, "the bookkeeper consumer to acknowledge every message", func() bool {
		ci, err := js.Consumer(ctx, payments.Stream, bookkeeper.Name)
		if err != nil {
			return false
		}
		info, err := ci.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.NumRedelivered == 0
	})
	stopBookkeepers()
	bk.wg.Wait()

	// The payments themselves: one per key, one charge per key.
	checkBooks(t, readLedger(t, db.Pool), gw, want)
	for key, ids := range st2.paymentOf {
		if len(ids) != 1 {
			t.Errorf("key %s: clients got %d different payments", key, len(ids))
		}
	}

	// The ledger: exactly one entry per payment, none for anything else.
	if n := count(`SELECT count(*) FROM payments p WHERE (SELECT count(*) FROM ledger_entries e WHERE e.payment_id = p.id) <> 1`); n != 0 {
		t.Errorf("%d payments without exactly one ledger entry", n)
	}
	if n := count(`SELECT count(*) FROM ledger_entries e WHERE NOT EXISTS (SELECT FROM payments p WHERE p.id = e.payment_id AND p.amount = e.amount AND p.currency = e.currency)`); n != 0 {
		t.Errorf("%d ledger entries match no payment", n)
	}
	entries := count(`SELECT count(*) FROM ledger_entries`)
	if n := count(`SELECT count(DISTINCT event_id) FROM ledger_entries`); n != entries {
		t.Errorf("%d ledger entries for %d distinct events", entries, n)
	}
	var sumPayments, sumEntries, balance, balanceEntries int64
	if err := db.Pool.QueryRow(ctx, `SELECT
		(SELECT coalesce(sum(amount), 0) FROM payments)::bigint,
		(SELECT coalesce(sum(amount), 0) FROM ledger_entries)::bigint,
		(SELECT coalesce(sum(authorized), 0) FROM ledger_balances)::bigint,
		(SELECT coalesce(sum(entries), 0) FROM ledger_balances)::bigint`).Scan(&sumPayments, &sumEntries, &balance, &balanceEntries); err != nil {
		t.Fatal(err)
	}
	if sumEntries != sumPayments || balance != sumPayments || balanceEntries != keys {
		t.Errorf("sums: payments %d, ledger entries %d, balance %d over %d entries; want %d entries", sumPayments, sumEntries, balance, balanceEntries, keys)
	}
	if n := count(`SELECT count(*) FROM idem_inbox WHERE consumer = $1`, bookkeeper.Name); n != keys {
		t.Errorf("inbox: %d records, want %d", n, keys)
	}
	if n := bk.applied.Load(); n != keys {
		t.Errorf("Apply ran %d times for %d events", n, keys)
	}

	// The stream: one message per event (re-publishes by a relay were
	// dropped by Nats-Msg-Id) plus the injected copies.
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != keys+copies {
		t.Errorf("stream holds %d messages, want %d events + %d copies", info.State.Msgs, keys, copies)
	}

	// The test did what it claims.
	if d := bk.deaths.Load(); d == 0 {
		t.Error("no bookkeeper died before acknowledging")
	}
	if d := bk.dups.Load(); d < copies+bk.deaths.Load() {
		t.Errorf("%d duplicate deliveries; want at least %d copies + %d died before Ack", d, copies, bk.deaths.Load())
	}
	if f := bk.failed.Load(); f != 0 {
		t.Errorf("%d deliveries failed; last error %v", f, bk.lastErr.Load())
	}
	relayDups := int(testRelayDups.Load())
	for _, l := range append(svcA.allLogs(), svcB.allLogs()...) {
		relayDups += strings.Count(l, "the stream dropped a re-published event")
	}
	if dp.killed.Load() == 0 {
		t.Error("the dying relay's session was never killed after a publish")
	} else if relayDups < int(dp.sent.Load()) {
		// Each event a killed relay published stays PENDING and is
		// published again, and the stream drops it as a duplicate.
		t.Errorf("%d re-publishes dropped by the stream; the killed relay had published %d events", relayDups, dp.sent.Load())
	}
	t.Logf("%d keys (%d by one client through a relay-less service, the rest × %d clients over 2 services, service A killed twice): %d attempts, outcomes %v",
		keys, early, clientsPerKey, st2.attempts, st2.byOutcome)
	t.Logf("bookkeepers: %d booked, %d duplicates acknowledged, %d died before Ack; Apply ran %d times; %d relay re-publishes dropped by the stream",
		bk.booked.Load(), bk.dups.Load(), bk.deaths.Load(), bk.applied.Load(), relayDups)
	t.Logf("dying relay: killed %d times (%d sessions) after publishing %d events", dp.died.Load(), dp.killed.Load(), dp.sent.Load())
}
