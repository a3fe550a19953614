package idem

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// The store boundary. The engine's statements are written in SQL
// (queries/records.sql) and compiled by sqlc into internal/store; this
// file is the one place the engine calls them. Everything else speaks the
// engine's own types: a ref names a record, a record is what a read
// finds, a leaseClaim what a lease claim returns, and statements sends
// them through a connection, a transaction or a batch (session.go says
// which).

// ref is how every statement names a key's record: its id, the primary
// key, and the readable tenant, operation and key, which statements that
// write a new row store and statements that act on a row they do not hold
// a claim on compare (see Key.recordID). Made once per request
// (Key.ref); every statement's parameters are built from it.
type ref struct {
	id pgtype.UUID
	Key
}

// ref returns k's ref.
func (k Key) ref() ref {
	return ref{id: k.recordID(), Key: Key{Tenant: k.Tenant, Operation: k.Operation, Value: k.Value}}
}

// record is a key's record as a request reads it (GetRecord), or as the
// cache (cacheentry.go) and a leader in this process (handoff.go) hand it
// over: what classify, replay and the modes decide on. Times and
// durations left are the database's, measured when it was read.
type record struct {
	// sameKey: the record under the key's id is the key's (else an id
	// collision); sameRequest: it was stored for the request's fingerprint.
	sameKey, sameRequest bool
	state                State
	schema               string // the response's schema version
	attempts             int32
	fence                int64
	createdAt            time.Time
	completedAt          time.Time
	// expired: the key's time to live is over; leaseLapsed: its lease
	// claim's lease is.
	expired, leaseLapsed bool
	leaseLeft            time.Duration // until the lease lapses
	left                 time.Duration // until the record expires
	// The stored response (sealed when there is a Sealer); empty when
	// sameRequest is false.
	status  int32
	headers []byte
	body    []byte
}

// leaseClaim is a committed lease claim (Claim).
type leaseClaim struct {
	fence    int64
	attempts int32
	// takenOver: the claim took over a stale one, or a failed attempt whose
	// handler ran (the recovery hook decides first).
	takenOver bool
	// The last recovery point an earlier attempt saved, if any (hasPoint).
	point     string
	hasPoint  bool
	data      []byte
	createdAt time.Time
	left      time.Duration // until the record expires, from when the claim was sent
}

// statements are the engine's statements sent through one store.DBTX: the
// engine's DB, a request's connection or transaction, or a batch
// (pgpipe.Batch).
type statements struct{ q *store.Queries }

func statementsOn(db store.DBTX) statements { return statements{q: store.New(db)} }

// read runs GetRecord; found is false for no record.
func (s statements) read(ctx context.Context, r ref, fp []byte) (record, bool, error) {
	row, err := s.q.GetRecord(ctx, store.GetRecordParams{ID: r.id, Tenant: r.Tenant, Operation: r.Operation,
		IdempotencyKey: r.Value, Fingerprint: fp})
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
		return record{}, false, err
	}
	return recordOf(&row), true, nil
}

// recordOf is the record GetRecord read: expiry and the lease judged by
// the database's clock when it read the row (DbNow), the stored response
// kept only when it is to be replayed (the key's own, this request's,
// final and not expired).
func recordOf(row *store.GetRecordRow) record {
	now := row.DbNow.Time
	rec := record{
		sameKey: row.SameKey, sameRequest: row.SameRequest, state: State(row.State), schema: row.SchemaVersion,
		attempts: row.Attempts, fence: row.Fence, createdAt: row.CreatedAt.Time, completedAt: row.CompletedAt.Time,
		expired: !row.ExpiresAt.Time.After(now),
	}
	if left := row.ExpiresAt.Time.Sub(now); left > 0 {
		rec.left = left.Truncate(time.Millisecond)
	}
	if row.LeaseExpiresAt.Valid {
		left := row.LeaseExpiresAt.Time.Sub(now)
		rec.leaseLapsed = left <= 0
		rec.leaseLeft = ceilMillis(left)
	}
	if rec.sameKey && rec.sameRequest && (rec.state == StateCompleted || rec.state == StateFailedReplayable) && !rec.expired {
		rec.status, rec.headers, rec.body = row.ResponseStatus, row.ResponseHeaders, row.ResponseBody
	} else {
		rec.headers, rec.body = []byte("{}"), []byte{}
	}
	return rec
}

// ceilMillis rounds d up to a whole millisecond (towards zero when it is
// negative), as ceil() of the milliseconds.
func ceilMillis(d time.Duration) time.Duration {
	if d > 0 {
		d += time.Millisecond - 1
	}
	return d.Truncate(time.Millisecond)
}

// outcomeRow is an atomic execution's outcome as it is written: created
// at since, under the policy's schema version and time to live.
type outcomeRow struct {
	state  State
	fp     []byte
	schema string
	body   *storedResponse
	since  time.Time
	ttl    time.Duration
}

// insertOutcome writes o as r's record (InsertOutcome); it fails on the
// primary key when the key has a record (lostRace).
func (s statements) insertOutcome(ctx context.Context, r ref, o *outcomeRow) (completed time.Time, err error) {
	at, err := s.q.InsertOutcome(ctx, store.InsertOutcomeParams{
		ID: r.id, Tenant: r.Tenant, Operation: r.Operation, IdempotencyKey: r.Value,
		State: string(o.state), Fingerprint: o.fp, SchemaVersion: o.schema,
		ResponseStatus: pgtype.Int4{Int32: o.body.status, Valid: true}, ResponseHeaders: o.body.headers, ResponseBody: o.body.body,
		CreatedAt: pgtype.Timestamptz{Time: o.since, Valid: true}, TtlMs: o.ttl.Milliseconds(),
	})
	return at.Time, err
}

// replaceOutcome writes o over r's FAILED_RETRYABLE record of the same
// payload, or an expired one when takeExpired (ReplaceOutcome); left is
// the record's remaining life. It fails with 22012 when the record is no
// longer replaceable (lostRace).
func (s statements) replaceOutcome(ctx context.Context, r ref, o *outcomeRow, takeExpired bool) (completed time.Time, left time.Duration, err error) {
	row, err := s.q.ReplaceOutcome(ctx, store.ReplaceOutcomeParams{
		ID: r.id, Tenant: r.Tenant, Operation: r.Operation, IdempotencyKey: r.Value,
		State: string(o.state), Fingerprint: o.fp, SchemaVersion: o.schema,
		ResponseStatus: pgtype.Int4{Int32: o.body.status, Valid: true}, ResponseHeaders: o.body.headers, ResponseBody: o.body.body,
		CreatedAt: pgtype.Timestamptz{Time: o.since, Valid: true}, TtlMs: o.ttl.Milliseconds(), TakeExpired: takeExpired,
	})
	return row.CompletedAt.Time, time.Duration(row.LeftMs) * time.Millisecond, err
}

// recordRetryable writes r's record anew as FAILED_RETRYABLE of payload
// fp (RecordRetryable), unless another request's record stands (false).
func (s statements) recordRetryable(ctx context.Context, r ref, fp []byte, schema string, ttl time.Duration) (bool, error) {
	n, err := s.q.RecordRetryable(ctx, store.RecordRetryableParams{
		ID: r.id, Tenant: r.Tenant, Operation: r.Operation, IdempotencyKey: r.Value,
		Fingerprint: fp, SchemaVersion: schema, TtlMs: ttl.Milliseconds(),
	})
	return n > 0, err
}

// releaseRetryable deletes r's FAILED_RETRYABLE record of payload fp.
func (s statements) releaseRetryable(ctx context.Context, r ref, fp []byte) error {
	_, err := s.q.ReleaseRetryable(ctx, store.ReleaseRetryableParams{ID: r.id, Tenant: r.Tenant, Operation: r.Operation,
		IdempotencyKey: r.Value, Fingerprint: fp})
	return err
}

// claim claims r's record for payload fp under pol with a lease of leaseMs
// (Claim); pgx.ErrNoRows when another request holds it or its record
// decides the request.
func (s statements) claim(ctx context.Context, r ref, fp []byte, pol *Policy, leaseMs int64) (leaseClaim, error) {
	row, err := s.q.Claim(ctx, store.ClaimParams{
		ID: r.id, Tenant: r.Tenant, Operation: r.Operation, IdempotencyKey: r.Value,
		Fingerprint: fp, SchemaVersion: pol.SchemaVersion, LeaseMs: leaseMs, TtlMs: pol.TTL.Milliseconds(),
		TakeExpired: pol.OnExpired == ExpiredExecute,
	})
	if err != nil {
		return leaseClaim{}, err
	}
	return leaseClaim{fence: row.Fence, attempts: row.Attempts, takenOver: row.TakenOver,
		point: row.RecoveryPoint.String, hasPoint: row.RecoveryPoint.Valid, data: row.RecoveryData,
		createdAt: row.CreatedAt.Time, left: time.Duration(row.ExpiresLeftMs) * time.Millisecond}, nil
}

// complete stores the outcome of the claim id holds with fence, outside
// any transaction (Complete); pgx.ErrNoRows when the claim was taken over.
func (s statements) complete(ctx context.Context, id pgtype.UUID, fence int64, state State, body *storedResponse) (time.Time, error) {
	at, err := s.q.Complete(ctx, store.CompleteParams{State: string(state),
		ResponseStatus: pgtype.Int4{Int32: body.status, Valid: true}, ResponseHeaders: body.headers, ResponseBody: body.body,
		ID: id, Fence: fence})
	return at.Time, err
}

// completeOrAbort is complete in the business transaction
// (CompleteOrAbort): a claim taken over fails it with 22012, so that the
// transaction cannot commit (isFencedOut).
func (s statements) completeOrAbort(ctx context.Context, id pgtype.UUID, fence int64, state State, body *storedResponse) (time.Time, error) {
	row, err := s.q.CompleteOrAbort(ctx, store.CompleteOrAbortParams{State: string(state),
		ResponseStatus: pgtype.Int4{Int32: body.status, Valid: true}, ResponseHeaders: body.headers, ResponseBody: body.body,
		ID: id, Fence: fence})
	return row.CompletedAt.Time, err
}

// failRetryable marks the claim FAILED_RETRYABLE (FailRetryable), if it
// still holds (true).
func (s statements) failRetryable(ctx context.Context, id pgtype.UUID, fence int64, handlerRan bool) (bool, error) {
	n, err := s.q.FailRetryable(ctx, store.FailRetryableParams{ID: id, Fence: fence, HandlerRan: handlerRan})
	return n > 0, err
}

// releaseClaim frees the key of the claim, if it still holds.
func (s statements) releaseClaim(ctx context.Context, id pgtype.UUID, fence int64) error {
	_, err := s.q.ReleaseClaim(ctx, store.ReleaseClaimParams{ID: id, Fence: fence})
	return err
}

// markUnknown makes the claim's record UNKNOWN (MarkUnknown), if the
// claim still holds (true).
func (s statements) markUnknown(ctx context.Context, id pgtype.UUID, fence int64) (bool, error) {
	n, err := s.q.MarkUnknown(ctx, store.MarkUnknownParams{ID: id, Fence: fence})
	return n > 0, err
}

// saveRecoveryPoint stores a recovery point and renews the claim's lease
// to leaseMs (SaveRecoveryPoint), if the claim still holds (true).
func (s statements) saveRecoveryPoint(ctx context.Context, id pgtype.UUID, fence int64, point string, data []byte, leaseMs int64) (bool, error) {
	n, err := s.q.SaveRecoveryPoint(ctx, store.SaveRecoveryPointParams{
		RecoveryPoint: pgtype.Text{String: point, Valid: true}, RecoveryData: data,
		LeaseMs: leaseMs, ID: id, Fence: fence,
	})
	return n > 0, err
}

// claimID names one lease claim: its record and fence.
type claimID struct {
	id    pgtype.UUID
	fence int64
}

// leaseRenewal is one claim's lease to renew, in milliseconds from now.
type leaseRenewal struct {
	claimID
	leaseMs int64
}

// renewLeases renews the leases of the claims that still hold and returns
// them (RenewLeases).
func (s statements) renewLeases(ctx context.Context, ls []leaseRenewal) ([]claimID, error) {
	var p store.RenewLeasesParams
	for _, l := range ls {
		p.Ids = append(p.Ids, l.id)
		p.Fences = append(p.Fences, l.fence)
		p.LeaseMs = append(p.LeaseMs, l.leaseMs)
	}
	rows, err := s.q.RenewLeases(ctx, p)
	if err != nil {
		return nil, err
	}
	held := make([]claimID, len(rows))
	for i, row := range rows {
		held[i] = claimID{row.ID, row.Fence}
	}
	return held, nil
}

// legacyTable reports whether the v2 records table is still there.
func (s statements) legacyTable(ctx context.Context) (bool, error) { return s.q.LegacyTable(ctx) }

// importLegacy moves r's record from the v2 table, if it is there.
func (s statements) importLegacy(ctx context.Context, r ref) error {
	_, err := s.q.ImportLegacy(ctx, store.ImportLegacyParams{Tenant: r.Tenant, Operation: r.Operation, IdempotencyKey: r.Value})
	return err
}
