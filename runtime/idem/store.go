package idem

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// recordStore is how one keyed request reaches PostgreSQL: it reads the
// request's record, runs its business transaction and writes the outcome.
// The state machine (atomic.go, lease.go, outcome.go) is written against it
// once; two implementations differ only in how statements travel:
//
//   - pipelinedStore (pipeline.go) holds one pooled connection for the
//     request and sends the statements it owns in batches, one round trip
//     each (BEGIN with the handler's first statement or with a lease claim,
//     the outcome with COMMIT);
//   - plainStore sends one statement per round trip through any DB.
//
// Statements that need no connection of the request (releasing a key,
// marking it retryable, recovery bookkeeping) go through Engine.q in both.
type recordStore interface {
	// open readies the store (pipelined: acquires its connection).
	open(ctx context.Context) error
	// read reads the record of k outside any transaction, with the stored
	// response only when it is fp's and may be replayed.
	read(ctx context.Context, k Key, fp []byte) (store.GetRecordRow, bool, error)
	// begin begins the business transaction.
	begin(ctx context.Context) (pgx.Tx, error)
	// insertOutcome writes an atomic-mode outcome in tx and commits. lost
	// means a concurrent request wrote the key first: nothing committed and
	// tx must be ended with readAbort.
	insertOutcome(ctx context.Context, tx pgx.Tx, o *atomicOutcome) (lost bool, err error)
	// readAbort ends tx (which lost) and reads the record that won.
	readAbort(ctx context.Context, tx pgx.Tx, k Key, fp []byte) (store.GetRecordRow, bool, error)
	// claimLease claims the key in a transaction of its own, committed.
	claimLease(ctx context.Context, p store.ClaimParams) (store.ClaimRow, error)
	// complete stores a lease-mode outcome in tx under its fence and
	// commits. stored is false when the fence no longer holds; tx must then
	// be rolled back.
	complete(ctx context.Context, tx pgx.Tx, p store.CompleteParams) (stored bool, err error)
	// release gives back what the store holds; safe to call more than once.
	// A later call of another method opens the store again.
	release()
}

// atomicOutcome is the one write of an atomic-mode execution: the final
// record, inserted (or replacing a record that may run again) just before
// COMMIT.
type atomicOutcome struct {
	p           store.InsertOutcomeParams
	replace     bool // a FAILED_RETRYABLE or expired record exists: ReplaceOutcome
	takeExpired bool
}

func (o *atomicOutcome) replaceParams() store.ReplaceOutcomeParams {
	p := o.p
	return store.ReplaceOutcomeParams{
		Tenant: p.Tenant, Operation: p.Operation, IdempotencyKey: p.IdempotencyKey,
		State: p.State, Fingerprint: p.Fingerprint, SchemaVersion: p.SchemaVersion,
		ResponseStatus: p.ResponseStatus, ResponseHeaders: p.ResponseHeaders, ResponseBody: p.ResponseBody,
		CreatedAt: p.CreatedAt, TtlMs: p.TtlMs, TakeExpired: o.takeExpired,
	}
}

// write runs the outcome's statement through q.
func (o *atomicOutcome) write(ctx context.Context, q *store.Queries) error {
	if o.replace {
		_, err := q.ReplaceOutcome(ctx, o.replaceParams())
		return err
	}
	return q.InsertOutcome(ctx, o.p)
}

// lostRace reports the error of an atomic outcome's write when another
// request wrote the key first: the primary key was taken (InsertOutcome),
// or the record was no longer replaceable (ReplaceOutcome's 22012).
func lostRace(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return (pe.Code == "23505" && pe.TableName == "idem_records") || pe.Code == "22012"
}

// newStore returns the store for one request.
func (e *Engine) newStore() recordStore {
	if canPipeline(e.db) {
		return &pipelinedStore{e: e}
	}
	return &plainStore{e: e}
}

// recordParams is the one place a Key becomes the primary key of a read.
func recordParams(k Key, fp []byte) store.GetRecordParams {
	return store.GetRecordParams{Tenant: k.Tenant, Operation: k.Operation, IdempotencyKey: k.Value, Fingerprint: fp}
}

// readRecord runs GetRecord through q; found is false for no record.
func readRecord(ctx context.Context, q *store.Queries, k Key, fp []byte) (store.GetRecordRow, bool, error) {
	rec, err := q.GetRecord(ctx, recordParams(k, fp))
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, false, nil
	}
	return rec, err == nil, err
}

// plainStore sends one statement per round trip through the engine's DB.
type plainStore struct {
	e *Engine
}

func (s *plainStore) open(context.Context) error { return nil }
func (s *plainStore) release()                   {}

func (s *plainStore) read(ctx context.Context, k Key, fp []byte) (store.GetRecordRow, bool, error) {
	return readRecord(ctx, s.e.q, k, fp)
}

func (s *plainStore) begin(ctx context.Context) (pgx.Tx, error) {
	return s.e.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
}

func (s *plainStore) insertOutcome(ctx context.Context, tx pgx.Tx, o *atomicOutcome) (bool, error) {
	err := o.write(ctx, store.New(tx))
	if lostRace(err) {
		return true, nil
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	return false, err
}

func (s *plainStore) readAbort(ctx context.Context, tx pgx.Tx, k Key, fp []byte) (store.GetRecordRow, bool, error) {
	rollback(ctx, tx)
	return readRecord(ctx, s.e.q, k, fp)
}

func (s *plainStore) claimLease(ctx context.Context, p store.ClaimParams) (store.ClaimRow, error) {
	return s.e.q.Claim(ctx, p)
}

func (s *plainStore) complete(ctx context.Context, tx pgx.Tx, p store.CompleteParams) (bool, error) {
	n, err := store.New(tx).Complete(ctx, p)
	if err == nil && n > 0 {
		err = tx.Commit(ctx)
	}
	return n > 0, err
}
