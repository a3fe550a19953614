// Package pgx is a stub of github.com/jackc/pgx/v5 for the analyzer's tests.
package pgx

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

var ErrNoRows = errors.New("no rows in result set")

type Row interface{ Scan(dest ...any) error }

type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

type Tx interface {
	Begin(ctx context.Context) (Tx, error)
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
	Conn() *Conn
}

type Conn struct{}

func (c *Conn) Begin(ctx context.Context) (Tx, error) { return nil, nil }
func (c *Conn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, nil
}
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (Rows, error) { return nil, nil }
func (c *Conn) QueryRow(ctx context.Context, sql string, args ...any) Row        { return nil }

func BeginFunc(ctx context.Context, db interface {
	Begin(ctx context.Context) (Tx, error)
}, fn func(Tx) error) error {
	return nil
}
