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

// maxQueued is the most statements a batch of the engine's holds: BEGIN, a
// statement, COMMIT and the business transaction's BEGIN (AlonePre,
// AlonePost).
const maxQueued = 4

// queued is a pgx.Batch with room for its statements and the Row of its
// one statement, allocated together: pgx.Batch.Queue allocates each
// statement and grows the batch's slice, five or six allocations for the
// two or three statements of each of a request's batches.
type queued struct {
	b   pgx.Batch
	ptr [maxQueued]*pgx.QueuedQuery
	q   [maxQueued]pgx.QueuedQuery
	row batchRow
}

// newQueued returns an empty batch.
func newQueued() *queued {
	bq := &queued{}
	bq.b.QueuedQueries = bq.ptr[:0]
	return bq
}

// queue adds sql with args to the batch, as pgx.Batch.Queue does.
func (bq *queued) queue(sql string, args []any) {
	i := len(bq.b.QueuedQueries)
	if i == maxQueued {
		bq.b.Queue(sql, args...)
		return
	}
	bq.q[i] = pgx.QueuedQuery{SQL: sql, Arguments: args}
	bq.b.QueuedQueries = append(bq.b.QueuedQueries, &bq.q[i])
}

func (b *Batch) send(ctx context.Context, sql string, args []any) (*queued, pgx.BatchResults) {
	bq := newQueued()
	for _, s := range b.pre {
		bq.queue(s, nil)
	}
	bq.queue(sql, args)
	for _, s := range b.post {
		bq.queue(s, nil)
	}
	return bq, b.c.SendBatch(ctx, &bq.b)
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
	_, br := b.send(ctx, sql, args)
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
	bq, br := b.send(ctx, sql, args)
	bq.row = batchRow{b: b, br: br}
	return &bq.row
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
