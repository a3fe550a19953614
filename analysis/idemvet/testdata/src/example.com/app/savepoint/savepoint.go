package savepoint

import (
	"context"
	"errors"
	"log"

	"example.com/app/api"
	"example.com/app/db"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A handled error answered without one: 409 after a unique violation.

type conflict struct{}

func (conflict) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	_, err := tx.Exec(ctx, "INSERT INTO bookings (room) VALUES ($1)", req.Room) // want `CreateBooking: the error of tx.Exec is handled \(savepoint.go:21\) and returns without an error at savepoint.go:22, but PostgreSQL has aborted the transaction \(SQLSTATE 25P02\): storing createBooking's idempotency record fails, a 500; run the statement in a savepoint`
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return api.CreateBooking409Response{}, nil
	}
	if err != nil {
		return nil, err
	}
	return api.CreateBooking201Response{}, nil
}

// Any error answered without one, in a lease operation too; a switch on
// the code.

func (conflict) ChargeCard(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	var id int64
	if err := tx.QueryRow(ctx, "INSERT INTO charges DEFAULT VALUES RETURNING id").Scan(&id); err != nil { // want `ChargeCard: the error of tx.QueryRow is handled`
		return api.CreateBooking409Response{}, nil
	}
	_, err := db.New(tx).InsertBooking(ctx, req.Room) // want `the error of db.New\(tx\).InsertBooking is handled`
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505", "23P01":
			return api.CreateBooking409Response{}, nil
		}
		return nil, err
	}
	return api.CreateBooking201Response{ID: id}, nil
}

// A helper's sentinel, a row scanned later, and an error logged and
// passed over.

var errTaken = errors.New("room taken")

type helper struct{}

func insertBooking(ctx context.Context, tx pgx.Tx, room string) error {
	_, err := tx.Exec(ctx, "INSERT INTO bookings (room) VALUES ($1)", room)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return errTaken
	}
	return err
}

func (helper) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	err := insertBooking(ctx, tx, req.Room) // want `CreateBooking: the error of insertBooking \(which runs tx.Exec at savepoint.go:58\) is handled`
	if errors.Is(err, errTaken) {
		return api.CreateBooking409Response{}, nil
	}
	if err != nil {
		return nil, err
	}
	row := tx.QueryRow(ctx, "SELECT id FROM bookings WHERE room = $1", req.Room) // want `the error of tx.QueryRow is handled`
	var id int64
	if err := row.Scan(&id); err != nil {
		return api.CreateBooking409Response{}, nil
	}
	if _, err := tx.Exec(ctx, "UPDATE rooms SET booked = true"); err != nil { // want `the error of tx.Exec is handled \(savepoint.go:\d+\) and carries on at savepoint.go:82`
		log.Print(err)
	}
	id++
	return api.CreateBooking201Response{ID: id}, nil
}

// A savepoint that is never rolled back does not help.
func (helper) ChargeCard(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := sp.Exec(ctx, "INSERT INTO charges DEFAULT VALUES"); err != nil { // want `the error of sp.Exec is handled`
		return api.CreateBooking409Response{}, nil
	}
	return api.CreateBooking201Response{}, sp.Commit(ctx)
}

// What is fine: a savepoint rolled back, pgx.BeginFunc, SAVEPOINT
// statements, no rows, an error returned, a statement outside tx.

type fine struct{}

func (fine) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	_, err = sp.Exec(ctx, "INSERT INTO bookings (room) VALUES ($1)", req.Room)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		if err := sp.Rollback(ctx); err != nil {
			return nil, err
		}
		return api.CreateBooking409Response{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := sp.Commit(ctx); err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		_, err := sp.Exec(ctx, "INSERT INTO audit DEFAULT VALUES")
		return err
	})
	if errors.As(err, &pgErr) {
		return api.CreateBooking409Response{}, nil
	}
	var id int64
	err = tx.QueryRow(ctx, "SELECT id FROM bookings WHERE room = $1", req.Room).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return api.CreateBooking409Response{}, nil
	}
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return api.CreateBooking409Response{}, nil
		}
		return nil, err
	}
	return api.CreateBooking201Response{ID: id}, nil
}

func (fine) ChargeCard(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	if _, err := tx.Exec(ctx, "SAVEPOINT charge"); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO charges DEFAULT VALUES"); err != nil {
		if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT charge"); err != nil {
			return nil, err
		}
		return api.CreateBooking409Response{}, nil
	}
	return api.CreateBooking201Response{}, nil
}

// GetBooking has no tx.
func (fine) GetBooking(ctx context.Context, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	return nil, nil
}
