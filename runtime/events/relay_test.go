package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/internal/natstest"
	"github.com/idemgen/idemgen/runtime/natsjs"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// broker is an in-process JetStream server with a stream EVENTS that holds
// subjects "pay.>"; other subjects have no stream, so publishing there fails
// for real ("no responders").
func broker(t testing.TB) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	s := natstest.Server(t)
	_, js := natstest.Connect(t, s)
	st := natstest.Stream(t, js, jetstream.StreamConfig{
		Name: "EVENTS", Subjects: []string{"pay.>"}, Duplicates: time.Minute,
	})
	return js, st
}

// enqueue commits one request's events.
func enqueue(t testing.TB, db *pgtest.DB, key string, evs []cloudevents.Event, opts ...events.Option) []string {
	t.Helper()
	k := idem.Key{Tenant: "acme", Operation: "createPayment", Value: key}
	ctx := idem.ContextWithKey(context.Background(), k)
	err := inTx(t, db, ctx, func(tx pgx.Tx) error {
		for _, ev := range evs {
			if err := events.Enqueue(ctx, tx, ev, opts...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(evs))
	for i := range evs {
		ids[i] = events.EventID(k, i+1)
	}
	return ids
}

// streamIDs returns the Nats-Msg-Id of every message in the stream, in order.
func streamIDs(t testing.TB, st jetstream.Stream) []string {
	t.Helper()
	ctx := context.Background()
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
	}
	return ids
}

func TestRelayPublishesAndDeletes(t *testing.T) {
	db := newDB(t)
	js, st := broker(t)
	var ids []string
	for i := range 25 {
		ids = append(ids, enqueue(t, db, fmt.Sprintf("key-%d", i), []cloudevents.Event{newEvent("pay.created", map[string]int{"n": i})})...)
	}
	relay := events.NewRelay(db, natsjs.NewPublisher(js, natsjs.PublisherConfig{}), events.RelayConfig{BatchSize: 10})
	ctx := context.Background()
	var total int
	for _, want := range []int{10, 10, 5, 0} {
		n, err := relay.RunOnce(ctx)
		if err != nil || n != want {
			t.Fatalf("RunOnce = %d, %v; want %d", n, err, want)
		}
		total += n
	}
	if got := streamIDs(t, st); strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("stream ids\n got %v\nwant %v", got, ids)
	}
	if rows := outbox(t, db); len(rows) != 0 {
		t.Fatalf("published events left in the outbox: %d", len(rows))
	}
}

// Per-aggregate ordering: one event of an aggregate per claim, in order; a
// failing event holds back its aggregate until it is dead-lettered.
func TestRelayAggregateOrdering(t *testing.T) {
	db := newDB(t)
	js, st := broker(t)
	a := enqueue(t, db, "k-a", []cloudevents.Event{
		newEvent("pay.a", 1), newEvent("pay.a", 2), newEvent("pay.a", 3)}, events.Aggregate("payment-a"))
	b := enqueue(t, db, "k-b", []cloudevents.Event{newEvent("pay.b", 1)}, events.Aggregate("payment-b"))
	// c's first event goes to a subject no stream holds: it fails.
	c := enqueue(t, db, "k-c", []cloudevents.Event{newEvent("nostream.c", 1), newEvent("pay.c", 2)}, events.Aggregate("payment-c"))
	u := enqueue(t, db, "k-u", []cloudevents.Event{newEvent("pay.u", 1), newEvent("pay.u", 2)}) // unordered

	var mu sync.Mutex
	var failures []string
	relay := events.NewRelay(db, natsjs.NewPublisher(js, natsjs.PublisherConfig{}), events.RelayConfig{
		BatchSize: 100, MaxAttempts: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
		OnPublishError: func(ev cloudevents.Event, n int, dead bool, err error) {
			mu.Lock()
			defer mu.Unlock()
			failures = append(failures, fmt.Sprintf("%s/%d/%v", ev.ID(), n, dead))
		},
	})
	ctx := context.Background()
	// First claim: the head of each aggregate, both unordered events.
	if n, err := relay.RunOnce(ctx); err != nil || n != 4 {
		t.Fatalf("first RunOnce = %d, %v; want 4 (a1, b1, u1, u2; c1 failed)", n, err)
	}
	want := []string{a[0], b[0], u[0], u[1]}
	if got := streamIDs(t, st); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after first claim\n got %v\nwant %v", got, want)
	}
	// Until c1 is dead, c2 stays behind it; a2 and a3 leave one per claim.
	natstest.Eventually(t, 30*time.Second, func() error {
		if _, err := relay.RunOnce(ctx); err != nil {
			return err
		}
		var state string
		if err := db.QueryRow(ctx, `SELECT state FROM idem_outbox WHERE id = $1`, c[0]).Scan(&state); err != nil {
			return err
		}
		if state != "DEAD" {
			return fmt.Errorf("c1 is %s", state)
		}
		return nil
	})
	natstest.Eventually(t, 30*time.Second, func() error {
		if _, err := relay.RunOnce(ctx); err != nil {
			return err
		}
		if n := len(streamIDs(t, st)); n != 7 {
			return fmt.Errorf("%d messages in the stream", n)
		}
		return nil
	})
	got := streamIDs(t, st)
	pos := map[string]int{}
	for i, id := range got {
		pos[id] = i
	}
	if !(pos[a[0]] < pos[a[1]] && pos[a[1]] < pos[a[2]]) {
		t.Errorf("aggregate a out of order: %v", got)
	}
	if _, ok := pos[c[1]]; !ok {
		t.Errorf("c2 not published after c1 died: %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(failures, " ") != fmt.Sprintf("%s/1/false %s/2/true", c[0], c[0]) {
		t.Errorf("publish failures = %v", failures)
	}
}

func TestRelayDeadLetterAndRequeue(t *testing.T) {
	db := newDB(t)
	js, _ := broker(t)
	ids := enqueue(t, db, "k-dead", []cloudevents.Event{newEvent("nostream.x", 1)})
	relay := events.NewRelay(db, natsjs.NewPublisher(js, natsjs.PublisherConfig{}), events.RelayConfig{
		MaxAttempts: 3, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
	})
	ctx := context.Background()
	natstest.Eventually(t, 30*time.Second, func() error {
		if _, err := relay.RunOnce(ctx); err != nil {
			return err
		}
		if r := outbox(t, db); r[0].State != "DEAD" {
			return fmt.Errorf("state %s after %d attempts", r[0].State, r[0].Attempts)
		}
		return nil
	})
	r := outbox(t, db)[0]
	if r.Attempts != 3 || r.LastError == nil || !strings.Contains(*r.LastError, "on nostream.x") {
		t.Fatalf("dead event: attempts %d, last error %q", r.Attempts, *r.LastError)
	}
	// A dead event is not claimed again.
	if n, err := relay.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("RunOnce over a dead event = %d, %v", n, err)
	}
	if r := outbox(t, db)[0]; r.Attempts != 3 {
		t.Fatalf("dead event attempted again: %d", r.Attempts)
	}
	n, err := events.Requeue(ctx, db, "acme", ids[0], "no-such-id")
	if err != nil || n != 1 {
		t.Fatalf("Requeue = %d, %v", n, err)
	}
	if r := outbox(t, db)[0]; r.State != "PENDING" || r.Attempts != 0 {
		t.Fatalf("requeued event: %+v", r)
	}
}

func TestRelayKeepPublished(t *testing.T) {
	db := newDB(t)
	js, st := broker(t)
	enqueue(t, db, "k-keep", []cloudevents.Event{newEvent("pay.kept", 1), newEvent("pay.kept", 2)})
	pub := natsjs.NewPublisher(js, natsjs.PublisherConfig{})
	ctx := context.Background()
	keep := events.NewRelay(db, pub, events.RelayConfig{KeepPublished: time.Hour})
	if n, err := keep.RunOnce(ctx); err != nil || n != 2 {
		t.Fatalf("RunOnce = %d, %v", n, err)
	}
	for _, r := range outbox(t, db) {
		if r.State != "PUBLISHED" {
			t.Fatalf("kept event in state %s", r.State)
		}
	}
	if n, err := keep.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second RunOnce = %d, %v (published events claimed again?)", n, err)
	}
	// A relay with a short retention sweeps them, BatchSize at a time.
	sweep := events.NewRelay(db, pub, events.RelayConfig{KeepPublished: time.Millisecond, BatchSize: 1})
	natstest.Eventually(t, 30*time.Second, func() error {
		if _, err := sweep.RunOnce(ctx); err != nil {
			return err
		}
		if n := len(outbox(t, db)); n != 0 {
			return fmt.Errorf("%d kept events", n)
		}
		return nil
	})
	if n := len(streamIDs(t, st)); n != 2 {
		t.Fatalf("stream has %d messages", n)
	}
}

// Run wakes up on the outbox's NOTIFY: with an hour-long poll interval, an
// event committed after the relay went idle is published anyway.
func TestRelayRunListen(t *testing.T) {
	db := newDB(t)
	js, st := broker(t)
	var errMu sync.Mutex
	var runErrs []error
	relay := events.NewRelay(db, natsjs.NewPublisher(js, natsjs.PublisherConfig{}), events.RelayConfig{
		PollInterval: time.Hour,
		Listen:       func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, db.URL) },
		OnError: func(err error) {
			errMu.Lock()
			defer errMu.Unlock()
			runErrs = append(runErrs, err)
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	for i := range 3 {
		enqueue(t, db, fmt.Sprintf("k-listen-%d", i), []cloudevents.Event{newEvent("pay.listen", i)})
		natstest.Eventually(t, 30*time.Second, func() error {
			if n := len(streamIDs(t, st)); n != i+1 {
				return fmt.Errorf("%d messages in the stream", n)
			}
			return nil
		})
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	errMu.Lock()
	defer errMu.Unlock()
	if len(runErrs) > 0 {
		t.Fatalf("Run reported errors: %v", runErrs)
	}
}
