// Package pgxpool is a stub of github.com/jackc/pgx/v5/pgxpool.
package pgxpool

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

type Pool struct{}

func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) { return nil, nil }
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, nil
}
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) { return nil, nil }
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row        { return nil }
func (p *Pool) Acquire(ctx context.Context) (*Conn, error)                           { return nil, nil }
func (p *Pool) Close()                                                               {}

type Conn struct{}

func (c *Conn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, nil
}
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) { return nil, nil }
func (c *Conn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row        { return nil }
func (c *Conn) Release()                                                             {}
