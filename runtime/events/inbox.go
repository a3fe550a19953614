package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/events/internal/eventsdb"
	"github.com/idemgen/idemgen/runtime/idem"
)

// Outcome is what Handle did with a message.
type Outcome int

const (
	// Failed: the handler or the database failed; nothing was recorded and
	// the message should be delivered again.
	Failed Outcome = iota
	// Processed: the handler ran and its writes committed with the record.
	Processed
	// Duplicate: the key was processed before with the same fingerprint;
	// the handler did not run. Acknowledge the message.
	Duplicate
	// Conflict: the key was processed before with another fingerprint; the
	// handler did not run and the error is a *ConflictError.
	Conflict
)

func (o Outcome) String() string {
	switch o {
	case Processed:
		return "processed"
	case Duplicate:
		return "duplicate"
	case Conflict:
		return "conflict"
	default:
		return "failed"
	}
}

// ErrConflict is matched (errors.Is) by every *ConflictError.
var ErrConflict = errors.New("message key reused with another payload")

// ConflictError reports a message whose key a consumer already processed
// with another payload: a producer bug or a key collision, never a
// redelivery. It is not acknowledged silently.
type ConflictError struct {
	Consumer    string
	Key         string
	Stored      []byte    // fingerprint recorded by the first message
	Got         []byte    // fingerprint of this message
	ProcessedAt time.Time // when the first message was processed
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("events: inbox %q: message %q: key reused with another payload (first processed %s)",
		e.Consumer, e.Key, e.ProcessedAt.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// IsConflict reports whether err is, or wraps, a *ConflictError.
func IsConflict(err error) bool { return errors.Is(err, ErrConflict) }

// Message is what the inbox records of a message: its key and the SHA-256
// fingerprint of its content.
type Message struct {
	Key         string
	Fingerprint [32]byte
}

// MessageOf returns the inbox record of a CloudEvent: keyed by source and id
// (which CloudEvents makes unique), fingerprinted by Fingerprint.
func MessageOf(ev cloudevents.Event) Message {
	return Message{Key: ev.Source() + " " + ev.ID(), Fingerprint: Fingerprint(ev)}
}

// Fingerprint is the SHA-256 of what makes two deliveries of an event the
// same message: its type, source, subject, data content type, data schema
// and data. The id is the key, not content; time and extension attributes
// are left out, so a re-encoded or re-stamped copy is still a duplicate.
func Fingerprint(ev cloudevents.Event) [32]byte {
	h := sha256.New()
	h.Write([]byte("idemgen-event-fingerprint-v1"))
	var n [8]byte
	for _, s := range [][]byte{
		[]byte(ev.Type()), []byte(ev.Source()), []byte(ev.Subject()),
		[]byte(ev.DataContentType()), []byte(ev.DataSchema()), ev.Data(),
	} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write(s)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// HandlerFunc applies a message: its writes go through tx, which also
// records the message in the inbox.
type HandlerFunc func(ctx context.Context, tx pgx.Tx) error

// Handle applies ev once for consumer: see HandleMessage.
func Handle(ctx context.Context, db idem.DB, consumer string, ev cloudevents.Event, fn HandlerFunc) (Outcome, error) {
	return HandleMessage(ctx, db, consumer, MessageOf(ev), fn)
}

// HandleMessage applies a message once for consumer. In one READ COMMITTED
// transaction it inserts (consumer, key, fingerprint) with INSERT ... ON
// CONFLICT DO NOTHING, runs fn and commits:
//
//   - a new key: fn runs; Processed once fn's writes and the record commit;
//   - a key processed before with the same fingerprint: Duplicate, fn does
//     not run;
//   - a key processed before with another fingerprint: Conflict and a
//     *ConflictError, fn does not run;
//   - fn fails, or the commit does: Failed and the error; nothing is
//     recorded, so a redelivery runs fn again.
//
// Concurrent deliveries of one message never both run fn: the second waits
// on the inbox's primary key until the first commits (then it is a
// Duplicate) or rolls back (then it runs).
func HandleMessage(ctx context.Context, db idem.DB, consumer string, msg Message, fn HandlerFunc) (Outcome, error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return Failed, fmt.Errorf("events: inbox %q: begin: %w", consumer, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	q := eventsdb.New(tx)
	n, err := q.InsertInbox(ctx, eventsdb.InsertInboxParams{
		Consumer: consumer, EventKey: msg.Key, Fingerprint: msg.Fingerprint[:]})
	if err != nil {
		return Failed, fmt.Errorf("events: inbox %q: record %q: %w", consumer, msg.Key, err)
	}
	if n == 0 {
		row, err := q.GetInbox(ctx, eventsdb.GetInboxParams{Consumer: consumer, EventKey: msg.Key})
		if err != nil {
			return Failed, fmt.Errorf("events: inbox %q: read %q: %w", consumer, msg.Key, err)
		}
		if bytes.Equal(row.Fingerprint, msg.Fingerprint[:]) {
			return Duplicate, nil
		}
		return Conflict, &ConflictError{
			Consumer: consumer, Key: msg.Key,
			Stored: row.Fingerprint, Got: bytes.Clone(msg.Fingerprint[:]),
			ProcessedAt: row.ProcessedAt.Time,
		}
	}
	if err := fn(ctx, tx); err != nil {
		return Failed, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Failed, fmt.Errorf("events: inbox %q: commit %q: %w", consumer, msg.Key, err)
	}
	return Processed, nil
}

// SweepInbox forgets up to limit messages (of all consumers) processed more
// than keep ago, and returns how many it deleted. Keep messages at least as
// long as a message can be redelivered (the broker's redelivery horizon),
// and as long as the producers' idempotency keys live.
func SweepInbox(ctx context.Context, db idem.DB, keep time.Duration, limit int) (int64, error) {
	n, err := eventsdb.New(db).SweepInbox(ctx, eventsdb.SweepInboxParams{
		KeepMs: keep.Milliseconds(), BatchSize: int32(limit)})
	if err != nil {
		return 0, fmt.Errorf("events: sweep inbox: %w", err)
	}
	return n, nil
}
