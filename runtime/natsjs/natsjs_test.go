package natsjs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/internal/natstest"
	"github.com/idemgen/idemgen/runtime/natsjs"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

var testSchema = fstest.MapFS{"9000_test.up.sql": {Data: []byte(`
CREATE TABLE ledger (event_id text PRIMARY KEY, amount bigint NOT NULL);
`)}}

func newDB(t testing.TB) *pgtest.DB {
	return pgtest.New(t, pgtest.Options{Migrations: testSchema, MaxConns: 24})
}

func newEvent(typ string, n int) cloudevents.Event {
	ev := cloudevents.New()
	ev.SetType(typ)
	ev.SetSource("/payments")
	if err := ev.SetData("application/json", map[string]int{"amount": n}); err != nil {
		panic(err)
	}
	return ev
}

// enqueueN commits n events in requests of perTx events each and returns
// their ids.
func enqueueN(t testing.TB, db *pgtest.DB, prefix string, n, perTx int) []string {
	t.Helper()
	var ids []string
	for req := 0; len(ids) < n; req++ {
		k := idem.Key{Tenant: "acme", Operation: "createPayment", Value: fmt.Sprintf("%s-%d", prefix, req)}
		ctx := idem.ContextWithKey(context.Background(), k)
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < perTx && len(ids) < n; i++ {
			if err := events.Enqueue(ctx, tx, newEvent("pay.created", len(ids))); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, events.EventID(k, i+1))
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// ledger is a consumer's business logic: one ledger row per event, and a
// count of how often it ran (committed or not) per event id.
type ledger struct {
	mu   sync.Mutex
	runs map[string]int
	fail func(ev cloudevents.Event) error // fails a run when it returns an error
}

func newLedger() *ledger { return &ledger{runs: map[string]int{}} }

func (l *ledger) apply(ctx context.Context, tx pgx.Tx, ev cloudevents.Event) error {
	l.mu.Lock()
	l.runs[ev.ID()]++
	fail := l.fail
	l.mu.Unlock()
	var body struct{ Amount int }
	if err := ev.DataAs(&body); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ledger VALUES ($1, $2)`, ev.ID(), body.Amount); err != nil {
		return err
	}
	if fail != nil {
		return fail(ev)
	}
	return nil
}

func (l *ledger) runsOf(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[id]
}

// outcomes records a Consumer's outcomes per event id.
type outcomes struct {
	mu  sync.Mutex
	got map[string][]events.Outcome
	err []error
}

func newOutcomes() *outcomes { return &outcomes{got: map[string][]events.Outcome{}} }

func (o *outcomes) record(ev cloudevents.Event, out events.Outcome, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got[ev.ID()] = append(o.got[ev.ID()], out)
	if err != nil {
		o.err = append(o.err, err)
	}
}

func (o *outcomes) of(id string) []events.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]events.Outcome(nil), o.got[id]...)
}

func count(t testing.TB, db *pgtest.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func streamMsgs(t testing.TB, st jetstream.Stream) uint64 {
	t.Helper()
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func setup(t testing.TB, servers ...*server.Server) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	_, js := natstest.Connect(t, servers...)
	st := natstest.Stream(t, js, jetstream.StreamConfig{
		Name: "EVENTS", Subjects: []string{"pay.>"}, Duplicates: 2 * time.Minute, Replicas: len(servers),
	})
	return js, st
}

func durable(t testing.TB, js jetstream.JetStream, name string, ackWait time.Duration) jetstream.Consumer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		c, err := js.CreateOrUpdateConsumer(ctx, "EVENTS", jetstream.ConsumerConfig{
			Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait,
		})
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			t.Fatalf("create consumer %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// crashingPublisher publishes, then cancels the relay's context before the
// relay can mark the events published: a relay killed between the two.
type crashingPublisher struct {
	inner  *natsjs.Publisher
	cancel context.CancelFunc
}

func (p crashingPublisher) Publish(ctx context.Context, ev cloudevents.Event) error {
	defer p.cancel()
	return p.inner.Publish(ctx, ev)
}

func (p crashingPublisher) PublishBatch(ctx context.Context, evs []cloudevents.Event) []error {
	defer p.cancel()
	return p.inner.PublishBatch(ctx, evs)
}

// startConsumer runs c on cons until the test ends.
func startConsumer(t testing.TB, c *natsjs.Consumer, cons jetstream.Consumer, opts ...jetstream.PullConsumeOpt) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Consume(ctx, cons, opts...) //nolint:errcheck // ctx's error
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func TestRelayCrashBetweenPublishAndMark(t *testing.T) {
	db := newDB(t)
	js, st := setup(t, natstest.Server(t))
	ids := enqueueN(t, db, "crash", 3, 3)

	var dups atomic.Int32
	pub := natsjs.NewPublisher(js, natsjs.PublisherConfig{OnDuplicate: func(cloudevents.Event) { dups.Add(1) }})
	ctx, cancel := context.WithCancel(context.Background())
	crashing := events.NewRelay(db, crashingPublisher{pub, cancel}, events.RelayConfig{})
	if n, err := crashing.RunOnce(ctx); err == nil || n != 0 {
		t.Fatalf("crashed RunOnce = %d, %v; want an error", n, err)
	}
	if got := streamMsgs(t, st); got != 3 {
		t.Fatalf("stream has %d messages after the crashed batch, want 3", got)
	}
	if n := count(t, db, `SELECT count(*) FROM idem_outbox WHERE state = 'PENDING' AND attempts = 0`); n != 3 {
		t.Fatalf("%d events still pending, want 3", n)
	}

	// The next relay publishes them again; the stream drops the copies.
	relay := events.NewRelay(db, pub, events.RelayConfig{})
	if n, err := relay.RunOnce(context.Background()); err != nil || n != 3 {
		t.Fatalf("RunOnce = %d, %v", n, err)
	}
	if got := streamMsgs(t, st); got != 3 || dups.Load() != 3 {
		t.Fatalf("stream has %d messages, %d duplicates reported; want 3 and 3", got, dups.Load())
	}
	if n := count(t, db, `SELECT count(*) FROM idem_outbox`); n != 0 {
		t.Fatalf("%d events left in the outbox", n)
	}

	// Had a copy got through (here: re-published without Nats-Msg-Id, past
	// the broker's window), the inbox drops it.
	for _, seq := range []uint64{1, 2, 3} {
		m, err := st.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(context.Background(), m.Subject, m.Data); err != nil {
			t.Fatal(err)
		}
	}
	if got := streamMsgs(t, st); got != 6 {
		t.Fatalf("stream has %d messages, want 6", got)
	}
	l, outs := newLedger(), newOutcomes()
	c, err := natsjs.NewConsumer(natsjs.ConsumerConfig{Name: "ledger", DB: db, Handler: l.apply, OnOutcome: outs.record})
	if err != nil {
		t.Fatal(err)
	}
	startConsumer(t, c, durable(t, js, "ledger", 5*time.Second))
	natstest.Eventually(t, 30*time.Second, func() error {
		for _, id := range ids {
			if got := outs.of(id); len(got) != 2 {
				return fmt.Errorf("%s: outcomes %v", id, got)
			}
		}
		return nil
	})
	for _, id := range ids {
		if got := outs.of(id); got[0] != events.Processed || got[1] != events.Duplicate || l.runsOf(id) != 1 {
			t.Errorf("%s: outcomes %v, handler runs %d", id, got, l.runsOf(id))
		}
	}
	if n := count(t, db, `SELECT count(*) FROM ledger`); n != 3 {
		t.Fatalf("ledger has %d rows, want 3", n)
	}
}

// countingPublisher counts publish attempts per event id.
type countingPublisher struct {
	inner *natsjs.Publisher
	mu    sync.Mutex
	n     map[string]int
}

func (p *countingPublisher) add(evs ...cloudevents.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range evs {
		p.n[ev.ID()]++
	}
}

func (p *countingPublisher) Publish(ctx context.Context, ev cloudevents.Event) error {
	p.add(ev)
	return p.inner.Publish(ctx, ev)
}

func (p *countingPublisher) PublishBatch(ctx context.Context, evs []cloudevents.Event) []error {
	p.add(evs...)
	return p.inner.PublishBatch(ctx, evs)
}

func TestTwoRelaysConcurrently(t *testing.T) {
	db := newDB(t)
	js, st := setup(t, natstest.Server(t))
	const n = 600
	ids := enqueueN(t, db, "two", n, 20)
	var dups atomic.Int32
	pub := &countingPublisher{
		inner: natsjs.NewPublisher(js, natsjs.PublisherConfig{OnDuplicate: func(cloudevents.Event) { dups.Add(1) }}),
		n:     map[string]int{},
	}
	var wg sync.WaitGroup
	published := make([]int, 2)
	errs := make([]error, 2)
	for r := range 2 {
		relay := events.NewRelay(db, pub, events.RelayConfig{BatchSize: 25})
		wg.Go(func() {
			deadline := time.Now().Add(2 * time.Minute)
			for time.Now().Before(deadline) {
				k, err := relay.RunOnce(context.Background())
				if err != nil {
					errs[r] = err
					return
				}
				published[r] += k
				if k == 0 && count(t, db, `SELECT count(*) FROM idem_outbox`) == 0 {
					return
				}
			}
			errs[r] = errors.New("outbox not drained within 2 minutes")
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("relay 1 published %d, relay 2 %d", published[0], published[1])
	if published[0]+published[1] != n {
		t.Fatalf("relays published %d events in all, want %d", published[0]+published[1], n)
	}
	pub.mu.Lock()
	defer pub.mu.Unlock()
	if len(pub.n) != n {
		t.Fatalf("%d distinct events published, want %d", len(pub.n), n)
	}
	for _, id := range ids {
		if pub.n[id] != 1 {
			t.Errorf("event %s published %d times", id, pub.n[id])
		}
	}
	if got := streamMsgs(t, st); got != n || dups.Load() != 0 {
		t.Fatalf("stream has %d messages and %d duplicates, want %d and 0", got, dups.Load(), n)
	}
}

// A consumer applies a message and dies before acknowledging it: the
// redelivery is recognised by the inbox and the handler does not run again.
func TestConsumerCrashBeforeAck(t *testing.T) {
	db := newDB(t)
	srv := natstest.Server(t)
	js, _ := setup(t, srv)
	ids := enqueueN(t, db, "ack", 2, 2)
	if n, err := events.NewRelay(db, natsjs.NewPublisher(js, natsjs.PublisherConfig{}), events.RelayConfig{}).RunOnce(context.Background()); err != nil || n != 2 {
		t.Fatalf("RunOnce = %d, %v", n, err)
	}
	durable(t, js, "ledger", time.Second)
	l := newLedger()

	// The doomed consumer, on its own connection: it applies both
	// messages through the same Handler, then its process dies (the
	// connection closes) before the acknowledgements.
	{
		nc, js1 := natstest.Connect(t, srv)
		cons, err := js1.Consumer(context.Background(), "EVENTS", "ledger")
		if err != nil {
			t.Fatal(err)
		}
		batch, err := cons.Fetch(2, jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var got int
		for msg := range batch.Messages() {
			var ev cloudevents.Event
			if err := ev.UnmarshalJSON(msg.Data()); err != nil {
				t.Fatal(err)
			}
			out, err := events.Handle(context.Background(), db, "ledger", ev, func(ctx context.Context, tx pgx.Tx) error {
				return l.apply(ctx, tx, ev)
			})
			if out != events.Processed || err != nil {
				t.Fatalf("doomed consumer: %v, %v", out, err)
			}
			got++
		}
		if got != 2 {
			t.Fatalf("doomed consumer fetched %d messages", got)
		}
		nc.Close()
	}

	outs := newOutcomes()
	c, err := natsjs.NewConsumer(natsjs.ConsumerConfig{Name: "ledger", DB: db, Handler: l.apply, OnOutcome: outs.record})
	if err != nil {
		t.Fatal(err)
	}
	cons := durable(t, js, "ledger", time.Second)
	startConsumer(t, c, cons)
	natstest.Eventually(t, 30*time.Second, func() error {
		for _, id := range ids {
			if got := outs.of(id); len(got) == 0 {
				return fmt.Errorf("%s not redelivered yet", id)
			}
		}
		info, err := cons.Info(context.Background())
		if err != nil {
			return err
		}
		if info.NumAckPending != 0 {
			return fmt.Errorf("%d messages await an ack", info.NumAckPending)
		}
		return nil
	})
	for _, id := range ids {
		if got := outs.of(id); got[0] != events.Duplicate || l.runsOf(id) != 1 {
			t.Errorf("%s: redelivery outcomes %v, handler runs %d", id, got, l.runsOf(id))
		}
	}
	if n := count(t, db, `SELECT count(*) FROM ledger`); n != 2 {
		t.Fatalf("ledger has %d rows, want 2", n)
	}
}

// A handler error naks the message; the redelivery runs the handler again,
// and only the successful run's writes exist.
func TestConsumerHandlerErrorIsRedelivered(t *testing.T) {
	db := newDB(t)
	js, _ := setup(t, natstest.Server(t))
	ids := enqueueN(t, db, "nak", 1, 1)
	if _, err := events.NewRelay(db, natsjs.NewPublisher(js, natsjs.PublisherConfig{}), events.RelayConfig{}).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, outs := newLedger(), newOutcomes()
	var failed atomic.Bool
	l.fail = func(ev cloudevents.Event) error {
		if failed.CompareAndSwap(false, true) {
			return errors.New("downstream unavailable")
		}
		return nil
	}
	c, err := natsjs.NewConsumer(natsjs.ConsumerConfig{
		Name: "ledger", DB: db, Handler: l.apply, OnOutcome: outs.record,
		NakDelay: func(uint64) time.Duration { return 10 * time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	startConsumer(t, c, durable(t, js, "ledger", 30*time.Second))
	natstest.Eventually(t, 30*time.Second, func() error {
		if got := outs.of(ids[0]); len(got) < 2 {
			return fmt.Errorf("outcomes %v", got)
		}
		return nil
	})
	if got := outs.of(ids[0]); len(got) != 2 || got[0] != events.Failed || got[1] != events.Processed || l.runsOf(ids[0]) != 2 {
		t.Fatalf("outcomes %v, runs %d", got, l.runsOf(ids[0]))
	}
	if n := count(t, db, `SELECT count(*) FROM ledger`); n != 1 {
		t.Fatalf("ledger has %d rows, want 1", n)
	}
}

// A message whose id comes back with another payload is a conflict: the
// handler does not run and the message is terminated, not acknowledged as
// if it were a duplicate.
func TestConsumerConflictIsTerminated(t *testing.T) {
	db := newDB(t)
	js, st := setup(t, natstest.Server(t))
	ids := enqueueN(t, db, "conflict", 1, 1)
	if _, err := events.NewRelay(db, natsjs.NewPublisher(js, natsjs.PublisherConfig{}), events.RelayConfig{}).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A forged copy: same source and id, another amount.
	forged := newEvent("pay.created", 1_000_000)
	forged.SetID(ids[0])
	body, err := forged.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), "pay.created", body); err != nil {
		t.Fatal(err)
	}
	if n := streamMsgs(t, st); n != 2 {
		t.Fatalf("stream has %d messages", n)
	}
	l, outs := newLedger(), newOutcomes()
	c, err := natsjs.NewConsumer(natsjs.ConsumerConfig{Name: "ledger", DB: db, Handler: l.apply, OnOutcome: outs.record})
	if err != nil {
		t.Fatal(err)
	}
	cons := durable(t, js, "ledger", time.Second)
	startConsumer(t, c, cons)
	natstest.Eventually(t, 30*time.Second, func() error {
		info, err := cons.Info(context.Background())
		if err != nil {
			return err
		}
		if got := outs.of(ids[0]); len(got) != 2 || info.NumAckPending != 0 {
			return fmt.Errorf("outcomes %v, %d awaiting ack", got, info.NumAckPending)
		}
		return nil
	})
	if got := outs.of(ids[0]); got[0] != events.Processed || got[1] != events.Conflict || l.runsOf(ids[0]) != 1 {
		t.Fatalf("outcomes %v, runs %d", got, l.runsOf(ids[0]))
	}
	outs.mu.Lock()
	conflictErr := errors.Join(outs.err...)
	outs.mu.Unlock()
	if !events.IsConflict(conflictErr) {
		t.Fatalf("reported error %v is not a conflict", conflictErr)
	}
	info, err := cons.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.NumRedelivered != 0 {
		t.Fatalf("terminated message redelivered (%d)", info.NumRedelivered)
	}
	var amount int
	if err := db.QueryRow(context.Background(), `SELECT amount FROM ledger`).Scan(&amount); err != nil || amount != 0 {
		t.Fatalf("ledger amount %d, %v; want the first message's 0", amount, err)
	}
}

// A three-node cluster loses the node leading the stream while the relay
// publishes and two consumers apply: no event is lost, none applied twice.
// The producer paces itself on the consumers (at most 50 events ahead), so
// two thirds of the events are enqueued, published and consumed after the
// node is gone.
func TestClusterNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	db := newDB(t)
	servers := natstest.Cluster(t)
	js, st := setup(t, servers...)
	const n, perTx, ahead = 300, 10, 50

	var pubErrs atomic.Int32
	relay := events.NewRelay(db, natsjs.NewPublisher(js, natsjs.PublisherConfig{Timeout: 2 * time.Second}), events.RelayConfig{
		BatchSize: 10, PollInterval: 20 * time.Millisecond,
		MaxAttempts: 1000, MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		OnPublishError: func(cloudevents.Event, int, bool, error) { pubErrs.Add(1) },
	})
	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	t.Cleanup(func() { cancel(); bg.Wait() })
	bg.Go(func() { relay.Run(ctx) }) //nolint:errcheck // ctx's error

	l, outs := newLedger(), newOutcomes()
	durable(t, js, "ledger", 2*time.Second)
	for range 2 {
		_, cjs := natstest.Connect(t, servers...)
		c, err := natsjs.NewConsumer(natsjs.ConsumerConfig{
			Name: "ledger", DB: db, Handler: l.apply, OnOutcome: outs.record,
			NakDelay: func(uint64) time.Duration { return 50 * time.Millisecond },
			OnError:  func(error) {},
		})
		if err != nil {
			t.Fatal(err)
		}
		cc, err := cjs.Consumer(context.Background(), "EVENTS", "ledger")
		if err != nil {
			t.Fatal(err)
		}
		startConsumer(t, c, cc, jetstream.PullExpiry(2*time.Second), jetstream.PullHeartbeat(500*time.Millisecond))
	}

	applied := func() int { return count(t, db, `SELECT count(*) FROM ledger`) }
	var ids []string
	var idsMu sync.Mutex
	produced := make(chan error, 1)
	bg.Go(func() {
		produced <- func() error {
			for req := 0; req*perTx < n; req++ {
				for ctx.Err() == nil && req*perTx-ahead > appliedCount(ctx, db) {
					time.Sleep(5 * time.Millisecond) // pacing only; the assertions wait on state
				}
				k := idem.Key{Tenant: "acme", Operation: "createPayment", Value: fmt.Sprintf("cluster-%d", req)}
				rctx := idem.ContextWithKey(ctx, k)
				tx, err := db.Begin(rctx)
				if err != nil {
					return err
				}
				for i := range perTx {
					if err := events.Enqueue(rctx, tx, newEvent("pay.created", req*perTx+i)); err != nil {
						tx.Rollback(rctx) //nolint:errcheck
						return err
					}
				}
				if err := tx.Commit(rctx); err != nil {
					return err
				}
				idsMu.Lock()
				for i := range perTx {
					ids = append(ids, events.EventID(k, i+1))
				}
				idsMu.Unlock()
			}
			return nil
		}()
	})

	natstest.Eventually(t, 60*time.Second, func() error {
		if a := applied(); a < n/3 {
			return fmt.Errorf("%d of %d applied", a, n)
		}
		return nil
	})
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stopped := servers[0]
	for _, s := range servers {
		if info.Cluster != nil && s.Name() == info.Cluster.Leader {
			stopped = s
		}
	}
	stopped.Shutdown()
	t.Logf("stopped %s (stream leader %v) with %d of %d applied", stopped.Name(), info.Cluster != nil && info.Cluster.Leader == stopped.Name(), applied(), n)

	select {
	case err := <-produced:
		if err != nil {
			t.Fatalf("producer: %v", err)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("producer did not finish within 120s")
	}
	natstest.Eventually(t, 120*time.Second, func() error {
		if a := applied(); a < n {
			return fmt.Errorf("%d of %d applied", a, n)
		}
		if k := count(t, db, `SELECT count(*) FROM idem_outbox`); k != 0 {
			return fmt.Errorf("%d events not yet published", k)
		}
		return nil
	})
	idsMu.Lock()
	defer idsMu.Unlock()
	if len(ids) != n {
		t.Fatalf("produced %d events, want %d", len(ids), n)
	}
	for _, id := range ids {
		if r := l.runsOf(id); r != 1 {
			t.Errorf("event %s applied %d times", id, r)
		}
	}
	if got := count(t, db, `SELECT count(*) FROM idem_inbox WHERE consumer = 'ledger'`); got != n {
		t.Fatalf("inbox has %d rows, want %d", got, n)
	}
	var dups int
	outs.mu.Lock()
	for _, o := range outs.got {
		for _, x := range o {
			if x == events.Duplicate {
				dups++
			}
		}
	}
	outs.mu.Unlock()
	t.Logf("%d publish errors retried, %d redeliveries recognised as duplicates", pubErrs.Load(), dups)
}

func appliedCount(ctx context.Context, db *pgtest.DB) int {
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM ledger`).Scan(&n); err != nil {
		return -1
	}
	return n
}
