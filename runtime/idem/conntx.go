package idem

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// connTx is the pgx.Tx handed to handlers when the engine began the
// transaction itself inside a batch: it behaves like pgx's own (statements
// on the connection, savepoints for Begin) and releases the connection when
// it ends.
type connTx struct {
	p      *pconn
	sp     int64
	closed bool
}

var _ pgx.Tx = (*connTx)(nil)

func (t *connTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if t.closed {
		return nil, pgx.ErrTxClosed
	}
	t.sp++
	if _, err := t.p.c.Exec(ctx, "savepoint sp_"+strconv.FormatInt(t.sp, 10)); err != nil {
		return nil, err
	}
	return &savepointTx{parent: t, n: t.sp}, nil
}

func (t *connTx) Commit(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	tag, err := t.p.c.Exec(ctx, "commit")
	t.p.release()
	if err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// finish ends the transaction after a statement sent through b, a batchDB
// queuing "commit" behind it; err is that statement's error. It reports
// how the commit went.
func (t *connTx) finish(err error, b *batchDB) error {
	t.closed = true
	if err == nil && b.lastStatus == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	t.p.release() // rolls back when the batch stopped before its commit
	return err
}

func (t *connTx) Rollback(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	var err error
	if !t.p.c.IsClosed() && t.p.c.PgConn().TxStatus() != 'I' {
		if _, err = t.p.c.Exec(ctx, "rollback"); err != nil {
			_ = t.p.c.Close(context.Background())
		}
	}
	t.p.release()
	return err
}

func (t *connTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if t.closed {
		return 0, pgx.ErrTxClosed
	}
	return t.p.c.CopyFrom(ctx, table, cols, src)
}

func (t *connTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.closed {
		return pgx.FailedBatchResults(b, pgx.ErrTxClosed)
	}
	return t.p.c.SendBatch(ctx, b)
}

// LargeObjects needs a pgx-made Tx (its field is unexported): one is made
// over the same connection, already inside this transaction, by a begin
// query that is a no-op. Costs a round trip, only when used.
func (t *connTx) LargeObjects() pgx.LargeObjects {
	tx, err := t.p.c.BeginTx(context.Background(), pgx.TxOptions{BeginQuery: "select"})
	if err != nil {
		return pgx.LargeObjects{}
	}
	return tx.LargeObjects()
}

func (t *connTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if t.closed {
		return nil, pgx.ErrTxClosed
	}
	return t.p.c.Prepare(ctx, name, sql)
}

func (t *connTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.closed {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return t.p.c.Exec(ctx, sql, args...)
}

func (t *connTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.closed {
		return errRows{}, pgx.ErrTxClosed
	}
	return t.p.c.Query(ctx, sql, args...)
}

func (t *connTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.closed {
		return errRow{pgx.ErrTxClosed}
	}
	return t.p.c.QueryRow(ctx, sql, args...)
}

func (t *connTx) Conn() *pgx.Conn { return t.p.c }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// errRows is the closed Rows of a closed transaction, as pgx returns one.
type errRows struct{}

func (errRows) Close()                                       {}
func (errRows) Err() error                                   { return pgx.ErrTxClosed }
func (errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (errRows) Next() bool                                   { return false }
func (errRows) Scan(...any) error                            { return pgx.ErrTxClosed }
func (errRows) Values() ([]any, error)                       { return nil, pgx.ErrTxClosed }
func (errRows) RawValues() [][]byte                          { return nil }
func (errRows) Conn() *pgx.Conn                              { return nil }
func (errRows) TypeMap() *pgtype.Map                         { return nil }

// savepointTx is a pseudo nested transaction, as pgx makes them.
type savepointTx struct {
	parent *connTx
	n      int64
	closed bool
}

var _ pgx.Tx = (*savepointTx)(nil)

func (s *savepointTx) name() string { return "sp_" + strconv.FormatInt(s.n, 10) }

func (s *savepointTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if s.closed {
		return nil, pgx.ErrTxClosed
	}
	return s.parent.Begin(ctx)
}

func (s *savepointTx) Commit(ctx context.Context) error {
	if s.closed {
		return pgx.ErrTxClosed
	}
	_, err := s.parent.Exec(ctx, "release savepoint "+s.name())
	s.closed = true
	return err
}

func (s *savepointTx) Rollback(ctx context.Context) error {
	if s.closed {
		return pgx.ErrTxClosed
	}
	_, err := s.parent.Exec(ctx, "rollback to savepoint "+s.name())
	s.closed = true
	return err
}

func (s *savepointTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if s.closed {
		return 0, pgx.ErrTxClosed
	}
	return s.parent.CopyFrom(ctx, table, cols, src)
}

func (s *savepointTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if s.closed {
		return pgx.FailedBatchResults(b, pgx.ErrTxClosed)
	}
	return s.parent.SendBatch(ctx, b)
}

func (s *savepointTx) LargeObjects() pgx.LargeObjects { return s.parent.LargeObjects() }

func (s *savepointTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if s.closed {
		return nil, pgx.ErrTxClosed
	}
	return s.parent.Prepare(ctx, name, sql)
}

func (s *savepointTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if s.closed {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return s.parent.Exec(ctx, sql, args...)
}

func (s *savepointTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if s.closed {
		return errRows{}, pgx.ErrTxClosed
	}
	return s.parent.Query(ctx, sql, args...)
}

func (s *savepointTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if s.closed {
		return errRow{pgx.ErrTxClosed}
	}
	return s.parent.QueryRow(ctx, sql, args...)
}

func (s *savepointTx) Conn() *pgx.Conn { return s.parent.Conn() }
