// Package events carries an idempotent request's consequences beyond the
// database: a transactional outbox, a relay that publishes it at least once,
// and an inbox that lets a consumer apply each message exactly once.
//
// # Outbox
//
// A handler calls Enqueue with the transaction the idempotency engine gave
// it, so the event exists if and only if the business writes commit. The
// event's id is derived from (tenant, operation, idempotency key, ordinal):
// the n-th event a request enqueues gets the same id every time that request
// runs, and the key travels with the event in the CloudEvents extension
// attribute "idempotencykey". The ordinal is counted in the database (the
// request's events still in the outbox, plus one), so a request whose first
// attempt rolled back numbers its events from 1 again. One caveat: a key
// that expired and is executed again (onExpired: execute) is a new operation
// under the same key; if its predecessor's events already left the outbox,
// its events get the same ids, and a consumer's inbox takes them for
// duplicates (same payload) or conflicts (another payload).
//
// # Relay
//
// A Relay claims due events in batches with FOR UPDATE SKIP LOCKED (any
// number of relays may run), hands them to a Publisher, and deletes them (or
// keeps them as PUBLISHED for RelayConfig.KeepPublished) in the same
// transaction. Delivery is at least once: a relay that dies between publish
// and commit leaves the events pending and they are published again, with
// the same id, which a broker's duplicate window (NATS JetStream's
// Nats-Msg-Id, see package natsjs) and the consumer's inbox both drop.
// A failed publish is retried with exponential backoff; after
// RelayConfig.MaxAttempts failures the event is dead-lettered (state DEAD)
// until Requeue. A batch's row locks are held while it is published, so keep
// the publisher's timeouts short (natsjs.Publisher waits 5s at most).
//
// Ordering: events enqueued with the same Aggregate key (per tenant) are
// published one at a time in insertion order; an event is not claimed while
// an earlier event of its aggregate is PENDING, whether claimed by another
// relay or backing off after a failure, so a failing event holds back the
// later events of its aggregate (and only those). A DEAD event no longer
// holds them back. Insertion order is the business transactions' commit
// order when they serialise on the aggregate (as they do when each updates
// the aggregate's row). Events without an aggregate key are unordered.
//
// # Inbox
//
// Handle runs a consumer's handler and records the message's key and
// fingerprint in the same transaction: a redelivered message is recognised
// and not applied twice, a message whose key comes back with another payload
// is a *ConflictError, and a handler error leaves nothing recorded so the
// message can be redelivered.
package events

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/events/internal/eventsdb"
	"github.com/idemgen/idemgen/runtime/idem"
)

// ExtensionIdempotencyKey is the CloudEvents extension attribute carrying the
// idempotency key of the request that enqueued the event.
const ExtensionIdempotencyKey = "idempotencykey"

// ErrNoKey is returned by Enqueue for an event enqueued outside an idempotent
// request (no idem.Key in the context) that has no id of its own.
var ErrNoKey = errors.New("events: no idempotency key in the context and the event has no id")

// Option adjusts one Enqueue call.
type Option func(*enqueueOptions)

type enqueueOptions struct {
	aggregate string
	tenant    string
	hasTenant bool
}

// Aggregate sets the event's ordering key: events of one tenant with the same
// aggregate key are published one at a time, in the order they were enqueued.
// Without it an event has no ordering constraint.
func Aggregate(key string) Option {
	return func(o *enqueueOptions) { o.aggregate = key }
}

// Tenant sets the tenant of an event enqueued outside an idempotent request.
// Inside one, the tenant is the request's and this option is ignored.
func Tenant(tenant string) Option {
	return func(o *enqueueOptions) { o.tenant, o.hasTenant = tenant, true }
}

// Enqueue writes ev to the outbox in tx, the caller's business transaction.
//
// Inside an idempotent request (idem.KeyFromContext(ctx) reports a key), the
// event's id is set to EventID(key, n) where n is the number of events this
// request has enqueued so far plus one, and the extension "idempotencykey"
// to the key. A retried request that runs again therefore enqueues the same
// ids, and an id already in the outbox is left as it is. Outside a request,
// ev must carry its own id (ErrNoKey otherwise) and Tenant sets its tenant.
//
// A zero event time is set to the current time. ev is not modified.
func Enqueue(ctx context.Context, tx pgx.Tx, ev cloudevents.Event, opts ...Option) error {
	var o enqueueOptions
	for _, opt := range opts {
		opt(&o)
	}
	ev = ev.Clone()
	q := eventsdb.New(tx)
	p := eventsdb.InsertEventParams{Tenant: o.tenant}
	if o.aggregate != "" {
		p.AggregateKey = pgtype.Text{String: o.aggregate, Valid: true}
	}
	if key, ok := idem.KeyFromContext(ctx); ok {
		op := pgtype.Text{String: key.Operation, Valid: true}
		ik := pgtype.Text{String: key.Value, Valid: true}
		n, err := q.NextOrdinal(ctx, eventsdb.NextOrdinalParams{Tenant: key.Tenant, Operation: op, IdempotencyKey: ik})
		if err != nil {
			return fmt.Errorf("events: enqueue %s: number the event: %w", ev.Type(), err)
		}
		ev.SetID(EventID(key, int(n)))
		ev.SetExtension(ExtensionIdempotencyKey, key.Value)
		p.Tenant, p.Operation, p.IdempotencyKey = key.Tenant, op, ik
		p.Ordinal = pgtype.Int4{Int32: n, Valid: true}
	} else if ev.ID() == "" {
		return fmt.Errorf("events: enqueue %s: %w", ev.Type(), ErrNoKey)
	}
	if f, ok := ctx.Value(extensionsCtx{}).(func(context.Context) map[string]string); ok {
		for name, v := range f(ctx) {
			if name != ExtensionIdempotencyKey {
				ev.SetExtension(name, v)
			}
		}
	}
	if ev.Time().IsZero() {
		ev.SetTime(time.Now().UTC())
	}
	if err := ev.Validate(); err != nil {
		return fmt.Errorf("events: enqueue %s: %w", ev.Type(), err)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("events: enqueue %s: encode: %w", ev.Type(), err)
	}
	p.ID, p.EventType, p.Event = ev.ID(), ev.Type(), body
	if _, err := q.InsertEvent(ctx, p); err != nil {
		return fmt.Errorf("events: enqueue %s %s: %w", ev.Type(), ev.ID(), err)
	}
	return nil
}

// idNamespace is the namespace UUID of idemgen event ids (a random UUIDv4,
// fixed forever: changing it changes every derived id).
var idNamespace = [16]byte{0x6b, 0x1f, 0x2e, 0x8a, 0x4d, 0x39, 0x4c, 0x0e, 0x9a, 0x57, 0x13, 0xd2, 0xc8, 0x66, 0x0b, 0xf4}

// EventID returns the id of the ordinal-th event (counting from 1) enqueued by
// the request identified by key: a name-based UUIDv8 computed with SHA-256
// as in RFC 9562 appendix B.2, over idemgen's namespace and the
// length-prefixed tenant, operation, key and ordinal. Distinct inputs never
// share an encoding, so they only share an id by a SHA-256 collision.
func EventID(key idem.Key, ordinal int) string {
	h := sha256.New()
	h.Write(idNamespace[:])
	var n [8]byte
	for _, s := range []string{key.Tenant, key.Operation, key.Value} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	binary.BigEndian.PutUint64(n[:], uint64(ordinal))
	h.Write(n[:])
	if !key.Since.IsZero() {
		// A key executed again after it expired starts a new series of ids.
		binary.BigEndian.PutUint64(n[:], uint64(key.Since.UnixMicro()))
		h.Write(n[:])
	}
	var u uuid.UUID
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // variant 10 (RFC 9562)
	return u.String()
}

// Requeue gives dead-lettered events of tenant a fresh start: PENDING, due
// now, attempts reset. It returns how many it requeued; ids that are not
// DEAD are ignored.
func Requeue(ctx context.Context, db idem.DB, tenant string, ids ...string) (int64, error) {
	n, err := eventsdb.New(db).RequeueDead(ctx, eventsdb.RequeueDeadParams{Tenant: tenant, Ids: ids})
	if err != nil {
		return 0, fmt.Errorf("events: requeue: %w", err)
	}
	return n, nil
}

type extensionsCtx struct{}

// WithExtensions returns a context under which Enqueue adds the extension
// attributes f returns (name -> value) to every event it writes, such as
// the CloudEvents distributed-tracing extension "traceparent" carrying the
// request's trace (runtime/idemotel installs one). Names must be valid
// CloudEvents attribute names; f must not set "idempotencykey".
func WithExtensions(ctx context.Context, f func(context.Context) map[string]string) context.Context {
	return context.WithValue(ctx, extensionsCtx{}, f)
}

// OutboxStats is what ReadOutboxStats reports.
type OutboxStats struct {
	Pending       int64         // events waiting to be published (backing off included)
	OldestPending time.Duration // how long the oldest of them has waited: the relay's lag
	Dead          int64         // dead-lettered events, waiting for Requeue
}

// ReadOutboxStats reads the outbox's backlog, over every tenant.
func ReadOutboxStats(ctx context.Context, db idem.DB) (OutboxStats, error) {
	r, err := eventsdb.New(db).OutboxStats(ctx)
	if err != nil {
		return OutboxStats{}, fmt.Errorf("events: outbox stats: %w", err)
	}
	return OutboxStats{Pending: r.Pending, OldestPending: time.Duration(r.OldestPendingSeconds * float64(time.Second)), Dead: r.Dead}, nil
}
