package pool

import (
	"context"
	"database/sql"

	"example.com/app/api"
	"example.com/app/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type deps struct {
	db  *pgxpool.Pool
	q   *db.Queries
	sql *sql.DB
}

// Statements through the pool in atomic and lease handlers.

type poolExec struct{ deps }

func (s *poolExec) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	if _, err := s.db.Exec(ctx, "INSERT INTO bookings (room) VALUES ($1)", req.Room); err != nil { // want `CreateBooking: s.db.Exec runs outside tx, the transaction that also stores createBooking's idempotency record: what it writes commits even when the request fails, and the retry writes it again; use tx`
		return nil, err
	}
	var id int64
	if err := s.db.QueryRow(ctx, "SELECT 1").Scan(&id); err != nil { // want `s.db.QueryRow runs outside tx`
		return nil, err
	}
	return api.CreateBooking201Response{ID: id}, nil
}

func (s *poolExec) ChargeCard(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	_, err := s.db.Exec(ctx, "INSERT INTO charges DEFAULT VALUES") // want `ChargeCard: s.db.Exec runs outside tx, the transaction that also stores chargeCard's idempotency record`
	return nil, err
}

// sqlc Queries on the pool: a field, New(pool), a variable.

type queries struct{ deps }

func (s *queries) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	id, err := s.q.InsertBooking(ctx, req.Room) // want `s.q.InsertBooking runs outside tx`
	if err != nil {
		return nil, err
	}
	id, err = db.New(s.db).InsertBooking(ctx, req.Room) // want `db.New\(s.db\).InsertBooking runs outside tx`
	if err != nil {
		return nil, err
	}
	q := db.New(s.db)
	id, err = q.InsertBooking(ctx, req.Room) // want `q.InsertBooking runs outside tx`
	if err != nil {
		return nil, err
	}
	return api.CreateBooking201Response{ID: id}, nil
}

// database/sql, a transaction of its own, a helper, BeginFunc on the pool.

type others struct{ deps }

func (s *others) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	if _, err := s.sql.ExecContext(ctx, "INSERT INTO audit DEFAULT VALUES"); err != nil { // want `s.sql.ExecContext runs outside tx`
		return nil, err
	}
	own, err := s.db.Begin(ctx) // want `s.db.Begin runs outside tx`
	if err != nil {
		return nil, err
	}
	if _, err := own.Exec(ctx, "INSERT INTO audit DEFAULT VALUES"); err != nil { // reported at Begin
		return nil, err
	}
	if err := s.save(ctx, req.Room); err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, s.db, func(t pgx.Tx) error { // want `CreateBooking: pgx.BeginFunc is given s.db, not tx`
		_, err := t.Exec(ctx, "SELECT 1")
		return err
	})
	return nil, err
}

func (s *others) save(ctx context.Context, room string) error {
	_, err := s.db.Exec(ctx, "INSERT INTO bookings (room) VALUES ($1)", room) // want `CreateBooking → s.save: s.db.Exec runs outside tx, .*; pass tx down and use it`
	return err
}

// What is fine: tx, what derives from it, and the pool where there is no tx.

type fine struct{ deps }

type repo struct{ db db.DBTX }

func (r repo) insert(ctx context.Context, room string) error {
	_, err := r.db.Exec(ctx, "INSERT INTO bookings (room) VALUES ($1)", room)
	return err
}

func newRepo(d db.DBTX) *repo { return &repo{db: d} }

func insert(ctx context.Context, d db.DBTX, room string) error {
	_, err := d.Exec(ctx, "INSERT INTO bookings (room) VALUES ($1)", room)
	return err
}

func (s *fine) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	if err := insert(ctx, tx, req.Room); err != nil {
		return nil, err
	}
	if _, err := db.New(tx).InsertBooking(ctx, req.Room); err != nil {
		return nil, err
	}
	if _, err := s.q.WithTx(tx).InsertBooking(ctx, req.Room); err != nil {
		return nil, err
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer sp.Rollback(ctx)
	if _, err := sp.Exec(ctx, "SELECT 1"); err != nil {
		return nil, err
	}
	if _, err := tx.Conn().Exec(ctx, "SELECT 1"); err != nil {
		return nil, err
	}
	r := repo{db: tx}
	if err := r.insert(ctx, req.Room); err != nil {
		return nil, err
	}
	if err := newRepo(tx).insert(ctx, req.Room); err != nil {
		return nil, err
	}
	return api.CreateBooking201Response{}, sp.Commit(ctx)
}

// GetBooking has no tx: the pool is what it has.
func (s *fine) GetBooking(ctx context.Context, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	if err := insert(ctx, s.db, req.Room); err != nil {
		return nil, err
	}
	var id int64
	err := s.db.QueryRow(ctx, "SELECT id FROM bookings WHERE room = $1", req.Room).Scan(&id)
	return api.CreateBooking201Response{ID: id}, err
}

// Migrate is no handler.
func (s *fine) Migrate(ctx context.Context) error {
	_, err := s.db.Exec(ctx, "CREATE TABLE bookings ()")
	return err
}
