package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// recordStore is how one keyed request reaches PostgreSQL: it reads and
// claims the request's record and runs its business transaction. The state
// machine (atomic.go, lease.go, outcome.go) is written against it once; two
// implementations differ only in how statements travel:
//
//   - pipelinedStore (pipeline.go) holds one pooled connection for the
//     request and sends the statements it owns in batches, one round trip
//     each (BEGIN with the claim, the outcome with COMMIT);
//   - plainStore sends one statement per round trip through any DB.
//
// Statements outside a request's transaction that need no connection of
// the request (releasing a key, marking it retryable, recovery bookkeeping)
// go through Engine.q in both cases.
type recordStore interface {
	// open readies the store (pipelined: acquires its connection).
	open(ctx context.Context) error
	// read reads the record of k outside any transaction.
	read(ctx context.Context, k Key) (store.GetRecordRow, bool, error)
	// claimAtomic begins the business transaction and claims the key in it.
	// pre is what precedes the claim: BEGIN and the lock timeout.
	claimAtomic(ctx context.Context, p store.ClaimParams, pre []string) (pgx.Tx, store.ClaimRow, error)
	// readAbort reads the record of k inside tx, after a claim that
	// returned no row, and ends tx.
	readAbort(ctx context.Context, tx pgx.Tx, k Key) (store.GetRecordRow, error)
	// claimLease claims the key in a transaction of its own, committed.
	claimLease(ctx context.Context, p store.ClaimParams) (store.ClaimRow, error)
	// begin begins the business transaction (pipelined: it may have begun
	// with claimLease already).
	begin(ctx context.Context) (pgx.Tx, error)
	// complete stores a kept outcome in tx under its fence and commits.
	// stored is false when the fence no longer holds; tx is then over or
	// must be rolled back.
	complete(ctx context.Context, tx pgx.Tx, p store.CompleteParams) (stored bool, err error)
	// release gives back what the store holds; safe to call more than once.
	// A later call of another method opens the store again.
	release()
}

// newStore returns the store for one request.
func (e *Engine) newStore() recordStore {
	if canPipeline(e.db) {
		return &pipelinedStore{e: e}
	}
	return &plainStore{e: e}
}

// recordParams is the one place a Key becomes the primary key of a query.
func recordParams(k Key) store.GetRecordParams {
	return store.GetRecordParams{Tenant: k.Tenant, Operation: k.Operation, IdempotencyKey: k.Value}
}

// readRecord runs GetRecord through q; found is false for no record.
func readRecord(ctx context.Context, q *store.Queries, k Key) (store.GetRecordRow, bool, error) {
	rec, err := q.GetRecord(ctx, recordParams(k))
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

func (s *plainStore) read(ctx context.Context, k Key) (store.GetRecordRow, bool, error) {
	return readRecord(ctx, s.e.q, k)
}

func (s *plainStore) claimAtomic(ctx context.Context, p store.ClaimParams, pre []string) (pgx.Tx, store.ClaimRow, error) {
	tx, err := s.e.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return nil, store.ClaimRow{}, fmt.Errorf("idem: begin: %w", err)
	}
	// The transaction began on its own: the batch holds the bound, the
	// claim and the reset.
	b := &batchDB{c: tx, pre: pre[1:], post: resetAfter}
	c, err := store.New(b).Claim(ctx, p)
	return tx, c, err
}

func (s *plainStore) readAbort(ctx context.Context, tx pgx.Tx, k Key) (store.GetRecordRow, error) {
	rec, err := store.New(tx).GetRecord(ctx, recordParams(k))
	rollback(ctx, tx)
	return rec, err
}

func (s *plainStore) claimLease(ctx context.Context, p store.ClaimParams) (store.ClaimRow, error) {
	return s.e.q.Claim(ctx, p)
}

func (s *plainStore) begin(ctx context.Context) (pgx.Tx, error) {
	return s.e.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
}

func (s *plainStore) complete(ctx context.Context, tx pgx.Tx, p store.CompleteParams) (bool, error) {
	n, err := store.New(tx).Complete(ctx, p)
	if err == nil && n > 0 {
		err = tx.Commit(ctx)
	}
	return n > 0, err
}
