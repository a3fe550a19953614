package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/events"
)

// TestWithExtensions: an event enqueued under a context with extensions
// carries them in the outbox (the stored CloudEvent), next to the
// idempotency key, which they cannot replace.
func TestWithExtensions(t *testing.T) {
	db := newDB(t)
	ctx := events.WithExtensions(requestCtx("", "createPayment", "k-1"), func(context.Context) map[string]string {
		return map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "idempotencykey": "forged"}
	})
	if err := inTx(t, db, ctx, func(tx pgx.Tx) error {
		return events.Enqueue(ctx, tx, newEvent("payments.created", map[string]int{"amount": 1}))
	}); err != nil {
		t.Fatal(err)
	}
	rows := outbox(t, db)
	var stored map[string]any
	if err := json.Unmarshal(rows[0].Event, &stored); err != nil {
		t.Fatal(err)
	}
	if stored["traceparent"] != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || stored["idempotencykey"] != "k-1" {
		t.Fatalf("stored event %s: want the traceparent extension and the request's key", rows[0].Event)
	}
}

// TestReadOutboxStats counts pending and dead events and the age of the
// oldest pending one, by the database clock.
func TestReadOutboxStats(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	st, err := events.ReadOutboxStats(ctx, db)
	if err != nil || st != (events.OutboxStats{}) {
		t.Fatalf("empty outbox: %+v, %v", st, err)
	}
	enqueue(t, db, "k-1", []cloudevents.Event{newEvent("a", 1), newEvent("b", 2), newEvent("c", 3)})
	if _, err := db.Exec(ctx, `UPDATE idem_outbox SET created_at = now() - interval '90 seconds' WHERE ordinal = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE idem_outbox SET state = 'DEAD' WHERE ordinal = 3`); err != nil {
		t.Fatal(err)
	}
	st, err = events.ReadOutboxStats(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 2 || st.Dead != 1 || st.OldestPending < 90*time.Second || st.OldestPending > 10*time.Minute {
		t.Fatalf("stats %+v, want 2 pending (the oldest 90 s old) and 1 dead", st)
	}
}
