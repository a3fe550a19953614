// Package stripe is a stub of github.com/stripe/stripe-go/v85.
package stripe

import "context"

type Params struct {
	Context        context.Context
	IdempotencyKey *string
}

func (p *Params) SetIdempotencyKey(val string) { p.IdempotencyKey = &val }

func String(v string) *string { return &v }

func Int64(v int64) *int64 { return &v }

type RefundCreateParams struct {
	Params        `form:"*"`
	Amount        *int64
	PaymentIntent *string
}

type RefundRetrieveParams struct {
	Params `form:"*"`
}

type Refund struct{ ID string }

type v1RefundService struct{}

func (c v1RefundService) Create(ctx context.Context, params *RefundCreateParams) (*Refund, error) {
	return nil, nil
}

func (c v1RefundService) Retrieve(ctx context.Context, id string, params *RefundRetrieveParams) (*Refund, error) {
	return nil, nil
}

type Client struct {
	V1Refunds *v1RefundService
}
