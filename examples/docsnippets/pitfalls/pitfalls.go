// Package pitfalls holds the handlers docs/pitfalls.md shows, each
// mistake beside its fix, written against the payments example's API
// (capturePayment and createRefund are atomic operations there).
// TestPitfalls runs idemgen vet over it: every handler of a type named
// Wrong... is reported, no other.
package pitfalls

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/examples/payments/api"
)

// WrongPool writes the refund through the pool.
type WrongPool struct{ db *pgxpool.Pool }

func (s *WrongPool) CreateRefund(ctx context.Context, tx pgx.Tx, req api.CreateRefundRequest) (api.CreateRefundResponse, error) {
	var id string
	err := s.db.QueryRow(ctx, `INSERT INTO refunds (payment_id, amount) VALUES ($1, $2) RETURNING id`,
		req.PaymentID, req.Body.Amount).Scan(&id)
	if err != nil {
		return nil, err
	}
	return api.CreateRefund201Response{Body: api.Refund{ID: id, PaymentID: req.PaymentID, Amount: req.Body.Amount}}, nil
}

// FixedPool writes it through tx.
type FixedPool struct{ db *pgxpool.Pool }

func (s *FixedPool) CreateRefund(ctx context.Context, tx pgx.Tx, req api.CreateRefundRequest) (api.CreateRefundResponse, error) {
	var id string
	err := tx.QueryRow(ctx, `INSERT INTO refunds (payment_id, amount) VALUES ($1, $2) RETURNING id`,
		req.PaymentID, req.Body.Amount).Scan(&id)
	if err != nil {
		return nil, err
	}
	return api.CreateRefund201Response{Body: api.Refund{ID: id, PaymentID: req.PaymentID, Amount: req.Body.Amount}}, nil
}

// WrongCallOut asks the bank to capture in an atomic operation.
type WrongCallOut struct{ bank *http.Client }

func (s *WrongCallOut) CapturePayment(ctx context.Context, tx pgx.Tx, req api.CapturePaymentRequest) (api.CapturePaymentResponse, error) {
	resp, err := s.bank.Post("https://bank.example/captures", "application/json",
		strings.NewReader(`{"payment":"`+req.PaymentID+`"}`))
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if _, err := tx.Exec(ctx, `UPDATE payments SET status = 'captured' WHERE id = $1`, req.PaymentID); err != nil {
		return nil, err
	}
	return api.CapturePayment200Response{}, nil
}

// WrongHandled answers a unique violation with 422 in the transaction the
// violation aborted.
type WrongHandled struct{}

func (WrongHandled) CreateRefund(ctx context.Context, tx pgx.Tx, req api.CreateRefundRequest) (api.CreateRefundResponse, error) {
	_, err := tx.Exec(ctx, `INSERT INTO refunds (payment_id, amount) VALUES ($1, $2)`, req.PaymentID, req.Body.Amount)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation: refunded already
		return api.CreateRefund422Response{Body: api.Error{Code: "refunded", Message: "the payment is refunded already"}}, nil
	}
	if err != nil {
		return nil, err
	}
	return api.CreateRefund201Response{}, nil
}

// FixedHandled runs the statement in a savepoint and rolls back to it.
type FixedHandled struct{}

func (FixedHandled) CreateRefund(ctx context.Context, tx pgx.Tx, req api.CreateRefundRequest) (api.CreateRefundResponse, error) {
	sp, err := tx.Begin(ctx) // SAVEPOINT
	if err != nil {
		return nil, err
	}
	_, err = sp.Exec(ctx, `INSERT INTO refunds (payment_id, amount) VALUES ($1, $2)`, req.PaymentID, req.Body.Amount)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		if err := sp.Rollback(ctx); err != nil { // ROLLBACK TO SAVEPOINT: tx is usable again
			return nil, err
		}
		return api.CreateRefund422Response{Body: api.Error{Code: "refunded", Message: "the payment is refunded already"}}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := sp.Commit(ctx); err != nil { // RELEASE SAVEPOINT
		return nil, err
	}
	return api.CreateRefund201Response{}, nil
}
