package events_test

import (
	"context"
	"log"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/events"
)

// A handler of an idempotent operation enqueues its event in the
// transaction the engine gave it; the id and the idempotencykey extension
// come from the request's key in ctx.
func ExampleEnqueue() {
	createPayment := func(ctx context.Context, tx pgx.Tx, paymentID string, amount int64) error {
		if _, err := tx.Exec(ctx, `INSERT INTO payments (id, amount) VALUES ($1, $2)`, paymentID, amount); err != nil {
			return err
		}
		ev := cloudevents.New()
		ev.SetType("payments.payment.created")
		ev.SetSource("/payments")
		ev.SetSubject(paymentID)
		if err := ev.SetData("application/json", map[string]any{"id": paymentID, "amount": amount}); err != nil {
			return err
		}
		// Events of one payment are published in order.
		return events.Enqueue(ctx, tx, ev, events.Aggregate("payment/"+paymentID))
	}
	_ = createPayment
}

// A relay runs next to the service (any number of them), publishing through
// a Publisher such as natsjs.Publisher.
func ExampleRelay_Run() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://localhost/payments")
	if err != nil {
		log.Fatal(err)
	}
	var pub events.Publisher // e.g. natsjs.NewPublisher(js, natsjs.PublisherConfig{})
	relay := events.NewRelay(pool, pub, events.RelayConfig{
		Listen:  func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, pool.Config().ConnString()) },
		OnError: func(err error) { log.Print(err) },
	})
	log.Fatal(relay.Run(ctx))
}

// A consumer applies each event once: the ledger row and the inbox record
// commit together.
func ExampleHandle() {
	apply := func(ctx context.Context, pool *pgxpool.Pool, ev cloudevents.Event) error {
		out, err := events.Handle(ctx, pool, "ledger", ev, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO ledger (event_id) VALUES ($1)`, ev.ID())
			return err
		})
		switch {
		case events.IsConflict(err):
			return err // a producer bug: alert, do not acknowledge silently
		case err != nil:
			return err // nothing recorded: let the broker redeliver
		}
		log.Printf("%s: %s", ev.ID(), out) // processed or duplicate: acknowledge
		return nil
	}
	_ = apply
}
