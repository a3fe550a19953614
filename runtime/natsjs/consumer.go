package natsjs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
)

// ConsumerConfig configures a Consumer. Name, DB and Handler are required.
type ConsumerConfig struct {
	// Name is the inbox's consumer name: messages are deduplicated per
	// name, so two services reading one stream keep separate inboxes.
	Name string
	// DB holds the inbox and the handler's tables.
	DB idem.DB
	// Handler applies an event; its writes go through tx, which also
	// records the event in the inbox.
	Handler func(ctx context.Context, tx pgx.Tx, ev cloudevents.Event) error
	// AckConflicts acknowledges a message whose key was processed before
	// with another payload, after reporting it. By default such a message
	// is terminated (Term): it is not redelivered, and the server emits a
	// MSG_TERMINATED advisory an operator can watch. Either way the handler
	// does not run.
	AckConflicts bool
	// NakDelay is the redelivery delay after a failed handler, given the
	// number of deliveries so far (1 for the first); by default 1s·2^(n-1)
	// capped at one minute.
	NakDelay func(delivered uint64) time.Duration
	// OnOutcome is called for every message with what happened to it. Nil
	// logs duplicates (Info), conflicts (Error) and failures (Warn) with
	// slog's default logger.
	OnOutcome func(ev cloudevents.Event, outcome events.Outcome, err error)
	// OnError receives errors of the subscription itself (Consume); nil
	// logs them with slog's default logger.
	OnError func(err error)
}

// Consumer applies JetStream messages through the inbox and settles each
// one according to the outcome:
//
//	Processed, Duplicate   Ack
//	Conflict               Term (or Ack with AckConflicts), reported
//	Failed                 NakWithDelay: redelivered later, nothing recorded
//	undecodable message    Term, reported as Failed
//
// The message is acknowledged only after the handler's writes and the inbox
// record have committed. A consumer that dies in between leaves the message
// unacknowledged: it is redelivered after the JetStream consumer's AckWait
// and recognised as a Duplicate.
type Consumer struct {
	cfg ConsumerConfig
}

// NewConsumer returns a Consumer, or an error naming a missing field.
func NewConsumer(cfg ConsumerConfig) (*Consumer, error) {
	switch {
	case cfg.Name == "":
		return nil, errors.New("natsjs: consumer: Name is required")
	case cfg.DB == nil:
		return nil, errors.New("natsjs: consumer: DB is required")
	case cfg.Handler == nil:
		return nil, errors.New("natsjs: consumer: Handler is required")
	}
	if cfg.NakDelay == nil {
		cfg.NakDelay = func(n uint64) time.Duration {
			if n > 7 {
				return time.Minute
			}
			return min(time.Second<<(max(n, 1)-1), time.Minute)
		}
	}
	if cfg.OnOutcome == nil {
		cfg.OnOutcome = func(ev cloudevents.Event, o events.Outcome, err error) {
			switch o {
			case events.Duplicate:
				slog.Info("natsjs: duplicate message acknowledged", "consumer", cfg.Name, "id", ev.ID(), "source", ev.Source())
			case events.Conflict:
				slog.Error("natsjs: conflicting message", "consumer", cfg.Name, "id", ev.ID(), "source", ev.Source(), "err", err)
			case events.Failed:
				slog.Warn("natsjs: message failed", "consumer", cfg.Name, "id", ev.ID(), "source", ev.Source(), "err", err)
			}
		}
	}
	if cfg.OnError == nil {
		cfg.OnError = func(err error) { slog.Warn("natsjs: consume", "consumer", cfg.Name, "err", err) }
	}
	return &Consumer{cfg: cfg}, nil
}

// HandleMsg applies one message and settles it (Ack, Nak or Term). It returns
// the outcome, and the handler's, the inbox's or the settlement's error.
func (c *Consumer) HandleMsg(ctx context.Context, msg jetstream.Msg) (events.Outcome, error) {
	var ev cloudevents.Event
	if err := json.Unmarshal(msg.Data(), &ev); err != nil {
		err = fmt.Errorf("natsjs: consumer %q: decode message on %s: %w", c.cfg.Name, msg.Subject(), err)
		c.cfg.OnOutcome(ev, events.Failed, err)
		if terr := msg.TermWithReason("undecodable CloudEvent"); terr != nil {
			err = errors.Join(err, terr)
		}
		return events.Failed, err
	}
	outcome, err := events.Handle(ctx, c.cfg.DB, c.cfg.Name, ev, func(ctx context.Context, tx pgx.Tx) error {
		return c.cfg.Handler(ctx, tx, ev)
	})
	c.cfg.OnOutcome(ev, outcome, err)
	var serr error
	switch outcome {
	case events.Processed, events.Duplicate:
		serr = msg.Ack()
	case events.Conflict:
		if c.cfg.AckConflicts {
			serr = msg.Ack()
		} else {
			serr = msg.TermWithReason("idempotency key reused with another payload")
		}
	default:
		var delivered uint64 = 1
		if md, merr := msg.Metadata(); merr == nil {
			delivered = md.NumDelivered
		}
		serr = msg.NakWithDelay(c.cfg.NakDelay(delivered))
	}
	if serr != nil {
		serr = fmt.Errorf("natsjs: consumer %q: settle %s: %w", c.cfg.Name, ev.ID(), serr)
	}
	return outcome, errors.Join(err, serr)
}

// Consume applies cons's messages, one at a time, until ctx ends; then it
// stops the subscription, waits for the message in hand, and returns ctx's
// error. Run it on several goroutines (or processes) to apply messages in
// parallel; the inbox keeps them from applying one twice.
func (c *Consumer) Consume(ctx context.Context, cons jetstream.Consumer, opts ...jetstream.PullConsumeOpt) error {
	opts = append(opts, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		c.cfg.OnError(err)
	}))
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		c.HandleMsg(ctx, msg) //nolint:errcheck // reported through OnOutcome
	}, opts...)
	if err != nil {
		return fmt.Errorf("natsjs: consumer %q: %w", c.cfg.Name, err)
	}
	<-ctx.Done()
	cc.Stop()
	<-cc.Closed()
	return ctx.Err()
}
