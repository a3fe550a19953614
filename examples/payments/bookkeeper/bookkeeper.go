// Package bookkeeper is the payments example's event consumer: it books
// every payments.payment.created event in the ledger (ledger_entries and
// ledger_balances), once, however often JetStream delivers it.
//
// Each message runs through idemgen's inbox (events.Handle, wired to
// JetStream by natsjs.Consumer): the ledger writes and the inbox record of
// the event's id commit in one transaction, and the message is acknowledged
// only after that commit. A consumer that dies between the commit and the
// acknowledgement gets the message again after the consumer's AckWait; the
// inbox recognises it as a duplicate and Apply does not run again.
package bookkeeper

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/internal/ledger"
	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/natsjs"
)

// Name is the consumer's name: its inbox's consumer name and its durable
// JetStream consumer's name.
const Name = "bookkeeper"

// Apply books ev in tx. Events of other types are not booked (the inbox
// still records them, so they are acknowledged once).
func Apply(ctx context.Context, tx pgx.Tx, ev cloudevents.Event) error {
	if ev.Type() != payments.EventPaymentCreated {
		return nil
	}
	var p payments.PaymentCreated
	if err := ev.DataAs(&p); err != nil {
		return fmt.Errorf("bookkeeper: event %s: data: %w", ev.ID(), err)
	}
	if p.PaymentID == "" || p.Amount <= 0 || p.Currency == "" {
		return fmt.Errorf("bookkeeper: event %s: incomplete data %+v", ev.ID(), p)
	}
	q := ledger.New(tx)
	if err := q.InsertLedgerEntry(ctx, ledger.InsertLedgerEntryParams{
		EventID: ev.ID(), PaymentID: p.PaymentID, Amount: p.Amount, Currency: p.Currency,
	}); err != nil {
		return fmt.Errorf("bookkeeper: event %s: ledger entry: %w", ev.ID(), err)
	}
	if err := q.AddToBalance(ctx, ledger.AddToBalanceParams{Currency: p.Currency, Amount: p.Amount}); err != nil {
		return fmt.Errorf("bookkeeper: event %s: balance: %w", ev.ID(), err)
	}
	return nil
}

// EnsureConsumer creates the durable pull consumer Name on payments.Stream,
// or updates its configuration. A message not acknowledged within ackWait
// is delivered again.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, ackWait time.Duration) (jetstream.Consumer, error) {
	c, err := js.CreateOrUpdateConsumer(ctx, payments.Stream, jetstream.ConsumerConfig{
		Durable:       Name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		FilterSubject: payments.EventPaymentCreated,
	})
	if err != nil {
		return nil, fmt.Errorf("bookkeeper: consumer %s on %s: %w", Name, payments.Stream, err)
	}
	return c, nil
}

// Options tune New. The zero value logs nothing.
type Options struct {
	// Log receives duplicates (Info), conflicts (Error) and failures (Warn).
	Log *slog.Logger
	// OnOutcome, when set, is called for every message after it is logged.
	OnOutcome func(ev cloudevents.Event, o events.Outcome, err error)
}

// New returns the natsjs.Consumer applying messages with apply (Apply, or
// a wrapper of it) through db's inbox.
func New(db idem.DB, apply func(context.Context, pgx.Tx, cloudevents.Event) error, opts Options) (*natsjs.Consumer, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return natsjs.NewConsumer(natsjs.ConsumerConfig{
		Name:    Name,
		DB:      db,
		Handler: apply,
		OnOutcome: func(ev cloudevents.Event, o events.Outcome, err error) {
			switch o {
			case events.Duplicate:
				log.Info("duplicate delivery acknowledged", "id", ev.ID(), "subject", ev.Subject())
			case events.Conflict:
				log.Error("event id reused with another payload", "id", ev.ID(), "err", err)
			case events.Failed:
				log.Warn("event not booked; redelivery later", "id", ev.ID(), "err", err)
			}
			if opts.OnOutcome != nil {
				opts.OnOutcome(ev, o, err)
			}
		},
		OnError: func(err error) { log.Warn("consume", "err", err) },
	})
}
