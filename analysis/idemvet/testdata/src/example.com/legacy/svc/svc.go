package svc

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/legacy/api"
)

type Service struct{ db *pgxpool.Pool }

var _ api.Server = (*Service)(nil)

// Without the line the mode is unknown: statements outside tx are still
// reported, outbound calls are not.
func (s *Service) CreateBooking(ctx context.Context, tx pgx.Tx, room string) (int64, error) {
	if _, err := http.Get("http://rooms/" + room); err != nil {
		return 0, err
	}
	_, err := s.db.Exec(ctx, "INSERT INTO bookings (room) VALUES ($1)", room) // want `CreateBooking: s.db.Exec runs outside tx, the transaction that also stores CreateBooking's idempotency record`
	return 0, err
}
