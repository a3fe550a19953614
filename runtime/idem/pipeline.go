package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// Pipelining. When the DB can hand out a dedicated connection (a
// *pgxpool.Pool, or a *pgx.Conn), the engine runs a request on one
// connection and sends the statements it owns in pgx batches (one round
// trip each): BEGIN with the claim, and the outcome with COMMIT. Any other
// DB gets one statement per round trip (plainSession), with the same semantics.

// beginRC is what pgx sends for TxOptions{IsoLevel: pgx.ReadCommitted}.
const beginRC = "begin isolation level read committed"

// Fixed statements of the batches (package-level: no allocation per request).
var (
	beginBefore    = []string{beginRC}
	commitAfter    = []string{"commit"}
	rollbackBefore = []string{"rollback"}
	alonePre       = []string{"begin"}
	alonePost      = []string{"commit", beginRC}
)

// poolAcquirer is implemented by *pgxpool.Pool.
type poolAcquirer interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

func canPipeline(db DB) bool {
	switch db.(type) {
	case poolAcquirer, *pgx.Conn:
		return true
	}
	return false
}

// pconn is a connection held for one request.
type pconn struct {
	c    *pgx.Conn
	pool *pgxpool.Conn // nil when the DB is a *pgx.Conn
	done bool
}

// acquire returns a dedicated connection.
func (e *Engine) acquire(ctx context.Context) (*pconn, error) {
	if db, ok := e.db.(poolAcquirer); ok {
		c, err := db.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return &pconn{c: c.Conn(), pool: c}, nil
	}
	return &pconn{c: e.db.(*pgx.Conn)}, nil
}

// release returns the connection, rolling back a transaction left open
// (pgxpool would otherwise close the connection). Safe to call twice.
func (p *pconn) release() {
	if p == nil || p.done {
		return
	}
	p.done = true
	if !p.c.IsClosed() && p.c.PgConn().TxStatus() != 'I' {
		if _, err := p.c.Exec(context.Background(), "rollback"); err != nil {
			_ = p.c.Close(context.Background())
		}
	}
	if p.pool != nil {
		p.pool.Release()
	}
}

// pipelinedSession runs a request on one connection, acquired when first
// needed and again after release.
type pipelinedSession struct {
	e  *Engine
	pc *pconn
	// aloneBatched: the first commitAlone went out in a batch that also
	// began the business transaction; begun: that transaction is open.
	aloneBatched, begun bool
}

func (s *pipelinedSession) open(ctx context.Context) error {
	if s.pc != nil && !s.pc.done {
		return nil
	}
	pc, err := s.e.acquire(ctx)
	if err != nil {
		return fmt.Errorf("idem: acquire connection: %w", err)
	}
	s.pc, s.begun = pc, false
	return nil
}

func (s *pipelinedSession) release() {
	s.pc.release()
	s.begun = false
}

func (s *pipelinedSession) do(ctx context.Context, f func(q *store.Queries) error) error {
	if err := s.open(ctx); err != nil {
		return err
	}
	return f(store.New(s.pc.c))
}

// begin returns the business transaction. Unless a commitAlone batch began
// it already, BEGIN is not sent yet: it travels with the handler's first
// statement (see connTx).
func (s *pipelinedSession) begin(ctx context.Context) (pgx.Tx, error) {
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	tx := &connTx{p: s.pc, pending: !s.begun}
	s.begun = false
	return tx, nil
}

// commitWith sends f's statement and COMMIT in one round trip (BEGIN too,
// when the handler ran no statement); PostgreSQL skips the COMMIT when the
// statement fails.
func (s *pipelinedSession) commitWith(ctx context.Context, tx pgx.Tx, f func(q *store.Queries) error) error {
	ct := tx.(*connTx)
	b := &batchDB{c: ct.p.c, pre: ct.beginFirst(), post: commitAfter}
	if err := f(store.New(b)); err != nil {
		return err
	}
	return ct.finish(nil, b)
}

// rollbackThen sends ROLLBACK and f's statement in one round trip, then
// gives the connection back.
func (s *pipelinedSession) rollbackThen(ctx context.Context, tx pgx.Tx, f func(q *store.Queries) error) error {
	ct := tx.(*connTx)
	err := f(store.New(&batchDB{c: ct.p.c, pre: rollbackBefore}))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "25P02" {
		// pgx prepares a statement the connection has not run yet before
		// it sends the batch, and the failed transaction refuses that:
		// roll back first, then run f (once per connection).
		if _, err = ct.p.c.Exec(ctx, "rollback"); err == nil {
			err = f(store.New(ct.p.c))
		}
	}
	ct.closed = true
	ct.p.release()
	return err
}

// commitAlone sends, the first time, BEGIN, f's statement, COMMIT and the
// BEGIN of the business transaction in one round trip; later calls (a
// retried claim) send f's statement alone.
func (s *pipelinedSession) commitAlone(ctx context.Context, f func(q *store.Queries) error) error {
	if err := s.open(ctx); err != nil {
		return err
	}
	if s.aloneBatched {
		return f(store.New(s.pc.c))
	}
	s.aloneBatched = true
	err := f(store.New(&batchDB{c: s.pc.c, pre: alonePre, post: alonePost}))
	if err != nil && !s.pc.c.IsClosed() && s.pc.c.PgConn().TxStatus() != 'I' {
		// The business transaction began for nothing (the statement found
		// no row), or the batch failed half-way (release rolls back then).
		if _, rerr := s.pc.c.Exec(ctx, "rollback"); rerr != nil && errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("idem: rollback: %w", rerr)
		}
	}
	s.begun = err == nil
	return err
}

// batchDB is a store.DBTX whose statements travel in one batch with fixed
// statements before and after them. A failing statement makes PostgreSQL
// skip the rest of the batch, so "commit" after a statement only runs when
// that statement succeeded.
type batchDB struct {
	c interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	}
	pre, post  []string
	lastStatus string // command tag of the last post statement
}

func (b *batchDB) send(ctx context.Context, sql string, args []any) pgx.BatchResults {
	bt := &pgx.Batch{}
	for _, s := range b.pre {
		bt.Queue(s)
	}
	bt.Queue(sql, args...)
	for _, s := range b.post {
		bt.Queue(s)
	}
	return b.c.SendBatch(ctx, bt)
}

func (b *batchDB) execAll(br pgx.BatchResults, n int) error {
	for i := 0; i < n; i++ {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		b.lastStatus = tag.String()
	}
	return nil
}

func (b *batchDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br := b.send(ctx, sql, args)
	err := b.execAll(br, len(b.pre))
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if err == nil {
		err = b.execAll(br, len(b.post))
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (b *batchDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return &batchRow{b: b, br: b.send(ctx, sql, args)}
}

func (b *batchDB) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errors.New("idem: batchDB does not run multi-row queries")
}

type batchRow struct {
	b  *batchDB
	br pgx.BatchResults
}

func (r *batchRow) Scan(dest ...any) error {
	err := r.b.execAll(r.br, len(r.b.pre))
	if err == nil {
		err = r.br.QueryRow().Scan(dest...)
	}
	if err == nil {
		err = r.b.execAll(r.br, len(r.b.post))
	}
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}
