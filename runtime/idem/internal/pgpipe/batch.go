package pgpipe

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Batch is a store.DBTX (Exec, QueryRow) whose statements travel in one batch with fixed
// statements before and after them. A failing statement makes PostgreSQL
// skip the rest of the batch, so "commit" after a statement only runs when
// that statement succeeded.
type Batch struct {
	c interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	}
	pre, post  []string
	lastStatus string // command tag of the last post statement
}

// NewBatch returns a Batch sending each statement on c between pre and post.
func NewBatch(c interface {
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}, pre, post []string) *Batch {
	return &Batch{c: c, pre: pre, post: post}
}

func (b *Batch) send(ctx context.Context, sql string, args []any) pgx.BatchResults {
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

func (b *Batch) execAll(br pgx.BatchResults, n int) error {
	for i := 0; i < n; i++ {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		b.lastStatus = tag.String()
	}
	return nil
}

func (b *Batch) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
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

func (b *Batch) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return &batchRow{b: b, br: b.send(ctx, sql, args)}
}

func (b *Batch) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errors.New("idem: Batch does not run multi-row queries")
}

type batchRow struct {
	b  *Batch
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
