// Command democlient is `make demo`: it starts the payment gateway simulator
// and a NATS JetStream server (in this process, standing for the outside
// world), builds and starts the payments service as a real process on a free
// port (relaying its outbox to JetStream), runs the bookkeeper consumer, and
// walks through the idempotency contract, printing every exchange. It exits
// 1 when any expectation fails.
//
//	go run ./cmd/democlient            (from examples/payments; needs DATABASE_URL)
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/examples/payments/bookkeeper"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idemclient"
)

func main() {
	bin := flag.String("service", "", "service binary (default: build ./cmd/payments)")
	verbose := flag.Bool("v", false, "print every request and response after the summary")
	flag.Parse()
	if err := run(*bin, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type demo struct {
	ctx    context.Context
	c      *harness.Client
	gw     *gateway.Simulator
	db     *pgx.Conn
	js     jetstream.JetStream
	failed []string
	step   int

	verbose  bool
	outMu    sync.Mutex // guards sections, step and failed
	sections []*section
	dbURL    string
	svcURL   string
	k1       string // the first payment's key, shown by `idemgen records get`

	mu       sync.Mutex
	outcomes map[events.Outcome]int // of the bookkeeper's deliveries
}

func run(bin string, verbose bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		return fmt.Errorf("DATABASE_URL is not set (run `make demo`)")
	}

	if bin == "" {
		dir, err := os.MkdirTemp("", "payments-demo")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Println("building the payments service …")
		if bin, err = harness.Build(ctx, dir, false); err != nil {
			return err
		}
	}

	// The gateway lives in this process: the outside world, which outlives
	// the service.
	gw := gateway.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	gwSrv := &http.Server{Handler: gw.Handler()}
	go gwSrv.Serve(ln)
	defer gwSrv.Close()

	// So does the message broker.
	natsDir, err := os.MkdirTemp("", "payments-demo-nats")
	if err != nil {
		return err
	}
	defer os.RemoveAll(natsDir)
	ns, err := harness.StartNATS(natsDir)
	if err != nil {
		return err
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}

	addr, err := harness.FreeAddr()
	if err != nil {
		return err
	}
	svc, err := harness.Start(ctx, bin, addr, "GATEWAY_URL=http://"+ln.Addr().String(), "NATS_URL="+ns.ClientURL(),
		"IDEM_SEAL_KEYS="+demoSealKeys())
	if err != nil {
		return err
	}
	fmt.Printf("payments service listening on %s (gateway simulator on %s, NATS JetStream on %s)\n", svc.Addr, ln.Addr(), ns.ClientURL())
	defer func() {
		if !svc.Exited() {
			svc.Kill()
		}
	}()

	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())

	d := &demo{ctx: ctx, c: &harness.Client{URL: svc.URL, HTTP: &http.Client{Timeout: 30 * time.Second}}, gw: gw, db: db, js: js,
		outcomes: map[events.Outcome]int{}, dbURL: dbURL, svcURL: svc.URL, verbose: verbose}
	stopBookkeeper, err := d.startBookkeeper(dbURL)
	if err != nil {
		return err
	}
	d.script()
	d.events()
	stopBookkeeper()
	d.operate()
	d.conformance(svc.URL)

	stopped := svc.Stop(20 * time.Second)
	if stopped != nil {
		d.failed = append(d.failed, "graceful shutdown: "+stopped.Error())
	}
	d.report(os.Stdout, stopped)
	if len(d.failed) > 0 {
		fmt.Println("\nservice log:\n" + svc.Logs())
		fmt.Printf("\nFAILED: %d expectation(s)\n", len(d.failed))
		for _, f := range d.failed {
			fmt.Println("  ✗ " + f)
		}
		return fmt.Errorf("%d expectation(s) failed", len(d.failed))
	}
	fmt.Println("\nall expectations met")
	return nil
}

// A section is one guarantee the demo shows: its title, the exchanges
// printed under it, and how its expectations went.
type section struct {
	title          string
	out            bytes.Buffer
	checks, failed int
}

// title starts the next section.
func (d *demo) title(s string) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	d.step++
	d.sections = append(d.sections, &section{title: fmt.Sprintf("%d. %s", d.step, s)})
	line := fmt.Sprintf("── %d. %s ", d.step, s)
	fmt.Fprintf(d.writer(), "\n%s%s\n", line, strings.Repeat("─", max(0, 78-len([]rune(line)))))
}

// writer is where the current section's transcript goes (outMu held).
func (d *demo) writer() io.Writer {
	if len(d.sections) == 0 {
		return os.Stdout
	}
	return &d.sections[len(d.sections)-1].out
}

func (d *demo) printf(format string, args ...any) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	fmt.Fprintf(d.writer(), format, args...)
}

func (d *demo) println(s string) { d.printf("%s\n", s) }
func (d *demo) print(s string)   { d.printf("%s", s) }

func (d *demo) expect(ok bool, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	mark := "✓"
	if !ok {
		mark = "✗"
	}
	d.println("  " + mark + " " + msg)
	d.outMu.Lock()
	defer d.outMu.Unlock()
	if len(d.sections) > 0 {
		sec := d.sections[len(d.sections)-1]
		sec.checks++
		if !ok {
			sec.failed++
		}
	}
	if !ok {
		d.failed = append(d.failed, fmt.Sprintf("step %d: %s", d.step, msg))
	}
}

// report prints the summary, one line per section, then the transcripts:
// every section's with -v, else those of the sections that failed.
func (d *demo) report(w io.Writer, stopped error) {
	checks := 0
	fmt.Fprintln(w, "\nWhat the demo showed (each line a guarantee, checked against the service, its database and the gateway):")
	for _, sec := range d.sections {
		mark := "✓"
		if sec.failed > 0 {
			mark = "✗"
		}
		checks += sec.checks
		fmt.Fprintf(w, "  %s %s\n", mark, sec.title)
	}
	if stopped != nil {
		fmt.Fprintf(w, "  ✗ graceful shutdown: %v\n", stopped)
	} else {
		fmt.Fprintln(w, "  ✓ the service stopped gracefully on SIGTERM")
	}
	for _, sec := range d.sections {
		if d.verbose || sec.failed > 0 {
			fmt.Fprint(w, sec.out.String())
		}
	}
	if !d.verbose {
		fmt.Fprintf(w, "\n%d checks in %d sections; every request and response: make demo V=1 (go run ./cmd/democlient -v)\n", checks, len(d.sections))
	}
}

func (d *demo) send(method, path, key string, body any) *harness.Exchange {
	ex, err := d.c.Do(d.ctx, method, path, key, body)
	if ex != nil {
		d.print(ex.Format())
	}
	if err != nil {
		d.expect(false, "%s %s: %v", method, path, err)
		return &harness.Exchange{Header: http.Header{}}
	}
	return ex
}

func (d *demo) problem(ex *harness.Exchange, status int, code, reason string) {
	p, ok := ex.Problem()
	d.expect(ex.Status == status && ok && p.Code == code && p.Reason == reason,
		"%d problem+json %s / %s", status, code, reason)
}

func (d *demo) ledgerCount(key string) int {
	var n int
	if err := d.db.QueryRow(d.ctx, `SELECT count(*) FROM payments WHERE idempotency_key = $1`, key).Scan(&n); err != nil {
		d.expect(false, "ledger query: %v", err)
	}
	return n
}

type payment struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	ChargeID string `json:"chargeId"`
}

func (d *demo) script() {
	newPayment := func(amount int64) map[string]any {
		return map[string]any{"amount": amount, "currency": "EUR", "description": "demo order", "metadata": map[string]any{"orderId": "ord-42"}}
	}

	d.title("First request: the payment is charged and recorded")
	k1 := harness.NewKey()
	d.k1 = k1
	first := d.send("POST", "/payments", k1, newPayment(1999))
	var p1 payment
	_ = first.Decode(&p1)
	d.expect(first.Status == 201 && p1.ID != "", "201 Created with a payment (%s)", p1.ID)
	d.expect(!first.Replayed(), "not a replay")

	d.title("The same request again: replayed, not charged twice")
	again := d.send("POST", "/payments", k1, newPayment(1999))
	d.expect(again.Status == 201, "201 again")
	d.expect(bytes.Equal(again.RespBody, first.RespBody), "the same body, byte for byte")
	d.expect(again.Replayed(), "Idempotent-Replayed: true")
	d.expect(again.Header.Get("Last-Modified") != "", "Last-Modified: %s (when the original was stored)", again.Header.Get("Last-Modified"))
	d.expect(d.ledgerCount(k1) == 1, "ledger: 1 payment for the key")

	d.title("Same key, another amount: refused")
	conflict := d.send("POST", "/payments", k1, newPayment(2999))
	d.problem(conflict, 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")

	d.title("No Idempotency-Key: refused")
	missing := d.send("POST", "/payments", "", newPayment(1999))
	d.problem(missing, 400, "ERR400_MISSING_OR_MALFORMED_HEADER", "IDEMPOTENCY_KEY_REQUIRED")

	d.title("20 concurrent duplicates while the gateway is slow: one payment")
	k2 := harness.NewKey()
	d.gw.Set(gateway.Switches{Latency: 400 * time.Millisecond})
	d.printf("  > 20 × POST /payments, Idempotency-Key: %s, the same body, at once\n", k2)
	var (
		mu    sync.Mutex
		tally = map[string]int{}
		fresh int
		wg    sync.WaitGroup
	)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex, err := d.c.Do(d.ctx, "POST", "/payments", k2, newPayment(500))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				tally["transport error: "+err.Error()]++
			case ex.Status == 201 && ex.Replayed():
				tally["201 replayed"]++
			case ex.Status == 201:
				tally["201 executed"]++
				fresh++
			default:
				p, _ := ex.Problem()
				tally[fmt.Sprintf("%d %s", ex.Status, p.Reason)]++
			}
		}()
	}
	wg.Wait()
	d.gw.Set(gateway.Switches{})
	outcomes := make([]string, 0, len(tally))
	for k := range tally {
		outcomes = append(outcomes, k)
	}
	sort.Strings(outcomes)
	for _, k := range outcomes {
		d.printf("  < %2d × %s\n", tally[k], k)
	}
	n := d.ledgerCount(k2)
	d.printf("  ledger: SELECT count(*) FROM payments WHERE idempotency_key = '%s' → %d\n", k2, n)
	d.expect(fresh == 1, "exactly one request executed")
	d.expect(n == 1, "exactly one payment in the ledger")
	d.expect(d.gw.Calls(k2) == 1, "the gateway was called once")

	d.title("The gateway charges, then times out: the retry recovers the charge")
	k3 := harness.NewKey()
	d.gw.Set(gateway.Switches{FailAfterCharge: 1})
	timeout := d.send("POST", "/payments", k3, newPayment(7500))
	d.expect(timeout.Status == 502, "502: the gateway timed out (after charging the card)")
	charged, ok, _ := d.gw.Lookup(d.ctx, k3)
	d.expect(ok, "the gateway holds a charge for the key (%s)", charged.ID)
	d.expect(d.ledgerCount(k3) == 0, "ledger: no payment yet (the handler's writes rolled back)")
	d.println("  … the client retries with the same key")
	retry := d.send("POST", "/payments", k3, newPayment(7500))
	var p3 payment
	_ = retry.Decode(&p3)
	d.expect(retry.Status == 201 && !retry.Replayed(), "201: the retry ran (a 5xx is not kept)")
	d.expect(p3.ChargeID == charged.ID, "the payment carries the charge made by the first attempt (%s)", p3.ChargeID)
	st := 0
	for _, ch := range d.gw.Charges() {
		if ch.Key == k3 {
			st++
		}
	}
	d.expect(st == 1, "the gateway charged once (%d charge calls, %d charge)", d.gw.Calls(k3), st)
	d.expect(d.ledgerCount(k3) == 1, "ledger: 1 payment for the key")

	d.generatedClient()

	d.title("Capture and refunds through the generated client: a final 422, replayed")
	client, err := api.NewClient(d.c.URL, idemclient.WithHTTPClient(d.c.HTTP))
	if err != nil {
		d.expect(false, "api.NewClient: %v", err)
		return
	}
	captured := int64(1000)
	d.printf("  > client.CapturePayment(ctx, {PaymentID: %s, amount 1000})\n", p1.ID)
	capture, err := client.CapturePayment(d.ctx, api.CapturePaymentRequest{PaymentID: p1.ID, Body: api.Capture{Amount: &captured}})
	showResult(d, capture, err)
	_, ok = resultOf[api.CapturePayment200Response](capture, err)
	d.expect(ok, "api.CapturePayment200Response: 1000 of 1999 captured (atomic mode)")
	kr, _ := idemclient.NewKey("uuid")
	refundReq := api.CreateRefundRequest{PaymentID: p1.ID, Body: api.NewRefund{Amount: 1500}}
	d.printf("  > client.CreateRefund(ctx, {amount 1500}, idemclient.WithIdempotencyKey(%s))\n", kr)
	refund, err := client.CreateRefund(d.ctx, refundReq, idemclient.WithIdempotencyKey(kr))
	showResult(d, refund, err)
	r1, ok := resultOf[api.CreateRefund422Response](refund, err)
	d.expect(ok && !refund.Replayed, "api.CreateRefund422Response: insufficient funds (%s), a declared response, not an error", r1.Body.Code)
	d.println("  > the same call again, with the same key (a retry after a restart, say)")
	refundAgain, err := client.CreateRefund(d.ctx, refundReq, idemclient.WithIdempotencyKey(kr))
	showResult(d, refundAgain, err)
	r2, ok := resultOf[api.CreateRefund422Response](refundAgain, err)
	d.expect(ok && refundAgain.Replayed && r2 == r1, "the same 422, Replayed (replayStatuses: [422])")
	reason := "damaged"
	d.println("  > client.CreateRefund(ctx, {amount 400, reason damaged})   (a new intent: the client mints its key)")
	within, err := client.CreateRefund(d.ctx, api.CreateRefundRequest{PaymentID: p1.ID, Body: api.NewRefund{Amount: 400, Reason: &reason}})
	showResult(d, within, err)
	_, ok = resultOf[api.CreateRefund201Response](within, err)
	d.expect(ok && within.Key != "" && within.Key != kr, "api.CreateRefund201Response: a refund within the captured amount, under a key of its own")

	d.title("A POST that opted out (x-idempotent: false) needs no key")
	d.println("  > client.QuotePayment(ctx, {amount 1999 EUR})")
	quote, err := client.QuotePayment(d.ctx, api.QuotePaymentRequest{Body: api.QuoteRequest{Amount: 1999, Currency: "EUR"}})
	showResult(d, quote, err)
	_, ok = resultOf[api.QuotePayment200Response](quote, err)
	d.expect(ok && quote.Key == "" && quote.Header.Get("Idempotency-Key") == "",
		"api.QuotePayment200Response, sent without a key, no idempotency headers (and retried only WithRetryUnsafe)")

	d.title("Totals: one ledger payment per gateway charge, the sums agree")
	var payments, amount int64
	if err := d.db.QueryRow(d.ctx, `SELECT count(*), coalesce(sum(amount), 0) FROM payments`).Scan(&payments, &amount); err != nil {
		d.expect(false, "ledger query: %v", err)
	}
	gs := d.gw.Stats()
	d.printf("  ledger:  %d payments, %d EUR cents\n", payments, amount)
	d.printf("  gateway: %d charges, %d EUR cents, after %d charge calls\n", gs.Charges, gs.Amount, gs.Calls)
	d.expect(payments == int64(gs.Charges) && amount == gs.Amount, "one payment per charge, the sums agree")
}

// showResult prints what a call of the generated client ended with.
func showResult[T any](d *demo, res *idemclient.Result[T], err error) {
	if err != nil {
		d.printf("  < error: %v\n", err)
		return
	}
	key := res.Key
	if key == "" {
		key = "none"
	}
	d.printf("  < %d %T (key %s, %d attempt(s), replayed: %v)\n", res.Status, res.Response, key, res.Attempts, res.Replayed)
}

// resultOf is the call's response as the declared type R.
func resultOf[R any, T any](res *idemclient.Result[T], err error) (R, bool) {
	var zero R
	if err != nil || res == nil {
		return zero, false
	}
	r, ok := any(res.Response).(R)
	return r, ok
}

// generatedClient calls the service through the client idemgen generates
// (api.Client): it mints one key per call and retries the 502 itself.
func (d *demo) generatedClient() {
	d.title("The generated client: one key per call, retried safely")
	client, err := api.NewClient(d.c.URL, idemclient.WithHTTPClient(d.c.HTTP))
	if err != nil {
		d.expect(false, "api.NewClient: %v", err)
		return
	}
	d.gw.Set(gateway.Switches{FailAfterCharge: 1})
	defer d.gw.Set(gateway.Switches{})
	desc := "demo order"
	req := api.CreatePaymentRequest{Body: api.NewPayment{Amount: 4200, Currency: "EUR", Description: &desc}}
	d.println("  > client.CreatePayment(ctx, 4200 EUR)   (the gateway will charge, then time out)")
	observe := idemclient.WithAttemptObserver(func(a idemclient.Attempt) {
		next := "final"
		if a.Retry {
			next = fmt.Sprintf("retrying in %s", a.Wait.Round(time.Millisecond))
		}
		d.printf("  < attempt %d, Idempotency-Key %s: %d (%s)\n", a.N, a.Key, a.Status, next)
	})
	res, err := client.CreatePayment(d.ctx, req, observe)
	if err != nil {
		d.expect(false, "CreatePayment: %v", err)
		return
	}
	p, ok := res.Response.(api.CreatePayment201Response)
	d.expect(ok && res.Attempts == 2, "api.CreatePayment201Response after %d attempts, one key (%s)", res.Attempts, res.Key)
	st := 0
	for _, ch := range d.gw.Charges() {
		if ch.Key == res.Key {
			st++
		}
	}
	d.expect(st == 1 && p.Body.ChargeID != "", "the gateway charged once (%s)", p.Body.ChargeID)
	d.expect(d.ledgerCount(res.Key) == 1, "ledger: 1 payment for the key")

	d.println("  > the same key with another amount (idemclient.WithIdempotencyKey)")
	req.Body.Amount = 4300
	_, err = client.CreatePayment(d.ctx, req, idemclient.WithIdempotencyKey(res.Key), observe)
	var e *idemclient.Error
	d.expect(idemclient.IsConflict(err) && errors.As(err, &e) && e.Attempts == 1,
		"*idemclient.Error, IsConflict, not retried: %v", err)
}

// conformance runs `idemgen conformance` against the running service: every
// check of the contract, driven by openapi.yaml.
func (d *demo) conformance(url string) {
	d.title("idemgen conformance: the running service against the contract")
	d.printf("  $ go tool idemgen conformance -spec openapi.yaml -url %s\n", url)
	cmd := exec.CommandContext(d.ctx, "go", "tool", "idemgen", "conformance", "-spec", "openapi.yaml", "-url", url)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		d.println("  " + line)
	}
	d.expect(err == nil, "every check passed (exit status 0)")
}

// startBookkeeper consumes the service's events into the ledger, as
// cmd/bookkeeper does, counting what happened to each delivery.
func (d *demo) startBookkeeper(dbURL string) (stop func(), err error) {
	pool, err := pgxpool.New(d.ctx, dbURL)
	if err != nil {
		return nil, err
	}
	if _, err := payments.EnsureStream(d.ctx, d.js, 1, 2*time.Minute); err != nil {
		pool.Close()
		return nil, err
	}
	cons, err := bookkeeper.EnsureConsumer(d.ctx, d.js, 5*time.Second)
	if err != nil {
		pool.Close()
		return nil, err
	}
	c, err := bookkeeper.New(pool, bookkeeper.Apply, bookkeeper.Options{
		OnOutcome: func(_ cloudevents.Event, o events.Outcome, _ error) {
			d.mu.Lock()
			d.outcomes[o]++
			d.mu.Unlock()
		},
	})
	if err != nil {
		pool.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(d.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Consume(ctx, cons); err != nil && !errors.Is(err, context.Canceled) {
			d.expect(false, "bookkeeper: %v", err)
		}
	}()
	return func() { cancel(); <-done; pool.Close() }, nil
}

func (d *demo) outcome(o events.Outcome) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.outcomes[o]
}

// events shows the payments' events reaching the ledger once each.
func (d *demo) events() {
	d.title("Events: each payment is booked once (outbox → JetStream → inbox)")
	var nPayments, entries int64
	count := func() {
		if err := d.db.QueryRow(d.ctx, `SELECT (SELECT count(*) FROM payments), (SELECT count(*) FROM ledger_entries)`).Scan(&nPayments, &entries); err != nil {
			d.expect(false, "ledger query: %v", err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for count(); entries < nPayments && time.Now().Before(deadline); count() {
		time.Sleep(20 * time.Millisecond)
	}
	d.expect(nPayments > 0 && entries == nPayments, "ledger: %d entries for %d payments (the relay published each payment.created event, the bookkeeper booked it)", entries, nPayments)

	// A message delivered again under a new message id: the stream keeps
	// it, the inbox recognises the event id.
	st, err := d.js.Stream(d.ctx, payments.Stream)
	if err != nil {
		d.expect(false, "stream: %v", err)
		return
	}
	raw, err := st.GetMsg(d.ctx, 1)
	if err != nil {
		d.expect(false, "stream message 1: %v", err)
		return
	}
	var ev cloudevents.Event
	_ = ev.UnmarshalJSON(raw.Data)
	d.printf("  … publishing event %s (%s, subject %s) again, as a broker or a relay might\n", ev.ID(), ev.Type(), ev.Subject())
	before := d.outcome(events.Duplicate)
	m := nats.NewMsg(raw.Subject)
	m.Data = raw.Data
	if _, err := d.js.PublishMsg(d.ctx, m, jetstream.WithMsgID("demo-copy")); err != nil {
		d.expect(false, "publish: %v", err)
		return
	}
	for deadline := time.Now().Add(10 * time.Second); d.outcome(events.Duplicate) == before && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	d.expect(d.outcome(events.Duplicate) == before+1, "the bookkeeper acknowledged it as a duplicate without booking it")
	count()
	d.expect(entries == nPayments, "ledger: still %d entries for %d payments", entries, nPayments)
	var balance, sum int64
	if err := d.db.QueryRow(d.ctx, `SELECT (SELECT coalesce(sum(authorized), 0) FROM ledger_balances)::bigint, (SELECT coalesce(sum(amount), 0) FROM payments)::bigint`).Scan(&balance, &sum); err != nil {
		d.expect(false, "balance query: %v", err)
	}
	d.expect(balance == sum, "balance: %d EUR cents authorized = the payments' sum", balance)
}
