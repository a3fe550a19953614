package pgpipe

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Tx is the pgx.Tx handed to handlers when the engine runs the request
// on a connection of its own: it behaves like pgx's (statements on the
// connection, savepoints for Begin) and releases the connection when it
// ends.
//
// While pending, BEGIN has not been sent: it goes out in one batch with the
// first statement, so a transaction costs no round trip of its own. Methods
// that cannot batch (CopyFrom, SendBatch, Begin, LargeObjects, Conn) send
// BEGIN first.
type Tx struct {
	p       *Conn
	sp      int64
	closed  bool
	pending bool
}

var _ pgx.Tx = (*Tx)(nil)

// NewTx returns the transaction of c; pending: BEGIN is not sent yet.
func NewTx(c *Conn, pending bool) *Tx { return &Tx{p: c, pending: pending} }

// Raw is the transaction's connection, without sending a pending BEGIN
// (Conn sends it).
func (t *Tx) Raw() *pgx.Conn { return t.p.C }

// Abandon ends the transaction without a statement of its own and gives
// the connection back (which rolls back what is open).
func (t *Tx) Abandon() {
	t.closed = true
	t.p.Release()
}

// BeginFirst returns the statements to send before the next one: BEGIN
// while it is pending (and no longer pending afterwards).
func (t *Tx) BeginFirst() []string {
	if !t.pending {
		return nil
	}
	t.pending = false
	return beginBefore
}

// flush sends a pending BEGIN on its own.
func (t *Tx) flush(ctx context.Context) error {
	if !t.pending {
		return nil
	}
	if _, err := t.p.C.Exec(ctx, BeginRC); err != nil {
		return err
	}
	t.pending = false
	return nil
}

// sendWithBegin sends BEGIN and sql in one batch and reads BEGIN's result.
func (t *Tx) sendWithBegin(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	bq := newQueued()
	bq.queue(BeginRC, nil)
	bq.queue(sql, args)
	br := t.p.C.SendBatch(ctx, &bq.b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return nil, err
	}
	t.pending = false
	return br, nil
}

func (t *Tx) Begin(ctx context.Context) (pgx.Tx, error) {
	if t.closed {
		return nil, pgx.ErrTxClosed
	}
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	t.sp++
	if _, err := t.p.C.Exec(ctx, "savepoint sp_"+strconv.FormatInt(t.sp, 10)); err != nil {
		return nil, err
	}
	return &savepointTx{parent: t, n: t.sp}, nil
}

func (t *Tx) Commit(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	if t.pending { // nothing was sent: nothing to commit
		t.p.Release()
		return nil
	}
	tag, err := t.p.C.Exec(ctx, "commit")
	t.p.Release()
	if err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Finish ends the transaction after a statement sent through b, a Batch
// queuing "commit" behind it; err is that statement's error. It reports
// how the commit went.
func (t *Tx) Finish(err error, b *Batch) error {
	t.closed = true
	if err == nil && b.lastStatus == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	t.p.Release() // rolls back when the batch stopped before its commit
	return err
}

func (t *Tx) Rollback(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	var err error
	if !t.p.C.IsClosed() && t.p.C.PgConn().TxStatus() != 'I' {
		if _, err = t.p.C.Exec(ctx, "rollback"); err != nil {
			_ = t.p.C.Close(context.Background())
		}
	}
	t.p.Release()
	return err
}

func (t *Tx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if t.closed {
		return 0, pgx.ErrTxClosed
	}
	if err := t.flush(ctx); err != nil {
		return 0, err
	}
	return t.p.C.CopyFrom(ctx, table, cols, src)
}

func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.closed {
		return pgx.FailedBatchResults(b, pgx.ErrTxClosed)
	}
	if err := t.flush(ctx); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return t.p.C.SendBatch(ctx, b)
}

// LargeObjects needs a pgx-made Tx (its field is unexported): one is made
// over the same connection, already inside this transaction, by a begin
// query that is a no-op. Costs a round trip, only when used.
func (t *Tx) LargeObjects() pgx.LargeObjects {
	if err := t.flush(context.Background()); err != nil {
		return pgx.LargeObjects{}
	}
	tx, err := t.p.C.BeginTx(context.Background(), pgx.TxOptions{BeginQuery: "select"})
	if err != nil {
		return pgx.LargeObjects{}
	}
	return tx.LargeObjects()
}

func (t *Tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if t.closed {
		return nil, pgx.ErrTxClosed
	}
	return t.p.C.Prepare(ctx, name, sql)
}

func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.closed {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	if !t.pending {
		return t.p.C.Exec(ctx, sql, args...)
	}
	br, err := t.sendWithBegin(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.closed {
		return errRows{pgx.ErrTxClosed}, pgx.ErrTxClosed
	}
	if !t.pending {
		return t.p.C.Query(ctx, sql, args...)
	}
	br, err := t.sendWithBegin(ctx, sql, args)
	if err != nil {
		return errRows{err}, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return rows, err
	}
	return &beginRows{Rows: rows, br: br}, nil
}

func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.closed {
		return errRow{pgx.ErrTxClosed}
	}
	if !t.pending {
		return t.p.C.QueryRow(ctx, sql, args...)
	}
	br, err := t.sendWithBegin(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return &beginRow{row: br.QueryRow(), br: br}
}

// Conn returns the connection, inside the transaction: a pending BEGIN is
// sent first, and if that fails the connection is closed, so that nothing
// runs on it outside the transaction.
func (t *Tx) Conn() *pgx.Conn {
	if err := t.flush(context.Background()); err != nil {
		_ = t.p.C.Close(context.Background())
	}
	return t.p.C
}

// beginRows are the rows of a query that went out with BEGIN: the batch
// ends when the rows do.
type beginRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
}

func (r *beginRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *beginRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		_ = r.br.Close()
	}
}

// beginRow is the row of a QueryRow that went out with BEGIN.
type beginRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r *beginRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// errRows is the closed Rows of a failed query, as pgx returns one.
type errRows struct{ err error }

func (errRows) Close()                                       {}
func (r errRows) Err() error                                 { return r.err }
func (errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (errRows) Next() bool                                   { return false }
func (r errRows) Scan(...any) error                          { return r.err }
func (r errRows) Values() ([]any, error)                     { return nil, r.err }
func (errRows) RawValues() [][]byte                          { return nil }
func (errRows) Conn() *pgx.Conn                              { return nil }
func (errRows) TypeMap() *pgtype.Map                         { return nil }

// savepointTx is a pseudo nested transaction, as pgx makes them.
type savepointTx struct {
	parent *Tx
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
		return errRows{pgx.ErrTxClosed}, pgx.ErrTxClosed
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
