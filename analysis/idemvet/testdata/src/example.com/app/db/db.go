// Package db stands for sqlc's output.
package db

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

type DBTX interface {
	Exec(context.Context, string, ...interface{}) (pgconn.CommandTag, error)
	Query(context.Context, string, ...interface{}) (pgx.Rows, error)
	QueryRow(context.Context, string, ...interface{}) pgx.Row
}

func New(db DBTX) *Queries { return &Queries{db: db} }

type Queries struct{ db DBTX }

func (q *Queries) WithTx(tx pgx.Tx) *Queries { return &Queries{db: tx} }

func (q *Queries) InsertBooking(ctx context.Context, room string) (int64, error) {
	var id int64
	err := q.db.QueryRow(ctx, "INSERT INTO bookings (room) VALUES ($1) RETURNING id", room).Scan(&id)
	return id, err
}
