package idem

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/idem/internal/pgpipe"
	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// session is how one keyed request's statements travel to PostgreSQL. The
// modes (atomic.go, lease.go) decide which statements a request sends; a
// session decides how they travel:
//
//   - pipelinedSession (pipeline.go) holds one pooled connection for the
//     request and sends what belongs together in one batch, one round trip
//     (BEGIN with the handler's first statement or with a lease claim, an
//     outcome with COMMIT, ROLLBACK with the read that follows it);
//   - plainSession sends one statement per round trip through any DB.
//
// Statements that need no connection of the request (releasing a key,
// marking it retryable, recovery bookkeeping) go through Engine.q in both.
type session interface {
	// do runs f's statements outside any transaction.
	do(ctx context.Context, f func(q *store.Queries) error) error
	// begin begins the business transaction.
	begin(ctx context.Context) (pgx.Tx, error)
	// commitWith runs f's statement in tx and commits, with COMMIT sent
	// behind the statement where the session can. When f fails nothing
	// committed: tx is left open, for the caller to roll back.
	commitWith(ctx context.Context, tx pgx.Tx, f func(q *store.Queries) error) error
	// rollbackThen rolls tx back and then runs f's statements, in one round
	// trip where the session can, and gives back what the session holds.
	rollbackThen(ctx context.Context, tx pgx.Tx, f func(q *store.Queries) error) error
	// commitAlone runs f's statement in a transaction of its own, committed
	// before it returns. A session may begin the business transaction in
	// the same round trip (see pipelinedSession).
	commitAlone(ctx context.Context, f func(q *store.Queries) error) error
	// release gives back what the session holds; safe to call more than
	// once. A later call of another method opens the session again.
	release()
}

// newSession returns the session of one request.
func (e *Engine) newSession() session {
	if pgpipe.CanPipeline(e.db) {
		return &pipelinedSession{e: e}
	}
	return &plainSession{e: e}
}

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

// readRecord runs GetRecord through q; found is false for no record.
func readRecord(ctx context.Context, q *store.Queries, r ref, fp []byte) (store.GetRecordRow, bool, error) {
	rec, err := q.GetRecord(ctx, store.GetRecordParams{ID: r.id, Tenant: r.Tenant, Operation: r.Operation,
		IdempotencyKey: r.Value, Fingerprint: fp})
	if errors.Is(err, pgx.ErrNoRows) {
		return rec, false, nil
	}
	return rec, err == nil, err
}

// read reads r's record through st, outside any transaction.
func read(ctx context.Context, st session, r ref, fp []byte) (rec store.GetRecordRow, found bool, err error) {
	err = st.do(ctx, func(q *store.Queries) error {
		rec, found, err = readRecord(ctx, q, r, fp)
		return err
	})
	return rec, found, err
}

// plainSession sends one statement per round trip through the engine's DB.
type plainSession struct {
	e *Engine
}

func (s *plainSession) release() {}

func (s *plainSession) do(_ context.Context, f func(q *store.Queries) error) error {
	return f(s.e.q)
}

func (s *plainSession) begin(ctx context.Context) (pgx.Tx, error) {
	return s.e.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
}

func (s *plainSession) commitWith(ctx context.Context, tx pgx.Tx, f func(q *store.Queries) error) error {
	if err := f(store.New(tx)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (s *plainSession) rollbackThen(ctx context.Context, tx pgx.Tx, f func(q *store.Queries) error) error {
	rollback(ctx, tx)
	return f(s.e.q)
}

func (s *plainSession) commitAlone(_ context.Context, f func(q *store.Queries) error) error {
	return f(s.e.q) // one statement outside a transaction commits by itself
}
