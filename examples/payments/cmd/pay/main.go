// Command pay creates one payment through the client idemgen generates
// (api.Client): the smallest caller of the payments service that keeps its
// half of exactly-once.
//
//	go run ./cmd/pay -amount 4200                  a new intent: a key is minted
//	go run ./cmd/pay -amount 4200 -key KEY         the same intent again
//
// Before calling, it prints the intent's key on stderr, so that a caller
// interrupted mid-call (killed, out of time) runs it again with -key: the
// service then answers with the payment the first call made, or makes it,
// and never charges twice. On success it prints
//
//	payment ID AMOUNT CURRENCY charge CHARGE key KEY attempts N replayed BOOL
//
// on stdout. Exit status 1 when the call failed; the message says whether
// running it again with the key can help.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/runtime/idemclient"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "base URL of the payments service")
	amount := flag.Int64("amount", 0, "amount in the currency's minor unit (required)")
	currency := flag.String("currency", "EUR", "ISO 4217 currency code")
	desc := flag.String("description", "", "description of the payment")
	key := flag.String("key", "", "the intent's idempotency key (a UUID); minted when empty")
	budget := flag.Duration("timeout", time.Minute, "time budget of the call, retries included")
	flag.Parse()
	if *amount <= 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: pay -amount N [-currency EUR] [-description D] [-key KEY] [-url URL] [-timeout D]")
		os.Exit(2)
	}
	if err := run(*url, *amount, *currency, *desc, *key, *budget); err != nil {
		fmt.Fprintln(os.Stderr, "pay:", err)
		os.Exit(1)
	}
}

func run(url string, amount int64, currency, desc, key string, budget time.Duration) error {
	client, err := api.NewClient(url, idemclient.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	if err != nil {
		return err
	}
	if key == "" {
		// Minted here rather than by the client, so that it can be shown
		// before the call: it is what an interrupted caller needs.
		if key, err = idemclient.NewKey("uuid"); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "pay: creating %d %s with Idempotency-Key %s (if interrupted, run again with -key %s)\n", amount, currency, key, key)
	req := api.CreatePaymentRequest{Body: api.NewPayment{Amount: amount, Currency: currency}}
	if desc != "" {
		req.Body.Description = &desc
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	res, err := client.CreatePayment(ctx, req, idemclient.WithIdempotencyKey(key))
	switch {
	case idemclient.IsConflict(err):
		return fmt.Errorf("key %s was used for another payment: use a new key for a new intent (%w)", key, err)
	case idemclient.IsKeyError(err):
		return fmt.Errorf("the service refused the key %q: %w", key, err)
	case idemclient.IsRetryable(err):
		return fmt.Errorf("not done yet (%w): run again with -key %s", err, key)
	case err != nil:
		return err
	}
	switch r := res.Response.(type) {
	case api.CreatePayment201Response:
		p := r.Body
		fmt.Printf("payment %s %d %s charge %s key %s attempts %d replayed %v\n", p.ID, p.Amount, p.Currency, p.ChargeID, res.Key, res.Attempts, res.Replayed)
		return nil
	case api.CreatePayment400Response:
		return fmt.Errorf("the request needs correcting: %s", r.Body.Message)
	default:
		return fmt.Errorf("status %d (%T)", res.Status, res.Response)
	}
}
