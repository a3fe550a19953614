package main

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/examples/minimal/api"
)

// Service implements the operations of openapi.yaml (api.Server).
type Service struct {
	db *pgxpool.Pool
}

var _ api.Server = (*Service)(nil)

// CreateBooking is idempotent: it runs in tx, the transaction that also
// stores the idempotency record, so the booking and the record commit
// together or not at all. An error is a 500: the transaction rolls back and
// a retry with the same key runs again.
func (s *Service) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	b := api.Booking{Room: req.Body.Room, Start: req.Body.Start, PartySize: req.Body.PartySize}
	err := tx.QueryRow(ctx,
		`INSERT INTO bookings (room, start_at, party_size) VALUES ($1, $2, $3) RETURNING id`,
		b.Room, b.Start, b.PartySize).Scan(&b.ID)
	if err != nil {
		return nil, err
	}
	return api.CreateBooking201Response{Body: b}, nil
}

// GetBooking is a GET: not idempotent by idemgen's rules (nothing to
// protect), so it gets no transaction and reads through the pool.
func (s *Service) GetBooking(ctx context.Context, req api.GetBookingRequest) (api.GetBookingResponse, error) {
	b := api.Booking{ID: req.BookingID}
	err := s.db.QueryRow(ctx,
		`SELECT room, start_at, party_size FROM bookings WHERE id = $1`,
		b.ID).Scan(&b.Room, &b.Start, &b.PartySize)
	if errors.Is(err, pgx.ErrNoRows) {
		return api.GetBooking404Response{}, nil
	}
	if err != nil {
		return nil, err
	}
	return api.GetBooking200Response{Body: b}, nil
}
