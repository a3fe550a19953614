package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/events/internal/eventsdb"
	"github.com/idemgen/idemgen/runtime/idem"
)

// Publisher sends an event to a broker. A nil error means the broker has it
// (for JetStream: the stream acknowledged it). The relay publishes an event
// again, with the same id, when it cannot tell.
type Publisher interface {
	Publish(ctx context.Context, ev cloudevents.Event) error
}

// BatchPublisher is a Publisher that can publish several events at once,
// e.g. pipelined. The relay uses it when its Publisher implements it. The
// events of a batch never share an aggregate, so they may be sent in any
// order. It returns one error per event, nil for a published one.
type BatchPublisher interface {
	Publisher
	PublishBatch(ctx context.Context, evs []cloudevents.Event) []error
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks a publish error as one that no retry will cure: the relay
// dead-letters the event at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsPermanent reports whether err was marked by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// RelayConfig tunes a Relay. The zero value is usable.
type RelayConfig struct {
	// BatchSize is the most events claimed per transaction; 100 by default.
	BatchSize int
	// PollInterval is how long Run waits before looking again when there
	// was nothing left to publish; 1s by default. With Listen it is the
	// fallback for a lost notification and for events backing off.
	PollInterval time.Duration
	// MaxAttempts is how many failed publishes dead-letter an event; 10 by
	// default.
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the delay before the next attempt:
	// MinBackoff·2^(failures-1), capped at MaxBackoff, the upper half
	// jittered. 1s and 5m by default.
	MinBackoff, MaxBackoff time.Duration
	// KeepPublished keeps published events as state PUBLISHED for this
	// long, then deletes them (BatchSize at a time, in RunOnce). Zero, the
	// default, deletes them in the transaction that claimed them.
	KeepPublished time.Duration
	// Listen opens a dedicated connection on which Run listens for the
	// outbox's NOTIFY (a trigger sends one per committing transaction that
	// enqueued), so that events leave without waiting for the poll. Nil:
	// polling only. The relay closes the connection.
	Listen func(ctx context.Context) (*pgx.Conn, error)
	// OnError receives the errors Run survives (a failed batch, a lost
	// listen connection); nil ignores them.
	OnError func(err error)
	// OnPublishError receives each failed publish: the event, the failures
	// so far including this one, and whether the event is now DEAD.
	OnPublishError func(ev cloudevents.Event, failures int, dead bool, err error)
}

// Relay publishes the outbox. Several relays, in one process or many, may
// run over the same database.
type Relay struct {
	db  idem.DB
	pub Publisher
	cfg RelayConfig
}

// NewRelay returns a relay that publishes db's outbox through pub.
func NewRelay(db idem.DB, pub Publisher, cfg RelayConfig) *Relay {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 10
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = time.Second
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(cfg.MinBackoff, 5*time.Minute)
	}
	return &Relay{db: db, pub: pub, cfg: cfg}
}

// RunOnce claims one batch of due events, publishes them and records the
// outcome, in one transaction. It returns how many events it published; an
// error means the batch's outcome was not recorded, and its events will be
// published again.
func (r *Relay) RunOnce(ctx context.Context) (int, error) {
	_, n, err := r.runOnce(ctx)
	return n, err
}

func (r *Relay) runOnce(ctx context.Context) (claimed, published int, err error) {
	tx, err := r.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return 0, 0, fmt.Errorf("events: relay: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	q := eventsdb.New(tx)

	rows, err := q.ClaimEvents(ctx, int32(r.cfg.BatchSize))
	if err != nil {
		return 0, 0, fmt.Errorf("events: relay: claim: %w", err)
	}
	evs := make([]cloudevents.Event, 0, len(rows))
	pending := make([]eventsdb.ClaimEventsRow, 0, len(rows))
	var failures []failure
	for _, row := range rows {
		var ev cloudevents.Event
		if err := json.Unmarshal(row.Event, &ev); err != nil {
			failures = append(failures, failure{row, ev, Permanent(fmt.Errorf("decode: %w", err))})
			continue
		}
		evs = append(evs, ev)
		pending = append(pending, row)
	}

	errs := r.publish(ctx, evs)
	var done []int64
	for i, row := range pending {
		if errs[i] == nil {
			done = append(done, row.Seq)
		} else {
			failures = append(failures, failure{row, evs[i], errs[i]})
		}
	}
	if err := ctx.Err(); err != nil {
		// The outcome cannot be recorded; everything stays pending.
		return len(rows), 0, fmt.Errorf("events: relay: %w", err)
	}

	if len(done) > 0 {
		if r.cfg.KeepPublished > 0 {
			_, err = q.MarkPublished(ctx, done)
		} else {
			_, err = q.DeleteEvents(ctx, done)
		}
		if err != nil {
			return len(rows), 0, fmt.Errorf("events: relay: mark published: %w", err)
		}
	}
	type report struct {
		f      failure
		failed int
		dead   bool
	}
	reports := make([]report, 0, len(failures))
	for _, f := range failures {
		failed := int(f.row.Attempts) + 1
		dead := IsPermanent(f.err) || failed >= r.cfg.MaxAttempts
		_, err := q.RecordFailure(ctx, eventsdb.RecordFailureParams{
			Seq:         f.row.Seq,
			LastError:   pgtype.Text{String: f.err.Error(), Valid: true},
			DelayMs:     r.backoff(failed).Milliseconds(),
			Dead:        IsPermanent(f.err),
			MaxAttempts: int32(r.cfg.MaxAttempts),
		})
		if err != nil {
			return len(rows), 0, fmt.Errorf("events: relay: record failure of %s: %w", f.row.ID, err)
		}
		reports = append(reports, report{f, failed, dead})
	}
	if r.cfg.KeepPublished > 0 {
		_, err := q.SweepPublished(ctx, eventsdb.SweepPublishedParams{
			KeepMs: r.cfg.KeepPublished.Milliseconds(), BatchSize: int32(r.cfg.BatchSize)})
		if err != nil {
			return len(rows), 0, fmt.Errorf("events: relay: sweep published: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return len(rows), 0, fmt.Errorf("events: relay: commit: %w", err)
	}
	if r.cfg.OnPublishError != nil {
		for _, rep := range reports {
			r.cfg.OnPublishError(rep.f.ev, rep.failed, rep.dead, rep.f.err)
		}
	}
	return len(rows), len(done), nil
}

type failure struct {
	row eventsdb.ClaimEventsRow
	ev  cloudevents.Event
	err error
}

func (r *Relay) publish(ctx context.Context, evs []cloudevents.Event) []error {
	if len(evs) == 0 {
		return nil
	}
	if bp, ok := r.pub.(BatchPublisher); ok {
		errs := bp.PublishBatch(ctx, evs)
		if n := len(errs); n != len(evs) {
			errs = make([]error, len(evs))
			for i := range errs {
				errs[i] = fmt.Errorf("events: PublishBatch returned %d results for %d events", n, len(evs))
			}
		}
		return errs
	}
	errs := make([]error, len(evs))
	for i, ev := range evs {
		errs[i] = r.pub.Publish(ctx, ev)
	}
	return errs
}

// backoff returns the delay after the n-th failure (n >= 1).
func (r *Relay) backoff(n int) time.Duration {
	d := r.cfg.MaxBackoff
	if n-1 < 40 {
		d = min(r.cfg.MinBackoff<<(n-1), r.cfg.MaxBackoff)
		if d <= 0 { // overflow
			d = r.cfg.MaxBackoff
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Run publishes until ctx ends, then returns ctx's error. After a full batch
// it claims the next one at once; otherwise it waits for a notification
// (RelayConfig.Listen) or PollInterval. Errors of a batch go to
// RelayConfig.OnError and the relay carries on after PollInterval.
func (r *Relay) Run(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	if r.cfg.Listen != nil {
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		defer func() { cancel(); <-done }()
		go func() { defer close(done); r.listen(ctx, wake) }()
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		claimed, _, err := r.runOnce(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			r.report(err)
		} else if claimed >= r.cfg.BatchSize {
			continue
		}
		timer.Reset(r.cfg.PollInterval)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-timer.C:
		}
	}
}

func (r *Relay) listen(ctx context.Context, wake chan<- struct{}) {
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		if err := r.listenOnce(ctx, signal); err != nil && ctx.Err() == nil {
			r.report(fmt.Errorf("events: relay: listen: %w", err))
			select {
			case <-ctx.Done():
			case <-time.After(r.cfg.PollInterval):
			}
		}
	}
}

func (r *Relay) listenOnce(ctx context.Context, signal func()) error {
	conn, err := r.cfg.Listen(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN idem_outbox"); err != nil {
		return err
	}
	signal() // whatever was enqueued while nobody listened
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		signal()
	}
}

func (r *Relay) report(err error) {
	if r.cfg.OnError != nil {
		r.cfg.OnError(err)
	}
}
