package derived

import (
	"context"
	"crypto/rand"
	"net/http"
	"time"

	"example.com/app/api"
	payapi "example.com/pay/api"
	_ "example.com/pay/server"
	"github.com/google/uuid"
	"github.com/idemgen/idemgen/runtime/downstream"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemclient"
	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v85"
	"google.golang.org/grpc"
)

// payer has the shape of a generated client's method.
type payer interface {
	CreateRefund(ctx context.Context, req payapi.CreateRefundRequest, opts ...idemclient.CallOption) (*idemclient.Result[payapi.CreateRefundResponse], error)
}

type deps struct {
	pay    *payapi.Client
	payer  payer
	rt     *idemclient.Client
	client *http.Client
	stripe *stripe.Client
	cc     *grpc.ClientConn
	ctx    context.Context
}

var opCreateRefund = idemclient.Operation{ID: "createRefund", Method: "POST", Idempotent: true}

var opQuote = idemclient.Operation{ID: "quoteRefund", Method: "POST"}

func decode(*idemclient.Response) (string, error) { return "", nil }

func retry(ctx context.Context, f func(ctx context.Context) error) error { return f(ctx) }

// What is accepted in an atomic operation: calls whose key is derived
// from the request.

type good struct{ deps }

func (s *good) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	// The generated client, given the handler's ctx, derives the key.
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 1})
	tctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s.pay.CreateRefund(tctx, payapi.CreateRefundRequest{Amount: 2}, idemclient.WithKeySite("refund/2"))
	s.refund(context.WithValue(ctx, "k", "v"))
	ctx = context.WithoutCancel(ctx)
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 3})
	retry(ctx, func(ctx context.Context) error {
		_, err := s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 4})
		return err
	})
	s.payer.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 5})

	// An explicit key derived with downstream.Key or KeyAs.
	k, err := downstream.Key(ctx, "refund/6")
	if err != nil {
		return nil, err
	}
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 6}, idemclient.WithIdempotencyKey(k))
	s.pay.CreateRefund(context.Background(), payapi.CreateRefundRequest{IdempotencyKey: &k, Amount: 7})
	r8 := payapi.CreateRefundRequest{Amount: 8}
	k8, _ := s.siteKey(ctx, "refund/8")
	r8.IdempotencyKey = &k8
	s.pay.CreateRefund(ctx, r8)
	opts := []idemclient.CallOption{idemclient.WithIdempotencyKey(k)}
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 9}, opts...)

	// Reads and idempotent methods need no key.
	s.pay.GetRefund(context.Background(), "rf_1")

	// idemclient.Do itself.
	idemclient.Do(ctx, s.rt, &opCreateRefund, idemclient.NewRequest("/refunds"), decode)
	r10 := idemclient.NewRequest("/refunds")
	r10.Key = k
	idemclient.Do(context.Background(), s.rt, &opCreateRefund, r10, decode)

	// net/http with the key in a header.
	hr, err := http.NewRequestWithContext(ctx, "POST", "http://ledger/entries", nil)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Idempotency-Key", k)
	s.client.Do(hr)
	s.send(ctx, hr)

	// stripe-go with the key on the params.
	p1 := &stripe.RefundCreateParams{Amount: stripe.Int64(1)}
	p1.SetIdempotencyKey(k)
	s.stripe.V1Refunds.Create(ctx, p1)
	p2 := &stripe.RefundCreateParams{Amount: stripe.Int64(2)}
	p2.IdempotencyKey = stripe.String(k8)
	s.stripe.V1Refunds.Create(ctx, p2)
	s.stripe.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Params: stripe.Params{IdempotencyKey: stripe.String(k)}})
	s.stripe.V1Refunds.Retrieve(ctx, "re_1", nil)

	// gRPC with the key in the context it is given.
	gctx := context.WithValue(ctx, "idempotency-key", k)
	s.cc.Invoke(gctx, "/ledger.Post", nil, nil)
	return nil, nil
}

func (s *good) refund(ctx context.Context) {
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 3})
}

func (s *good) siteKey(ctx context.Context, site string) (string, error) {
	return downstream.KeyAs(ctx, site, downstream.UUID)
}

func (s *good) send(ctx context.Context, r *http.Request) {
	s.client.Do(r)
}

// What is reported: a context that is not the handler's, a key that is
// not derived, an operation without a key, a hand-written call without a
// derived key.

type bad struct{ deps }

func (s *bad) CreateBooking(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	s.pay.CreateRefund(context.Background(), payapi.CreateRefundRequest{Amount: 1}) // want `CreateBooking: s.pay.CreateRefund may act twice in createBooking, an atomic operation: it is given context.Background\(\), not the handler's ctx, so it sends a fresh idempotency key on every attempt of the handler; it gets a key derived from this request only with the handler's ctx \(or a context made from it; docs/downstream.md\)`
	bg := context.TODO()
	bg, cancel := context.WithCancel(bg)
	defer cancel()
	s.pay.CreateRefund(bg, payapi.CreateRefundRequest{Amount: 2})                     // want `s.pay.CreateRefund may act twice in createBooking, an atomic operation: it is given bg, not the handler's ctx`
	s.pay.CreateRefund(s.ctx, payapi.CreateRefundRequest{Amount: 3})                  // want `it is given s.ctx, not the handler's ctx`
	s.payer.CreateRefund(context.Background(), payapi.CreateRefundRequest{Amount: 4}) // want `s.payer.CreateRefund may act twice in createBooking, an atomic operation: it is given context.Background\(\)`
	payapi.Detached(s.pay, 5)                                                         // want `payapi.Detached \(createRefund\) may act twice in createBooking, an atomic operation: it uses a context of its own, not the handler's ctx`

	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 6}, idemclient.WithIdempotencyKey(uuid.NewString())) // want `CreateBooking: s.pay.CreateRefund may act twice in createBooking, an atomic operation: its idempotency key uuid.NewString\(\) is not derived from this request, so a retry of the handler does not send the call the key it sent before; it gets a derived key without an explicit key \(the client derives one from the handler's ctx\) or with one from downstream.Key \(docs/downstream.md\)`
	fresh, _ := idemclient.NewKey("uuid")
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 7}, idemclient.WithIdempotencyKey(fresh)) // want `its idempotency key fresh is not derived`
	in, _ := idem.KeyFromContext(ctx)
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 8}, idemclient.WithIdempotencyKey(in.Value)) // want `its idempotency key in.Value is not derived`
	d, _ := downstream.Derive([]byte("secret"), downstream.Record{Key: in.Value}, "refund", downstream.UUID)
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 9}, idemclient.WithIdempotencyKey(d))            // want `its idempotency key d is not derived`
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 10}, idemclient.WithIdempotencyKey("refund-10")) // want `its idempotency key "refund-10" is not derived`
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{IdempotencyKey: &fresh, Amount: 11})                     // want `its idempotency key &fresh is not derived`
	lost, _ := downstream.Key(context.Background(), "refund/12")
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 12}, idemclient.WithIdempotencyKey(lost)) // want `its idempotency key lost is not derived`
	opts := []idemclient.CallOption{idemclient.WithKeySite("x")}
	opts = append(opts, idemclient.WithIdempotencyKey(rand.Text()))
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 13}, opts...)                              // want `its idempotency key rand.Text\(\) is not derived`
	s.pay.QuoteRefund(ctx, payapi.CreateRefundRequest{Amount: 14})                                        // want `CreateBooking: s.pay.QuoteRefund calls an operation that takes no idempotency key \(make it idempotent with x-idempotent, and the client sends one\) in createBooking, an atomic operation: it runs again when the client hangs up or the transaction rolls back after it returned \(the retry runs the handler anew\); if the other side is idempotent by key, send it a key derived from this request \(downstream.Key, or a generated client given the handler's ctx: docs/downstream.md\), else use x-idempotent mode: lease with a recovery hook \(idem.Config.Recover\)`
	idemclient.Do(context.Background(), s.rt, &opCreateRefund, idemclient.NewRequest("/refunds"), decode) // want `idemclient.Do \(createRefund\) may act twice in createBooking, an atomic operation: it is given context.Background\(\)`
	r15 := idemclient.NewRequest("/refunds")
	r15.Key = uuid.New().String()
	idemclient.Do(ctx, s.rt, &opCreateRefund, r15, decode)                              // want `its idempotency key uuid.New\(\).String\(\) is not derived`
	idemclient.Do(ctx, s.rt, &opQuote, idemclient.NewRequest("/refunds/quote"), decode) // want `idemclient.Do \(quoteRefund\) calls an operation that takes no idempotency key`

	// net/http: a fresh key, the incoming key, a key on another request.
	hr, _ := http.NewRequestWithContext(ctx, "POST", "http://ledger/entries", nil)
	hr.Header.Set("Idempotency-Key", uuid.NewString())
	s.client.Do(hr) // want `s.client.Do calls out of the process in createBooking`
	hr2, _ := http.NewRequestWithContext(ctx, "POST", "http://ledger/entries", nil)
	hr2.Header.Add("Idempotency-Key", in.Value)
	s.client.Do(hr2) // want `s.client.Do calls out of the process`
	k, _ := downstream.Key(ctx, "ledger")
	hr3, _ := http.NewRequestWithContext(ctx, "POST", "http://ledger/entries", nil)
	hr3.Header.Set("Idempotency-Key", k)
	s.client.Do(hr2)                                             // want `s.client.Do calls out of the process`
	http.Post("http://ledger/entries?key="+k, "text/plain", nil) // want `http.Post calls out of the process`

	// gRPC without a key.
	s.cc.Invoke(ctx, "/ledger.Post", nil, nil) // want `s.cc.Invoke calls out of the process`

	// stripe-go: no key, a fresh key.
	s.stripe.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Amount: stripe.Int64(1)}) // want `s.stripe.V1Refunds.Create calls out of the process in createBooking`
	p := &stripe.RefundCreateParams{Amount: stripe.Int64(2)}
	p.SetIdempotencyKey(uuid.NewString())
	s.stripe.V1Refunds.Create(ctx, p) // want `s.stripe.V1Refunds.Create calls out of the process`
	return nil, nil
}

// Lease mode: the bad calls are not reported.
func (s *bad) ChargeCard(ctx context.Context, tx pgx.Tx, req api.CreateBookingRequest) (api.CreateBookingResponse, error) {
	s.pay.CreateRefund(context.Background(), payapi.CreateRefundRequest{Amount: 1})
	s.pay.QuoteRefund(ctx, payapi.CreateRefundRequest{Amount: 2})
	return nil, nil
}

// A webhook receiver's context carries no request to derive from.
func (s *bad) BookingMade(ctx context.Context, tx pgx.Tx, payload api.CreateBookingRequest) error {
	_, err := s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: 1}) // want `BookingMade: s.pay.CreateRefund calls out of the process in the receiver of webhook booking.made: .* send it through the outbox in tx \(events.Enqueue\) instead`
	return err
}

// A proxy passes refunds on to the payments service (example.com/pay/server
// declares createRefund atomic): the request it was given carries the
// incoming key, which is not derived.

type proxy struct{ deps }

func (s *proxy) CreateRefund(ctx context.Context, tx pgx.Tx, req payapi.CreateRefundRequest) (payapi.CreateRefundResponse, error) {
	s.pay.CreateRefund(ctx, req) // want `CreateRefund: s.pay.CreateRefund may act twice in createRefund, an atomic operation: its idempotency key req.IdempotencyKey is not derived`
	fwd := req
	fwd.Amount++
	return s.pay.CreateRefund(ctx, fwd) // want `its idempotency key req.IdempotencyKey is not derived`
}

type cleared struct{ deps }

func (s *cleared) CreateRefund(ctx context.Context, tx pgx.Tx, req payapi.CreateRefundRequest) (payapi.CreateRefundResponse, error) {
	s.pay.CreateRefund(ctx, payapi.CreateRefundRequest{Amount: req.Amount})
	req.IdempotencyKey = nil
	return s.pay.CreateRefund(ctx, req)
}
