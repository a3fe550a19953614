package idem

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem/internal/pgpipe"
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
	do(ctx context.Context, f func(q statements) error) error
	// begin begins the business transaction.
	begin(ctx context.Context) (pgx.Tx, error)
	// commitWith runs f's statement in tx and commits, with COMMIT sent
	// behind the statement where the session can. When f fails nothing
	// committed: tx is left open, for the caller to roll back.
	commitWith(ctx context.Context, tx pgx.Tx, f func(q statements) error) error
	// rollbackThen rolls tx back and then runs f's statements, in one round
	// trip where the session can, and gives back what the session holds.
	rollbackThen(ctx context.Context, tx pgx.Tx, f func(q statements) error) error
	// commitAlone runs f's statement in a transaction of its own, committed
	// before it returns. A session may begin the business transaction in
	// the same round trip (see pipelinedSession).
	commitAlone(ctx context.Context, f func(q statements) error) error
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

// read reads r's record through st, outside any transaction.
func read(ctx context.Context, st session, r ref, fp []byte) (rec record, found bool, err error) {
	err = st.do(ctx, func(q statements) error {
		rec, found, err = q.read(ctx, r, fp)
		return err
	})
	return rec, found, err
}

// plainSession sends one statement per round trip through the engine's DB.
type plainSession struct {
	e *Engine
}

func (s *plainSession) release() {}

func (s *plainSession) do(_ context.Context, f func(q statements) error) error {
	return f(s.e.q)
}

func (s *plainSession) begin(ctx context.Context) (pgx.Tx, error) {
	return s.e.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
}

func (s *plainSession) commitWith(ctx context.Context, tx pgx.Tx, f func(q statements) error) error {
	if err := f(statementsOn(tx)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (s *plainSession) rollbackThen(ctx context.Context, tx pgx.Tx, f func(q statements) error) error {
	rollback(ctx, tx)
	return f(s.e.q)
}

func (s *plainSession) commitAlone(_ context.Context, f func(q statements) error) error {
	return f(s.e.q) // one statement outside a transaction commits by itself
}
