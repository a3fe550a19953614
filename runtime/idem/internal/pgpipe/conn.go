package pgpipe

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BeginRC is what pgx sends for TxOptions{IsoLevel: pgx.ReadCommitted}.
const BeginRC = "begin isolation level read committed"

// Fixed statements of the batches (package-level: no allocation per request).
var (
	beginBefore    = []string{BeginRC}
	CommitAfter    = []string{"commit"}
	RollbackBefore = []string{"rollback"}
	AlonePre       = []string{"begin"}
	AlonePost      = []string{"commit", BeginRC}
)

// poolAcquirer is implemented by *pgxpool.Pool.
type poolAcquirer interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// CanPipeline reports whether db hands out dedicated connections: a
// *pgxpool.Pool or a *pgx.Conn.
func CanPipeline(db any) bool {
	switch db.(type) {
	case poolAcquirer, *pgx.Conn:
		return true
	}
	return false
}

// Conn is a connection held for one request.
type Conn struct {
	C    *pgx.Conn
	pool *pgxpool.Conn // nil when the DB is a *pgx.Conn
	done bool
}

// Acquire returns a dedicated connection of db, which CanPipeline.
func Acquire(ctx context.Context, db any) (*Conn, error) {
	if db, ok := db.(poolAcquirer); ok {
		c, err := db.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return &Conn{C: c.Conn(), pool: c}, nil
	}
	return &Conn{C: db.(*pgx.Conn)}, nil
}

// Release returns the connection, rolling back a transaction left open
// (pgxpool would otherwise close the connection). Safe to call twice.
func (p *Conn) Release() {
	if p == nil || p.done {
		return
	}
	p.done = true
	if !p.C.IsClosed() && p.C.PgConn().TxStatus() != 'I' {
		if _, err := p.C.Exec(context.Background(), "rollback"); err != nil {
			_ = p.C.Close(context.Background())
		}
	}
	if p.pool != nil {
		p.pool.Release()
	}
}

// Done reports whether the connection was given back.
func (p *Conn) Done() bool { return p.done }
