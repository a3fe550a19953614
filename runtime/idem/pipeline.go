package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idem/internal/pgpipe"
)

// Pipelining. When the DB can hand out a dedicated connection (a
// *pgxpool.Pool, or a *pgx.Conn), the engine runs a request on one
// connection and sends the statements it owns in pgx batches (one round
// trip each): BEGIN with the claim, and the outcome with COMMIT. Any other
// DB gets one statement per round trip (plainSession), with the same semantics.

// pipelinedSession runs a request on one connection, acquired when first
// needed and again after release.
type pipelinedSession struct {
	e  *Engine
	pc *pgpipe.Conn
	// aloneBatched: the first commitAlone went out in a batch that also
	// began the business transaction; begun: that transaction is open.
	aloneBatched, begun bool
}

func (s *pipelinedSession) open(ctx context.Context) error {
	if s.pc != nil && !s.pc.Done() {
		return nil
	}
	pc, err := pgpipe.Acquire(ctx, s.e.db)
	if err != nil {
		return fmt.Errorf("idem: acquire connection: %w", err)
	}
	s.pc, s.begun = pc, false
	return nil
}

func (s *pipelinedSession) release() {
	s.pc.Release()
	s.begun = false
}

func (s *pipelinedSession) do(ctx context.Context, f func(q statements) error) error {
	if err := s.open(ctx); err != nil {
		return err
	}
	return f(statementsOn(s.pc.C))
}

// begin returns the business transaction. Unless a commitAlone batch began
// it already, BEGIN is not sent yet: it travels with the handler's first
// statement (see pgpipe.Tx).
func (s *pipelinedSession) begin(ctx context.Context) (pgx.Tx, error) {
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	tx := pgpipe.NewTx(s.pc, !s.begun)
	s.begun = false
	return tx, nil
}

// commitWith sends f's statement and COMMIT in one round trip (BEGIN too,
// when the handler ran no statement); PostgreSQL skips the COMMIT when the
// statement fails.
func (s *pipelinedSession) commitWith(ctx context.Context, tx pgx.Tx, f func(q statements) error) error {
	ct := tx.(*pgpipe.Tx)
	b := pgpipe.NewBatch(ct.Raw(), ct.BeginFirst(), pgpipe.CommitAfter)
	if err := f(statementsOn(b)); err != nil {
		return err
	}
	return ct.Finish(nil, b)
}

// rollbackThen sends ROLLBACK and f's statement in one round trip, then
// gives the connection back.
func (s *pipelinedSession) rollbackThen(ctx context.Context, tx pgx.Tx, f func(q statements) error) error {
	ct := tx.(*pgpipe.Tx)
	err := f(statementsOn(pgpipe.NewBatch(ct.Raw(), pgpipe.RollbackBefore, nil)))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "25P02" {
		// pgx prepares a statement the connection has not run yet before
		// it sends the batch, and the failed transaction refuses that:
		// roll back first, then run f (once per connection).
		if _, err = ct.Raw().Exec(ctx, "rollback"); err == nil {
			err = f(statementsOn(ct.Raw()))
		}
	}
	ct.Abandon()
	return err
}

// commitAlone sends, the first time, BEGIN, f's statement, COMMIT and the
// BEGIN of the business transaction in one round trip; later calls (a
// retried claim) send f's statement alone.
func (s *pipelinedSession) commitAlone(ctx context.Context, f func(q statements) error) error {
	if err := s.open(ctx); err != nil {
		return err
	}
	if s.aloneBatched {
		return f(statementsOn(s.pc.C))
	}
	s.aloneBatched = true
	err := f(statementsOn(pgpipe.NewBatch(s.pc.C, pgpipe.AlonePre, pgpipe.AlonePost)))
	if err != nil && !s.pc.C.IsClosed() && s.pc.C.PgConn().TxStatus() != 'I' {
		// The business transaction began for nothing (the statement found
		// no row), or the batch failed half-way (release rolls back then).
		if _, rerr := s.pc.C.Exec(ctx, "rollback"); rerr != nil && errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("idem: rollback: %w", rerr)
		}
	}
	s.begun = err == nil
	return err
}
