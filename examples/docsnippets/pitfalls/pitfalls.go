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
	"github.com/idemgen/idemgen/runtime/downstream"
	"github.com/idemgen/idemgen/runtime/idemclient"
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

// FixedCallOut sends the bank a key derived from the request: every
// attempt of the request sends the same one, and the bank answers a
// repeated capture with the one it made.
type FixedCallOut struct{ bank *http.Client }

func (s *FixedCallOut) CapturePayment(ctx context.Context, tx pgx.Tx, req api.CapturePaymentRequest) (api.CapturePaymentResponse, error) {
	key, err := downstream.Key(ctx, "bank.captures")
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://bank.example/captures",
		strings.NewReader(`{"payment":"`+req.PaymentID+`"}`))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	resp, err := s.bank.Do(r)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if _, err := tx.Exec(ctx, `UPDATE payments SET status = 'captured' WHERE id = $1`, req.PaymentID); err != nil {
		return nil, err
	}
	return api.CapturePayment200Response{}, nil
}

// WrongFreshKey passes a refund on to the acquirer, another payments
// service, through its generated client, under a key made for the call.
type WrongFreshKey struct{ acquirer *api.Client }

func (s *WrongFreshKey) CreateRefund(ctx context.Context, tx pgx.Tx, req api.CreateRefundRequest) (api.CreateRefundResponse, error) {
	fresh, err := idemclient.NewKey("uuid")
	if err != nil {
		return nil, err
	}
	res, err := s.acquirer.CreateRefund(ctx, api.CreateRefundRequest{PaymentID: req.PaymentID, Body: req.Body},
		idemclient.WithIdempotencyKey(fresh))
	if err != nil {
		return nil, err
	}
	return res.Response, nil
}

// FixedFreshKey leaves the key to the client: given the handler's ctx, it
// derives one from the request's.
type FixedFreshKey struct{ acquirer *api.Client }

func (s *FixedFreshKey) CreateRefund(ctx context.Context, tx pgx.Tx, req api.CreateRefundRequest) (api.CreateRefundResponse, error) {
	res, err := s.acquirer.CreateRefund(ctx, api.CreateRefundRequest{PaymentID: req.PaymentID, Body: req.Body})
	if err != nil {
		return nil, err
	}
	return res.Response, nil
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
