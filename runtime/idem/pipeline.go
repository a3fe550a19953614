package idem

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// Pipelining. When the DB can hand out a dedicated connection (a
// *pgxpool.Pool, or a *pgx.Conn), the engine runs a request on one
// connection and sends the statements it owns in pgx batches (one round
// trip each): BEGIN with the claim, and the outcome with COMMIT. Any other
// DB gets one statement per round trip (plainStore), with the same semantics.

// beginRC is what pgx sends for TxOptions{IsoLevel: pgx.ReadCommitted}.
const beginRC = "begin isolation level read committed"

func setLockTimeout(d time.Duration) string {
	return "SET LOCAL lock_timeout = " + strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

const resetLockTimeout = "SET LOCAL lock_timeout TO DEFAULT"

// Fixed statements of the batches (package-level: no allocation per request).
var (
	resetAfter     = []string{resetLockTimeout}
	commitAfter    = []string{"commit"}
	rollbackAfter  = []string{"rollback"}
	leaseClaimPre  = []string{"begin"}
	leaseClaimPost = []string{"commit", beginRC}
)

// claimPre is what precedes an atomic claim in its batch.
func (e *Engine) claimPre(timeout time.Duration) []string {
	if timeout == e.cfg.LockTimeout {
		return e.atomicPre
	}
	return []string{beginRC, setLockTimeout(timeout)}
}

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

// pipelinedStore runs a request on one connection, acquired when first
// needed and again after release.
type pipelinedStore struct {
	e  *Engine
	pc *pconn
	// leaseBatched: the first lease claim went out in a batch that also
	// began the business transaction; begun: that transaction is open.
	leaseBatched, begun bool
}

func (s *pipelinedStore) open(ctx context.Context) error {
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

func (s *pipelinedStore) release() {
	s.pc.release()
	s.begun = false
}

func (s *pipelinedStore) read(ctx context.Context, k Key) (store.GetRecordRow, bool, error) {
	if err := s.open(ctx); err != nil {
		return store.GetRecordRow{}, false, err
	}
	return readRecord(ctx, store.New(s.pc.c), k)
}

func (s *pipelinedStore) claimAtomic(ctx context.Context, p store.ClaimParams, pre []string) (pgx.Tx, store.ClaimRow, error) {
	if err := s.open(ctx); err != nil {
		return nil, store.ClaimRow{}, err
	}
	// One round trip: BEGIN, the bound, the claim, the reset. The
	// lock_timeout covers the claim alone, never the handler.
	b := &batchDB{c: s.pc.c, pre: pre, post: resetAfter}
	c, err := store.New(b).Claim(ctx, p)
	return &connTx{p: s.pc}, c, err
}

func (s *pipelinedStore) readAbort(ctx context.Context, tx pgx.Tx, k Key) (store.GetRecordRow, error) {
	ct := tx.(*connTx)
	// One round trip: the read and ROLLBACK (a duplicate that waited on the
	// first request is answered sooner).
	rec, err := store.New(&batchDB{c: ct.p.c, post: rollbackAfter}).GetRecord(ctx, recordParams(k))
	ct.closed = true
	ct.p.release() // rolls back if the batch stopped before its ROLLBACK
	return rec, err
}

func (s *pipelinedStore) claimLease(ctx context.Context, p store.ClaimParams) (store.ClaimRow, error) {
	if err := s.open(ctx); err != nil {
		return store.ClaimRow{}, err
	}
	if s.leaseBatched {
		return store.New(s.pc.c).Claim(ctx, p)
	}
	// One round trip: the claim in a transaction of its own, committed,
	// then BEGIN of the business transaction.
	s.leaseBatched = true
	b := &batchDB{c: s.pc.c, pre: leaseClaimPre, post: leaseClaimPost}
	c, err := store.New(b).Claim(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		// Held: the business transaction began for nothing.
		if _, rerr := s.pc.c.Exec(ctx, "rollback"); rerr != nil {
			return c, fmt.Errorf("idem: rollback: %w", rerr)
		}
	}
	s.begun = err == nil
	return c, err
}

func (s *pipelinedStore) begin(ctx context.Context) (pgx.Tx, error) {
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	if !s.begun {
		if _, err := s.pc.c.Exec(ctx, beginRC); err != nil {
			return nil, err
		}
	}
	s.begun = false
	return &connTx{p: s.pc}, nil
}

func (s *pipelinedStore) complete(ctx context.Context, tx pgx.Tx, p store.CompleteParams) (bool, error) {
	ct := tx.(*connTx)
	// One round trip: the outcome and COMMIT, which PostgreSQL skips when
	// the outcome fails or is fenced out.
	b := &batchDB{c: ct.p.c, post: commitAfter}
	_, err := store.New(b).CompleteOrAbort(ctx, store.CompleteOrAbortParams(p))
	if isFencedOut(err) {
		return false, nil
	}
	return true, ct.finish(err, b)
}

// isFencedOut reports CompleteOrAbort's error for a claim no longer held.
func isFencedOut(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012"
}

func isLockTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
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
