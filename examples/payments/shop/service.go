package shop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"

	payapi "github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/examples/payments/shop/api"
	"github.com/idemgen/idemgen/runtime/idemclient"
)

// Service implements api.Server.
type Service struct {
	payments *payapi.Client
	log      *slog.Logger
}

var _ api.Server = (*Service)(nil)

// New returns the shop, paying through payments (the payments service's
// generated client). A nil log discards.
func New(payments *payapi.Client, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{payments: payments, log: log}
}

// CreateOrder writes the order, pays for it at the payments service and
// marks it paid, all in tx: the order and the request's idempotency record
// commit together, or neither does.
//
// The payment call is made inside that transaction, in atomic mode, and is
// still made once per order: the call passes no key of its own, so the
// generated client, given this handler's ctx, sends the key derived from
// this request and the call site "createPayment". Whatever cuts an attempt
// short after the payments service committed — this process killed, the
// transaction rolled back, the client gone, the response lost — the retry
// asks again under the same key and gets the same payment back.
//
// That holds because the payment request is the same on every attempt: it
// is built from the incoming request alone. The order id is new on every
// attempt (the one that commits is kept), so it must not go into the
// payment; the reference does.
func (s *Service) CreateOrder(ctx context.Context, tx pgx.Tx, req api.CreateOrderRequest) (api.CreateOrderResponse, error) {
	o := req.Body
	id := newID("ord_")
	var inserted bool
	err := tx.QueryRow(ctx, `INSERT INTO orders (id, reference, amount, currency, status) VALUES ($1, $2, $3, $4, 'pending')
		ON CONFLICT (reference) DO NOTHING RETURNING true`, id, o.Reference, o.Amount, o.Currency).Scan(&inserted)
	if errors.Is(err, pgx.ErrNoRows) {
		return api.CreateOrder422Response{Body: api.Error{Code: "reference_taken", Message: fmt.Sprintf("reference %q was ordered already", o.Reference)}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("insert order: %w", err)
	}

	res, err := s.payments.CreatePayment(ctx, payapi.CreatePaymentRequest{Body: payapi.NewPayment{
		Amount: o.Amount, Currency: o.Currency, Metadata: &payapi.Metadata{OrderID: &o.Reference},
	}})
	if err != nil {
		if idemclient.IsRetryable(err) {
			// Nothing of this attempt is kept: the client retries with the
			// same key, which repeats this call under the same derived key.
			s.log.WarnContext(ctx, "payments unavailable", "err", err)
			return unavailable("payments_unavailable", "the payments service is unavailable; retry with the same Idempotency-Key"), nil
		}
		// A conflict (the payment request changed between attempts) or
		// another refusal: a bug, not a condition to retry.
		return nil, fmt.Errorf("pay order %s: %w", o.Reference, err)
	}
	var pay payapi.Payment
	switch r := res.Response.(type) {
	case payapi.CreatePayment201Response:
		pay = r.Body
	case payapi.CreatePayment502Response:
		return unavailable("gateway_unavailable", "the payment gateway is unavailable; retry with the same Idempotency-Key"), nil
	default:
		return nil, fmt.Errorf("pay order %s: payments answered %d", o.Reference, res.Status)
	}
	if _, err := tx.Exec(ctx, `UPDATE orders SET status = 'paid', payment_id = $2, charge_id = $3 WHERE id = $1`, id, pay.ID, pay.ChargeID); err != nil {
		return nil, fmt.Errorf("mark order paid: %w", err)
	}
	return api.CreateOrder201Response{Body: api.Order{
		ID: id, Reference: o.Reference, Amount: o.Amount, Currency: o.Currency, PaymentID: pay.ID, ChargeID: pay.ChargeID,
	}}, nil
}

func unavailable(code, detail string) api.CreateOrder502Response {
	return api.CreateOrder502Response{Body: api.Problem{Type: "about:blank", Title: "Bad Gateway", Status: 502, Code: code, Detail: &detail}}
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
