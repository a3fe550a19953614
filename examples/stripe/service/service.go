// Package service implements the Stripe example's API (package api,
// generated from ../openapi.yaml): customers, payment intents and refunds
// kept in PostgreSQL, behind Stripe's API keys. Every refusal the generated
// server makes on its own is in Stripe's error shape (x-idempotent profile
// stripe); the service's own refusals (an unknown customer, a payment
// intent that cannot be confirmed) use the same shape through the spec's
// declared default response.
package service

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/examples/stripe/api"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtype"
)

// Migrations are the service's tables; apply them with schema.MigrateFS.
//
//go:embed migrations/*.up.sql
var Migrations embed.FS

// Account is the principal of an API key: the account whose objects the
// request reads and writes, and the tenant of its idempotency keys.
type Account string

// Service implements api.Server and api.Security.
type Service struct {
	pool *pgxpool.Pool
	keys map[string]Account
	// BeforeCommit, when set, is called by PostCustomers after it wrote the
	// customer, inside its transaction: tests hold a request in flight
	// with it.
	BeforeCommit func(ctx context.Context)
}

var (
	_ api.Server   = (*Service)(nil)
	_ api.Security = (*Service)(nil)
)

// New returns the service over pool; keys maps each secret API key to its
// account.
func New(pool *pgxpool.Pool, keys map[string]Account) *Service {
	return &Service{pool: pool, keys: keys}
}

// Handler is the service's HTTP handler: the generated routes over an
// idempotency engine whose records are scoped by account.
func Handler(svc *Service, pool *pgxpool.Pool, opts ...api.Option) (http.Handler, error) {
	engine, err := idem.New(pool, idem.Config{
		Operations: api.IdempotentOperations,
		Scope:      idem.PrincipalScope(func(a Account) string { return string(a) }),
	})
	if err != nil {
		return nil, err
	}
	return api.NewHandler(svc, engine, append([]api.Option{api.WithSecurity(svc)}, opts...)...), nil
}

// BearerAuth accepts the secret keys stripe-go sends (Authorization: Bearer sk_...).
func (s *Service) BearerAuth(_ context.Context, token string, _ []string) (api.Principal, error) {
	if a, ok := s.keys[token]; ok {
		return a, nil
	}
	return nil, errors.New("no such API key")
}

// BasicAuth accepts a secret key as the user name (curl -u sk_...:).
func (s *Service) BasicAuth(ctx context.Context, username, _ string, scopes []string) (api.Principal, error) {
	return s.BearerAuth(ctx, username, scopes)
}

func account(ctx context.Context) Account {
	a, _ := idem.PrincipalAs[Account](ctx)
	return a
}

// stripeError is a refusal of the service's own in the declared default
// response.
func stripeError(status int, typ api.APIErrorsType, code, param, message string) api.Error {
	e := api.Error{Error: api.APIErrors{Type: typ, Code: &code, Message: &message}}
	if param != "" {
		e.Error.Param = &param
	}
	return e
}

// PostCustomers creates a customer.
func (s *Service) PostCustomers(ctx context.Context, tx pgx.Tx, req api.PostCustomersRequest) (api.PostCustomersResponse, error) {
	b := req.Body
	meta, _ := b.Metadata.Value()
	c := api.Customer{ID: newID("cus"), Object: api.CustomerObjectCustomer, Created: time.Now().Unix(), Metadata: orEmpty(meta)}
	c.Email, c.Name, c.Description, c.Phone = nullable(b.Email), nullable(b.Name), nullable(b.Description), nullable(b.Phone)
	if _, err := tx.Exec(ctx, `INSERT INTO customers (id, account, email, name, description, phone, metadata, created)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, c.ID, account(ctx), b.Email, b.Name, b.Description, b.Phone, jsonOf(c.Metadata), c.Created); err != nil {
		return nil, err
	}
	if s.BeforeCommit != nil {
		s.BeforeCommit(ctx)
	}
	return api.PostCustomers200Response{Body: c}, nil
}

// GetCustomersCustomer retrieves a customer of the caller's account.
func (s *Service) GetCustomersCustomer(ctx context.Context, req api.GetCustomersCustomerRequest) (api.GetCustomersCustomerResponse, error) {
	c := api.Customer{ID: req.Customer, Object: api.CustomerObjectCustomer}
	var email, name, description, phone *string
	var meta []byte
	err := s.pool.QueryRow(ctx, `SELECT email, name, description, phone, metadata, created FROM customers WHERE id = $1 AND account = $2`,
		req.Customer, account(ctx)).Scan(&email, &name, &description, &phone, &meta, &c.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return api.GetCustomersCustomerDefaultResponse{Status: http.StatusNotFound, Body: stripeError(404, api.APIErrorsTypeInvalidRequestError,
			"resource_missing", "customer", fmt.Sprintf("No such customer: '%s'", req.Customer))}, nil
	}
	if err != nil {
		return nil, err
	}
	c.Email, c.Name, c.Description, c.Phone = nullable(email), nullable(name), nullable(description), nullable(phone)
	if err := json.Unmarshal(meta, &c.Metadata); err != nil {
		return nil, err
	}
	return api.GetCustomersCustomer200Response{Body: c}, nil
}

// PostPaymentIntents creates a payment intent, confirmed at once when
// confirm is true and it has a payment method.
func (s *Service) PostPaymentIntents(ctx context.Context, tx pgx.Tx, req api.PostPaymentIntentsRequest) (api.PostPaymentIntentsResponse, error) {
	b := req.Body
	refuse := func(code, param, msg string) (api.PostPaymentIntentsResponse, error) {
		return api.PostPaymentIntentsDefaultResponse{Status: http.StatusBadRequest,
			Body: stripeError(400, api.APIErrorsTypeInvalidRequestError, code, param, msg)}, nil
	}
	if b.Amount < 1 {
		return refuse("parameter_invalid_integer", "amount", "This value must be greater than or equal to 1.")
	}
	if b.Customer != nil {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM customers WHERE id = $1 AND account = $2`, *b.Customer, account(ctx)).Scan(&n); err != nil {
			return nil, err
		}
		if n == 0 {
			return refuse("resource_missing", "customer", fmt.Sprintf("No such customer: '%s'", *b.Customer))
		}
	}
	pi := api.PaymentIntent{ID: newID("pi"), Object: api.PaymentIntentObjectPaymentIntent, Amount: b.Amount, Currency: b.Currency,
		CaptureMethod: api.CaptureMethodAutomatic, ConfirmationMethod: api.PaymentIntentConfirmationMethodAutomatic,
		Created: time.Now().Unix(), PaymentMethodTypes: []string{"card"}, Metadata: orEmpty(b.Metadata),
		Status: api.PaymentIntentStatusRequiresPaymentMethod}
	if b.CaptureMethod != nil {
		pi.CaptureMethod = *b.CaptureMethod
	}
	pi.Customer, pi.Description, pi.PaymentMethod, pi.ReceiptEmail = nullable(b.Customer), nullable(b.Description), nullable(b.PaymentMethod), nullable(b.ReceiptEmail)
	if b.PaymentMethod != nil {
		pi.Status = api.PaymentIntentStatusRequiresConfirmation
		if b.Confirm != nil && *b.Confirm {
			confirm(&pi)
		}
	}
	received := deref(pi.AmountReceived)
	if _, err := tx.Exec(ctx, `INSERT INTO payment_intents (id, account, amount, currency, customer, description, payment_method,
		receipt_email, capture_method, status, amount_received, metadata, created) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		pi.ID, account(ctx), pi.Amount, pi.Currency, b.Customer, b.Description, b.PaymentMethod, b.ReceiptEmail,
		pi.CaptureMethod, pi.Status, received, jsonOf(pi.Metadata), pi.Created); err != nil {
		return nil, err
	}
	return api.PostPaymentIntents200Response{Body: pi}, nil
}

// confirm moves a payment intent with a payment method on: its payment
// succeeds (this example has no card network).
func confirm(pi *api.PaymentIntent) {
	if pi.CaptureMethod == api.CaptureMethodManual {
		pi.Status = api.PaymentIntentStatusRequiresCapture
		return
	}
	pi.Status = api.PaymentIntentStatusSucceeded
	pi.AmountReceived = &pi.Amount
}

// PostPaymentIntentsIntentConfirm confirms a payment intent.
func (s *Service) PostPaymentIntentsIntentConfirm(ctx context.Context, tx pgx.Tx, req api.PostPaymentIntentsIntentConfirmRequest) (api.PostPaymentIntentsIntentConfirmResponse, error) {
	refuse := func(status int, code, param, msg string) (api.PostPaymentIntentsIntentConfirmResponse, error) {
		return api.PostPaymentIntentsIntentConfirmDefaultResponse{Status: status,
			Body: stripeError(status, api.APIErrorsTypeInvalidRequestError, code, param, msg)}, nil
	}
	pi, err := loadPaymentIntent(ctx, tx, req.Intent, account(ctx))
	if errors.Is(err, pgx.ErrNoRows) {
		return refuse(http.StatusNotFound, "resource_missing", "intent", fmt.Sprintf("No such payment_intent: '%s'", req.Intent))
	}
	if err != nil {
		return nil, err
	}
	if req.Body.PaymentMethod != nil {
		pi.PaymentMethod = idemtype.NewNullable(*req.Body.PaymentMethod)
	}
	if req.Body.ReceiptEmail != nil {
		pi.ReceiptEmail = idemtype.NewNullable(*req.Body.ReceiptEmail)
	}
	switch _, ok := pi.PaymentMethod.Value(); {
	case pi.Status != api.PaymentIntentStatusRequiresPaymentMethod && pi.Status != api.PaymentIntentStatusRequiresConfirmation:
		return refuse(http.StatusBadRequest, "payment_intent_unexpected_state", "",
			fmt.Sprintf("This PaymentIntent's status is %s and it cannot be confirmed.", pi.Status))
	case !ok:
		return refuse(http.StatusBadRequest, "payment_intent_unexpected_state", "payment_method",
			"You cannot confirm this PaymentIntent because it's missing a payment method.")
	}
	confirm(&pi)
	pm, _ := pi.PaymentMethod.Value()
	email, _ := pi.ReceiptEmail.Value()
	received := deref(pi.AmountReceived)
	if _, err := tx.Exec(ctx, `UPDATE payment_intents SET status = $2, payment_method = $3, receipt_email = NULLIF($4, ''), amount_received = $5
		WHERE id = $1`, pi.ID, pi.Status, pm, email, received); err != nil {
		return nil, err
	}
	return api.PostPaymentIntentsIntentConfirm200Response{Body: pi}, nil
}

// GetPaymentIntentsIntent is not implemented: the generated Unimplemented
// answers 501 in Stripe's shape.
func (s *Service) GetPaymentIntentsIntent(ctx context.Context, req api.GetPaymentIntentsIntentRequest) (api.GetPaymentIntentsIntentResponse, error) {
	return api.Unimplemented{}.GetPaymentIntentsIntent(ctx, req)
}

// PostRefunds refunds a succeeded payment intent, in full unless amount
// says how much.
func (s *Service) PostRefunds(ctx context.Context, tx pgx.Tx, req api.PostRefundsRequest) (api.PostRefundsResponse, error) {
	b := req.Body
	refuse := func(code, param, msg string) (api.PostRefundsResponse, error) {
		return api.PostRefundsDefaultResponse{Status: http.StatusBadRequest,
			Body: stripeError(400, api.APIErrorsTypeInvalidRequestError, code, param, msg)}, nil
	}
	if b.PaymentIntent == nil {
		return refuse("parameter_missing", "payment_intent", "One of the following params should be provided for this request: payment_intent or charge.")
	}
	pi, err := loadPaymentIntent(ctx, tx, *b.PaymentIntent, account(ctx))
	if errors.Is(err, pgx.ErrNoRows) {
		return refuse("resource_missing", "payment_intent", fmt.Sprintf("No such payment_intent: '%s'", *b.PaymentIntent))
	}
	if err != nil {
		return nil, err
	}
	var refunded int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM refunds WHERE payment_intent = $1`, pi.ID).Scan(&refunded); err != nil {
		return nil, err
	}
	received := deref(pi.AmountReceived)
	amount := received - refunded
	if b.Amount != nil {
		amount = *b.Amount
	}
	switch {
	case pi.Status != api.PaymentIntentStatusSucceeded:
		return refuse("payment_intent_unexpected_state", "payment_intent", "This PaymentIntent does not have a successful charge to refund.")
	case amount <= 0 || amount > received-refunded:
		return refuse("amount_too_large", "amount", fmt.Sprintf("Refund amount (%d) is greater than unrefunded amount on charge (%d)", amount, received-refunded))
	}
	meta, _ := b.Metadata.Value()
	rf := api.Refund{ID: newID("re"), Object: api.RefundObjectRefund, Amount: amount, Currency: pi.Currency, Created: time.Now().Unix(),
		PaymentIntent: idemtype.NewNullable(pi.ID), Status: idemtype.NewNullable("succeeded"), Metadata: idemtype.NewNullable(orEmpty(meta))}
	if b.Reason != nil {
		rf.Reason = idemtype.NewNullable(api.RefundReason(*b.Reason))
	}
	reason, _ := rf.Reason.Value()
	if _, err := tx.Exec(ctx, `INSERT INTO refunds (id, account, payment_intent, amount, currency, reason, metadata, created)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7, $8)`, rf.ID, account(ctx), pi.ID, amount, pi.Currency, string(reason), jsonOf(orEmpty(meta)), rf.Created); err != nil {
		return nil, err
	}
	return api.PostRefunds200Response{Body: rf}, nil
}

// loadPaymentIntent reads a payment intent of acct for update.
func loadPaymentIntent(ctx context.Context, tx pgx.Tx, id string, acct Account) (api.PaymentIntent, error) {
	pi := api.PaymentIntent{ID: id, Object: api.PaymentIntentObjectPaymentIntent, PaymentMethodTypes: []string{"card"},
		ConfirmationMethod: api.PaymentIntentConfirmationMethodAutomatic}
	var customer, description, pm, email *string
	var received int64
	var meta []byte
	err := tx.QueryRow(ctx, `SELECT amount, currency, customer, description, payment_method, receipt_email, capture_method, status,
		amount_received, metadata, created FROM payment_intents WHERE id = $1 AND account = $2 FOR UPDATE`, id, acct).Scan(
		&pi.Amount, &pi.Currency, &customer, &description, &pm, &email, &pi.CaptureMethod, &pi.Status, &received, &meta, &pi.Created)
	if err != nil {
		return pi, err
	}
	pi.Customer, pi.Description, pi.PaymentMethod, pi.ReceiptEmail = nullable(customer), nullable(description), nullable(pm), nullable(email)
	if received > 0 {
		pi.AmountReceived = &received
	}
	return pi, json.Unmarshal(meta, &pi.Metadata)
}

// newID is a Stripe-style object id: prefix, underscore, 24 random
// alphanumerics.
func newID(prefix string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 24)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			panic(err) // crypto/rand does not fail
		}
		b[i] = alphabet[n.Int64()]
	}
	return prefix + "_" + string(b)
}

func nullable(s *string) idemtype.Nullable[string] {
	if s == nil {
		return idemtype.Null[string]()
	}
	return idemtype.NewNullable(*s)
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func jsonOf(m map[string]string) []byte {
	b, _ := json.Marshal(orEmpty(m))
	return b
}

func deref(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}
