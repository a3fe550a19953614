package service_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v85"

	"github.com/idemgen/idemgen/runtime/downstream"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// bookings is a second service, written by hand on the engine, whose
// atomic-mode cancelBooking refunds the booking's payment intent at the
// Stripe-compatible service through stripe-go, inside its transaction.
type bookings struct {
	stripe *stripe.Client
	intent string
	// fail makes the attempts it counts down fail after the refund: their
	// transaction rolls back, as after any error.
	fail atomic.Int32
}

var cancelBooking = &idem.Operation{ID: "cancelBooking", Method: "POST", Pattern: "/bookings/{id}/cancel", PathParams: []string{"id"},
	Policy: func() idem.Policy {
		p := idem.DefaultPolicy()
		p.KeyFormat, p.SchemaVersion = idem.KeyFormatOpaque, "1"
		return p
	}()}

// cancel refunds the booking with a key derived from this request, so that
// every attempt of it asks Stripe for the same refund.
func (b *bookings) cancel(ctx context.Context, tx pgx.Tx, booking string) (*idem.Response, error) {
	key, err := downstream.Key(ctx, "stripe.refunds.create")
	if err != nil {
		return nil, err
	}
	params := &stripe.RefundCreateParams{PaymentIntent: stripe.String(b.intent), Amount: stripe.Int64(2000)}
	params.SetIdempotencyKey(key)
	rf, err := b.stripe.V1Refunds.Create(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("refund booking %s: %w", booking, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO cancellations (booking, refund) VALUES ($1, $2)`, booking, rf.ID); err != nil {
		return nil, err
	}
	if b.fail.Add(-1) >= 0 {
		return nil, errors.New("after the refund, the transaction rolls back")
	}
	return &idem.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte(rf.ID)}, nil
}

// TestDerivedKeyWithStripeGo: a handler that calls Stripe's SDK with a key
// derived from its request (Params.SetIdempotencyKey) refunds once, however
// many of its attempts roll back after the refund.
func TestDerivedKeyWithStripeGo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	pi, err := e.sc.V1PaymentIntents.Create(ctx, &stripe.PaymentIntentCreateParams{Params: stripe.Params{IdempotencyKey: stripe.String(newKey("intent"))},
		Amount: stripe.Int64(5000), Currency: stripe.String("eur"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true)})
	if err != nil || pi.Status != stripe.PaymentIntentStatusSucceeded {
		t.Fatalf("payment intent: %+v %v", pi, err)
	}

	bdb := pgtest.New(t, pgtest.Options{Migrations: fstest.MapFS{
		"0001_cancellations.up.sql": {Data: []byte(`CREATE TABLE cancellations (booking text NOT NULL, refund text NOT NULL)`)},
	}})
	secret := []byte("the bookings' secret of 32 bytes")
	eng, err := idem.New(bdb.Pool, idem.Config{Operations: []*idem.Operation{cancelBooking}, DownstreamSecret: secret,
		Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}})
	if err != nil {
		t.Fatal(err)
	}
	b := &bookings{stripe: e.sc, intent: pi.ID}
	b.fail.Store(2)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /bookings/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		eng.Serve(w, r, cancelBooking, func([]byte) (idem.Prepared, error) {
			return idem.Prepared{Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				return b.cancel(ctx, tx, r.PathValue("id"))
			}}, nil
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	key := newKey("cancel")
	var answers []string
	for attempt := 1; attempt <= 4; attempt++ {
		req, _ := http.NewRequest("POST", srv.URL+"/bookings/bk_1/cancel", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answers = append(answers, fmt.Sprintf("%d %s", resp.StatusCode, body))
	}
	refundKey, err := downstream.Derive(secret, downstream.Record{Operation: "cancelBooking", Key: key}, "stripe.refunds.create", downstream.UUID)
	if err != nil {
		t.Fatal(err)
	}
	// Three attempts reached Stripe under the derived key (the fourth was
	// the cancellation's replay); the first refunded, the others got its
	// stored response.
	as := e.attemptsOf(refundKey)
	if len(as) != 3 {
		t.Fatalf("Stripe saw %d attempts under the derived key %s, want 3 (answers %q)", len(as), refundKey, answers)
	}
	if n := e.rows(`SELECT count(*) FROM refunds WHERE payment_intent = $1`, pi.ID); n != 1 {
		t.Fatalf("%d refunds of the intent, want 1", n)
	}
	var refund string
	if err := bdb.QueryRow(ctx, `SELECT refund FROM cancellations`).Scan(&refund); err != nil {
		t.Fatal(err)
	}
	if want := []string{"500", "500", "200 " + refund, "200 " + refund}; answers[0][:3] != want[0] || answers[1][:3] != want[1] || answers[2] != want[2] || answers[3] != want[3] {
		t.Fatalf("answers %q, want %q", answers, want)
	}
}
