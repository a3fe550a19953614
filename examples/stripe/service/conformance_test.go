package service_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/idemgen/idemgen/conformance"
)

// TestConformance runs idemgen conformance against the service: the
// contract's checks, read in profile stripe (Stripe's error bodies, 429
// lock_timeout for a request in flight, a quoted key being another key).
func TestConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Slow enough that the concurrent check's duplicates arrive while the
	// first request runs.
	e.svc.BeforeCommit = func(context.Context) { time.Sleep(50 * time.Millisecond) }
	// Bodies the service can act on: a payment method to confirm with, and
	// a succeeded payment intent to refund a cent of.
	pi, err := e.sc.V1PaymentIntents.Create(context.Background(), &stripe.PaymentIntentCreateParams{
		Amount: stripe.Int64(5000), Currency: stripe.String("eur"), PaymentMethod: stripe.String("pm_card_visa"), Confirm: stripe.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := conformance.Run(context.Background(), conformance.Config{
		Spec: "../openapi.yaml", URL: e.srv.URL, Client: e.srv.Client(),
		Header: http.Header{"Authorization": {"Bearer " + apiKey}},
		Bodies: map[string][]byte{
			"PostPaymentIntentsIntentConfirm": []byte("payment_method=pm_card_visa"),
			"PostRefunds":                     []byte("payment_intent=" + pi.ID + "&amount=1"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("%d checks fail:\n%s", rep.Failed, b.String())
	}
	for _, op := range []string{"PostCustomers", "PostPaymentIntents", "PostPaymentIntentsIntentConfirm", "PostRefunds"} {
		for _, check := range []string{"missing-key", "malformed-key/format", "malformed-key/too-long", "malformed-key/repeated",
			"first-execution", "key-echo", "content-digest", "replay", "quoted-key", "concurrent"} {
			if res := rep.Find(op, check); res == nil || res.Outcome != conformance.Pass {
				t.Errorf("%s %s: %+v, want PASS", op, check, res)
			}
		}
	}
}
