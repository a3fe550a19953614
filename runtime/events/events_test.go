package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// testSchema adds the business table the tests' handlers write to.
var testSchema = fstest.MapFS{"9000_test.up.sql": {Data: []byte(`
CREATE TABLE ledger (id text PRIMARY KEY, amount bigint NOT NULL);
`)}}

func newDB(t testing.TB) *pgtest.DB {
	return pgtest.New(t, pgtest.Options{Migrations: testSchema, MaxConns: 24})
}

func newEvent(typ string, data any) cloudevents.Event {
	ev := cloudevents.New()
	ev.SetType(typ)
	ev.SetSource("/payments")
	if err := ev.SetData("application/json", data); err != nil {
		panic(err)
	}
	return ev
}

func requestCtx(tenant, op, key string) context.Context {
	return idem.ContextWithKey(context.Background(), idem.Key{Tenant: tenant, Operation: op, Value: key})
}

// inTx runs fn in a transaction, committing when it returns nil.
func inTx(t testing.TB, db *pgtest.DB, ctx context.Context, fn func(tx pgx.Tx) error) error {
	t.Helper()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

type outboxRow struct {
	ID, State, Type string
	Ordinal         *int32
	Attempts        int32
	LastError       *string
	Event           []byte
}

func outbox(t testing.TB, db *pgtest.DB) []outboxRow {
	t.Helper()
	rows, err := db.Query(context.Background(),
		`SELECT id, state, event_type, ordinal, attempts, last_error, event FROM idem_outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outboxRow, error) {
		var o outboxRow
		err := r.Scan(&o.ID, &o.State, &o.Type, &o.Ordinal, &o.Attempts, &o.LastError, &o.Event)
		return o, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEnqueueExistsIffBusinessTxCommits(t *testing.T) {
	db := newDB(t)
	ctx := requestCtx("acme", "createPayment", "11111111-1111-4111-8111-111111111111")

	errBusiness := errors.New("insufficient funds")
	err := inTx(t, db, ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO ledger VALUES ('p1', 100)`); err != nil {
			return err
		}
		if err := events.Enqueue(ctx, tx, newEvent("payment.created", map[string]any{"id": "p1"})); err != nil {
			return err
		}
		return errBusiness // the handler fails: the transaction rolls back
	})
	if !errors.Is(err, errBusiness) {
		t.Fatalf("got %v", err)
	}
	if rows := outbox(t, db); len(rows) != 0 {
		t.Fatalf("rolled back business tx left %d events", len(rows))
	}

	err = inTx(t, db, ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO ledger VALUES ('p1', 100)`); err != nil {
			return err
		}
		return events.Enqueue(ctx, tx, newEvent("payment.created", map[string]any{"id": "p1"}))
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := outbox(t, db)
	if len(rows) != 1 || rows[0].State != "PENDING" || rows[0].Type != "payment.created" {
		t.Fatalf("outbox = %+v", rows)
	}
}

func TestEnqueueDeterministicIDs(t *testing.T) {
	db := newDB(t)
	key := idem.Key{Tenant: "acme", Operation: "createPayment", Value: "22222222-2222-4222-8222-222222222222"}
	ctx := idem.ContextWithKey(context.Background(), key)
	enqueue3 := func(tx pgx.Tx) error {
		for i := range 3 {
			if err := events.Enqueue(ctx, tx, newEvent("payment.step", map[string]int{"step": i})); err != nil {
				return err
			}
		}
		return nil
	}

	// A first attempt rolls back, the retry commits: the retry's events get
	// the ids the first attempt's had.
	var firstIDs []string
	err := inTx(t, db, ctx, func(tx pgx.Tx) error {
		if err := enqueue3(tx); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT id FROM idem_outbox ORDER BY seq`)
		firstIDs, _ = pgx.CollectRows(rows, pgx.RowTo[string])
		return errors.New("crash")
	})
	if err == nil {
		t.Fatal("want the first attempt to fail")
	}
	if err := inTx(t, db, ctx, enqueue3); err != nil {
		t.Fatal(err)
	}
	rows := outbox(t, db)
	if len(rows) != 3 {
		t.Fatalf("got %d events", len(rows))
	}
	seen := map[string]bool{}
	for i, r := range rows {
		want := events.EventID(key, i+1)
		if r.ID != want || r.ID != firstIDs[i] {
			t.Errorf("event %d: id %s, want %s (first attempt %s)", i+1, r.ID, want, firstIDs[i])
		}
		if r.Ordinal == nil || *r.Ordinal != int32(i+1) {
			t.Errorf("event %d: ordinal %v", i+1, r.Ordinal)
		}
		seen[r.ID] = true
		var ev cloudevents.Event
		if err := json.Unmarshal(r.Event, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.ID() != r.ID {
			t.Errorf("stored event id %s, row id %s", ev.ID(), r.ID)
		}
		if got := ev.Extensions()[events.ExtensionIdempotencyKey]; got != key.Value {
			t.Errorf("idempotencykey = %v, want %s", got, key.Value)
		}
		if ev.Time().IsZero() {
			t.Error("event time not set")
		}
	}
	if len(seen) != 3 {
		t.Fatalf("ids not distinct: %v", seen)
	}

	// Ids are a UUIDv8 and differ per tenant, operation, key and ordinal.
	id := events.EventID(key, 1)
	if len(id) != 36 || id[14] != '8' || !strings.ContainsRune("89ab", rune(id[19])) {
		t.Errorf("id %s is not a UUIDv8", id)
	}
	for _, other := range []idem.Key{
		{Tenant: "other", Operation: key.Operation, Value: key.Value},
		{Tenant: key.Tenant, Operation: "refund", Value: key.Value},
		{Tenant: key.Tenant, Operation: key.Operation, Value: "33333333-3333-4333-8333-333333333333"},
		{Tenant: "acmecreatePayment", Operation: "", Value: key.Value},
	} {
		if events.EventID(other, 1) == id {
			t.Errorf("%+v shares an id with %+v", other, key)
		}
	}
	if events.EventID(key, 2) == id {
		t.Error("ordinal does not change the id")
	}
	// A key executed again after it expired (a new record, a new Since)
	// starts a new series; the same execution keeps its ids.
	again := key
	again.Since = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	if events.EventID(again, 1) == id {
		t.Error("Since does not change the id")
	}
	same := again
	same.Since = again.Since.Add(0)
	if events.EventID(same, 1) != events.EventID(again, 1) {
		t.Error("the same Since gives different ids")
	}
}

func TestEnqueueOutsideRequest(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	err := inTx(t, db, ctx, func(tx pgx.Tx) error {
		return events.Enqueue(ctx, tx, newEvent("nightly.report", nil))
	})
	if !errors.Is(err, events.ErrNoKey) {
		t.Fatalf("got %v, want ErrNoKey", err)
	}
	ev := newEvent("nightly.report", nil)
	ev.SetID("report-2024-01-01")
	err = inTx(t, db, ctx, func(tx pgx.Tx) error {
		// Twice: the second is the same event and is left alone.
		if err := events.Enqueue(ctx, tx, ev, events.Tenant("acme")); err != nil {
			return err
		}
		return events.Enqueue(ctx, tx, ev, events.Tenant("acme"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows := outbox(t, db); len(rows) != 1 || rows[0].ID != "report-2024-01-01" || rows[0].Ordinal != nil {
		t.Fatalf("outbox = %+v", rows)
	}
	if !ev.Time().IsZero() {
		t.Error("Enqueue modified the caller's event")
	}
}

func TestInboxOutcomes(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	ev := newEvent("payment.created", map[string]any{"id": "p1", "amount": 100})
	ev.SetID("e1")
	var runs int
	apply := func(ctx context.Context, tx pgx.Tx) error {
		runs++
		_, err := tx.Exec(ctx, `INSERT INTO ledger VALUES ('p1', 100)`)
		return err
	}

	// A failing handler: nothing recorded, nothing written.
	boom := errors.New("boom")
	out, err := events.Handle(ctx, db, "ledger", ev, func(ctx context.Context, tx pgx.Tx) error {
		if err := apply(ctx, tx); err != nil {
			return err
		}
		return boom
	})
	if out != events.Failed || !errors.Is(err, boom) {
		t.Fatalf("failing handler: %v, %v", out, err)
	}
	if n := count(t, db, `SELECT count(*) FROM idem_inbox`); n != 0 {
		t.Fatalf("failed message recorded (%d rows)", n)
	}

	// The redelivery runs.
	out, err = events.Handle(ctx, db, "ledger", ev, apply)
	if out != events.Processed || err != nil {
		t.Fatalf("redelivery: %v, %v", out, err)
	}
	// A duplicate does not, even re-encoded with another time.
	dup := ev.Clone()
	dup.SetTime(time.Now().Add(time.Hour))
	out, err = events.Handle(ctx, db, "ledger", dup, apply)
	if out != events.Duplicate || err != nil {
		t.Fatalf("duplicate: %v, %v", out, err)
	}
	// Another consumer has its own inbox.
	out, err = events.Handle(ctx, db, "audit", ev, func(context.Context, pgx.Tx) error { return nil })
	if out != events.Processed || err != nil {
		t.Fatalf("second consumer: %v, %v", out, err)
	}
	// Same key, other payload: a conflict, not a silent ack.
	other := newEvent("payment.created", map[string]any{"id": "p1", "amount": 999})
	other.SetID("e1")
	out, err = events.Handle(ctx, db, "ledger", other, apply)
	var ce *events.ConflictError
	if out != events.Conflict || !events.IsConflict(err) || !errors.As(err, &ce) || ce.Key != "/payments e1" || ce.Consumer != "ledger" {
		t.Fatalf("conflict: %v, %v", out, err)
	}
	if runs != 2 {
		t.Fatalf("handler ran %d times, want 2 (the failure and the first success)", runs)
	}
	if n := count(t, db, `SELECT count(*) FROM ledger`); n != 1 {
		t.Fatalf("ledger has %d rows", n)
	}

	// Sweeping with a long retention keeps the rows; with none drops them.
	if n, err := events.SweepInbox(ctx, db, time.Hour, 100); err != nil || n != 0 {
		t.Fatalf("sweep 1h: %d, %v", n, err)
	}
	natsDeadline := time.Now().Add(10 * time.Second)
	for {
		n, err := events.SweepInbox(ctx, db, time.Millisecond, 1)
		if err != nil {
			t.Fatal(err)
		}
		if count(t, db, `SELECT count(*) FROM idem_inbox`) == 0 {
			break
		}
		if n == 0 && time.Now().After(natsDeadline) {
			t.Fatal("sweep deleted nothing")
		}
	}
}

// Concurrent deliveries of one message: the first runs the handler, the
// others wait on the inbox's key and then find a duplicate.
func TestInboxConcurrentDuplicates(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	ev := newEvent("payment.created", map[string]any{"id": "p1"})
	ev.SetID("concurrent-1")
	const n = 8
	var runs atomic.Int32
	release := make(chan struct{})
	outcomes := make([]events.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			outcomes[i], errs[i] = events.Handle(ctx, db, "ledger", ev, func(ctx context.Context, tx pgx.Tx) error {
				runs.Add(1)
				<-release // hold the inbox row uncommitted
				_, err := tx.Exec(ctx, `INSERT INTO ledger VALUES ('p1', 1)`)
				return err
			})
		})
	}
	// Wait until one handler runs and the other deliveries are blocked on
	// the inbox's key (or a generous deadline passes), then let it commit.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		waiting := count(t, db, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO idem_inbox%'`)
		if runs.Load() == 1 && waiting >= n-1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	var processed, dups int
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("delivery %d: %v", i, errs[i])
		}
		switch outcomes[i] {
		case events.Processed:
			processed++
		case events.Duplicate:
			dups++
		}
	}
	if runs.Load() != 1 || processed != 1 || dups != n-1 {
		t.Fatalf("runs=%d processed=%d duplicates=%d", runs.Load(), processed, dups)
	}
	if c := count(t, db, `SELECT count(*) FROM ledger`); c != 1 {
		t.Fatalf("ledger rows = %d", c)
	}
}

func count(t testing.TB, db *pgtest.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
