package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/idemclient"
)

// The tests of this file drive the service through the client idemgen
// generates (api.Client), the way a caller would: one key per intent, the
// client's own retries, and nothing else.

// persistentPolicy keeps retrying through outages that last seconds: a
// restarting service, a lease that must lapse.
var persistentPolicy = idemclient.RetryPolicy{MaxAttempts: 200, InitialBackoff: 20 * time.Millisecond,
	MaxBackoff: 500 * time.Millisecond, AttemptTimeout: 10 * time.Second}

func newAPIClient(t testing.TB, url string, opts ...idemclient.Option) *api.Client {
	t.Helper()
	c, err := api.NewClient(url, append([]idemclient.Option{idemclient.WithRetryPolicy(persistentPolicy)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func paymentRequest(amount int64) api.CreatePaymentRequest {
	desc := "e2e"
	return api.CreatePaymentRequest{Body: api.NewPayment{Amount: amount, Currency: "EUR", Description: &desc}}
}

// createdPayment is the payment of a 201, or an error naming what came
// instead.
func createdPayment(res *idemclient.Result[api.CreatePaymentResponse], err error) (api.Payment, error) {
	if err != nil {
		return api.Payment{}, err
	}
	p, ok := res.Response.(api.CreatePayment201Response)
	if !ok {
		return api.Payment{}, fmt.Errorf("status %d (%T), want 201", res.Status, res.Response)
	}
	return p.Body, nil
}

// clientProc is one run of cmd/pay, the example's command-line caller
// built on the generated client.
type clientProc struct {
	cmd     *exec.Cmd
	calling chan struct{} // closed when it says it is calling
	out     chan string   // lines of its standard output
	done    chan error
}

// buildPay builds cmd/pay into a directory of the test's.
func buildPay(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pay")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/idemgen/idemgen/examples/payments/cmd/pay").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/pay: %v\n%s", err, out)
	}
	return bin
}

func startClientProc(t *testing.T, bin, url, key string, amount int64) *clientProc {
	t.Helper()
	cmd := exec.Command(bin, "-url", url, "-key", key, "-amount", strconv.FormatInt(amount, 10), "-description", "e2e", "-timeout", "60s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &clientProc{cmd: cmd, calling: make(chan struct{}), out: make(chan string, 16), done: make(chan error, 1)}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			if !said && strings.HasPrefix(sc.Text(), "pay: creating") {
				said = true
				close(p.calling)
				continue
			}
			p.out <- "stderr: " + sc.Text()
		}
	}()
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.out <- sc.Text()
		}
	}()
	go func() {
		wg.Wait()
		close(p.out)
		p.done <- cmd.Wait()
	}()
	return p
}

// TestClientKilledMidCall: for every intent a client process (cmd/pay) is
// started with the intent's key and killed with SIGKILL while its call is in
// flight (the gateway takes 400ms), twice — the first time once the
// gateway has been asked to charge, the second at a random moment — then
// started again to completion, as a caller that stores its key with the
// intent does after a crash. Exactly one payment and one charge per intent.
func TestClientKilledMidCall(t *testing.T) {
	t.Parallel()
	bin := buildPay(t)
	s := newStack(t)
	s.gw.Set(gateway.Switches{Latency: 400 * time.Millisecond})
	const intents, kills = 10, 2
	want := map[string]int64{}
	var (
		mu           sync.Mutex
		killedInCall int // kills that landed after the client said it was calling
		charged      int // of them, kills after the gateway had been asked to charge
		wg           sync.WaitGroup
	)
	final := make(chan string, intents)
	for i := range intents {
		key := harness.NewKey()
		amount := int64(2000 + i)
		want[key] = amount
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range kills {
				callsAtStart := s.gw.Calls(key)
				p := startClientProc(t, bin, s.srv.URL, key, amount)
				select {
				case <-p.calling:
				case err := <-p.done:
					t.Errorf("client process ended before calling: %v", err)
					return
				}
				if k == 0 {
					// The first call of a key reaches the gateway: kill
					// once it has been asked to charge, within its 400ms
					// (on a loaded machine the call can take longer than
					// any fixed delay to get there).
					deadline := time.After(time.Minute)
				charging:
					for s.gw.Calls(key) == callsAtStart {
						select {
						case err := <-p.done:
							p.done <- err // ended: the kill below finds it so
							break charging
						case <-deadline:
							break charging
						case <-time.After(5 * time.Millisecond):
						}
					}
					time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
				} else {
					// Then at any moment of the call: before, during or
					// after a charge, or while the first one's is replayed.
					time.Sleep(time.Duration(50+rand.IntN(400)) * time.Millisecond)
				}
				callsBefore := s.gw.Calls(key)
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
				err := <-p.done
				mu.Lock()
				var ee *exec.ExitError
				if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
					killedInCall++
					if callsBefore > callsAtStart {
						charged++
					}
				}
				mu.Unlock()
			}
			p := startClientProc(t, bin, s.srv.URL, key, amount)
			var result string
			for line := range p.out {
				if strings.HasPrefix(line, "payment ") || strings.HasPrefix(line, "stderr: ") {
					result = line
				}
			}
			if err := <-p.done; err != nil {
				t.Errorf("key %s: the last client process failed: %v (%s)", key, err, result)
				return
			}
			final <- key + " " + result
		}()
	}
	wg.Wait()
	close(final)
	replayed := 0
	l := readLedger(t, s.db)
	for line := range final {
		// key "payment" ID AMOUNT CURRENCY "charge" CHARGE "key" KEY "attempts" N "replayed" BOOL
		f := strings.Fields(line)
		if len(f) != 13 || f[1] != "payment" || f[8] != f[0] {
			t.Errorf("client output %q", line)
			continue
		}
		if !l.ids[f[2]] || l.charge[f[0]] != f[6] {
			t.Errorf("key %s: the client got payment %s with charge %s; the ledger has charge %s", f[0], f[2], f[6], l.charge[f[0]])
		}
		if f[12] == "true" {
			replayed++
		}
	}
	checkBooks(t, l, s.gw, want)
	t.Logf("%d intents, %d client processes killed mid-call (%d after their call reached the gateway); %d final calls answered by a replay",
		intents, killedInCall, charged, replayed)
	if killedInCall < intents || charged == 0 {
		t.Errorf("only %d kills landed in a call, %d after the charge started: the test did not exercise what it claims", killedInCall, charged)
	}
}

// dropProxy forwards TCP connections to target; every other connection it
// closes as soon as the response starts to come back, without forwarding
// it: the request was sent and ran, the client never hears of it.
type dropProxy struct {
	ln      net.Listener
	target  string
	n       atomic.Int64
	dropped atomic.Int64 // responses cut after their first byte
	failed  atomic.Int64 // connections that ended without a response
}

func newDropProxy(t *testing.T, target string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(in, p.n.Add(1)%2 == 1)
		}
	}()
	return p
}

func (p *dropProxy) serve(in net.Conn, drop bool) {
	defer in.Close()
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer out.Close()
	go func() { _, _ = io.Copy(out, in); out.(*net.TCPConn).CloseWrite() }()
	if !drop {
		if n, _ := io.Copy(in, out); n == 0 {
			p.failed.Add(1)
		}
		return
	}
	// The first byte of the response: the request is complete and ran.
	var b [1]byte
	if _, err := out.Read(b[:]); err == nil {
		p.dropped.Add(1)
	} else {
		p.failed.Add(1)
	}
}

// TestClientThroughDroppedConnections: every other connection between the
// client and the service is cut after the request went through and before
// the response comes back. Every call ends with its payment, and there is
// exactly one payment and one charge per intent.
//
// With keep-alive, net/http itself may resend a request carrying an
// Idempotency-Key when a reused connection closes before any answer, so a
// drop need not reach the generated client. With a connection per
// attempt every drop does: each one is an attempt that failed in transport,
// and the call it belongs to ends with a replay of what the dropped attempt
// ran.
func TestClientThroughDroppedConnections(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		keepAlive bool
	}{{"keep-alive", true}, {"a connection per attempt", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t)
			s.gw.Set(gateway.Switches{Latency: 20 * time.Millisecond})
			proxy := newDropProxy(t, strings.TrimPrefix(s.srv.URL, "http://"))
			hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: !tc.keepAlive}}
			c := newAPIClient(t, "http://"+proxy.ln.Addr().String(), idemclient.WithHTTPClient(hc))
			dropThrough(t, s, proxy, c, !tc.keepAlive)
		})
	}
}

func dropThrough(t *testing.T, s *stack, proxy *dropProxy, c *api.Client, everyDropRetried bool) {
	const intents = 30
	want := map[string]int64{}
	keys := make([]string, intents)
	for i := range keys {
		keys[i] = harness.NewKey()
		want[keys[i]] = int64(3000 + i)
	}
	type outcome struct {
		key      string
		id       string
		attempts int
		cut      int // attempts that ended in a transport error
		replayed bool
		err      error
	}
	out := make(chan outcome, intents)
	// Why attempts failed, by the last part of their error ("EOF",
	// "connection reset by peer", "context deadline exceeded"): a client
	// whose attempt timed out (the policy's AttemptTimeout, on a machine
	// busy enough) cut it itself, not the proxy.
	var whyMu sync.Mutex
	why := map[string]int{}
	var timedOut atomic.Int64
	sem := make(chan struct{}, 8)
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	for _, key := range keys {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			var cut atomic.Int32
			res, err := c.CreatePayment(ctx, paymentRequest(want[key]), idemclient.WithIdempotencyKey(key),
				idemclient.WithAttemptObserver(func(a idemclient.Attempt) {
					if a.Err != nil {
						cut.Add(1)
						if errors.Is(a.Err, context.DeadlineExceeded) {
							timedOut.Add(1)
						}
						msg := a.Err.Error()
						msg = msg[strings.LastIndex(msg, ": ")+1:]
						whyMu.Lock()
						why[strings.TrimSpace(msg)]++
						whyMu.Unlock()
					}
				}))
			p, err := createdPayment(res, err)
			o := outcome{key: key, id: p.ID, err: err, cut: int(cut.Load())}
			if res != nil {
				o.attempts, o.replayed = res.Attempts, res.Replayed
			}
			out <- o
		}()
	}
	retried, replayed, cut := 0, 0, 0
	for range intents {
		o := <-out
		if o.err != nil {
			t.Errorf("key %s: %v", o.key, o.err)
			continue
		}
		if o.attempts > 1 {
			retried++
		}
		if o.replayed {
			replayed++
		}
		cut += o.cut
		if o.cut != o.attempts-1 {
			t.Errorf("key %s: %d attempts, %d of them cut: a retry for another reason", o.key, o.attempts, o.cut)
		}
		if o.cut > 0 && !o.replayed {
			t.Errorf("key %s: an attempt ran and was cut, yet the call's answer is not a replay of it", o.key)
		}
	}
	l := readLedger(t, s.db)
	checkBooks(t, l, s.gw, want)
	t.Logf("%d intents over %d connections, %d responses dropped after the request ran, %d connections ended without a response: %d calls retried by the client (%d attempts cut), %d answered by a replay",
		intents, proxy.n.Load(), proxy.dropped.Load(), proxy.failed.Load(), retried, cut, replayed)
	if proxy.dropped.Load() == 0 || replayed == 0 {
		t.Error("no response was dropped and replayed: the test did not exercise what it claims")
	}
	// Every connection the proxy cut (or that the service closed without
	// answering) is an attempt the client saw fail, and no other attempt
	// failed but those the client timed out itself. A client's time-out
	// may fall on a connection the proxy is cutting too (a busy machine):
	// then one cut attempt is both, so the bounds, not an equality.
	drops := proxy.dropped.Load() + proxy.failed.Load()
	if everyDropRetried && (int64(cut) < drops || int64(cut) > drops+timedOut.Load()) {
		t.Errorf("%d responses dropped and %d connections without a response, the client saw %d attempts cut (%d of them its own timeouts); why: %v",
			proxy.dropped.Load(), proxy.failed.Load(), cut, timedOut.Load(), why)
	}
}

// TestClientPredicates: what the generated client answers for the
// contract's refusals, against the real service.
func TestClientPredicates(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	c := newAPIClient(t, s.srv.URL)
	ctx := context.Background()
	key := harness.NewKey()

	res, err := c.CreatePayment(ctx, paymentRequest(700), idemclient.WithIdempotencyKey(key))
	first, err := createdPayment(res, err)
	if err != nil || res.Key != key || res.Attempts != 1 || res.Replayed {
		t.Fatalf("first call: %+v, %v", res, err)
	}
	res, err = c.CreatePayment(ctx, paymentRequest(700), idemclient.WithIdempotencyKey(key))
	again, err := createdPayment(res, err)
	if err != nil || !res.Replayed || again.ID != first.ID {
		t.Fatalf("the same call again: %+v, %v; want a replay of %s", res, err, first.ID)
	}

	// Another payload under the key: refused at once, not retried.
	_, err = c.CreatePayment(ctx, paymentRequest(701), idemclient.WithIdempotencyKey(key))
	var e *idemclient.Error
	if !idemclient.IsConflict(err) || idemclient.IsRetryable(err) || !errors.As(err, &e) || e.Attempts != 1 || e.Status != 409 || e.Key != key {
		t.Fatalf("conflict: %#v", err)
	}

	// A key the operation's keyFormat refuses.
	_, err = c.CreatePayment(ctx, paymentRequest(5), idemclient.WithIdempotencyKey("not-a-uuid"))
	if !idemclient.IsKeyError(err) || idemclient.StatusOf(err) != 400 {
		t.Fatalf("malformed key: %v", err)
	}

	// The key the spec declares as a header parameter is the call's key.
	k2 := harness.NewKey()
	req := paymentRequest(800)
	req.IdempotencyKey = &k2
	res, err = c.CreatePayment(ctx, req)
	if _, err := createdPayment(res, err); err != nil || res.Key != k2 {
		t.Fatalf("key from the request: %+v, %v", res, err)
	}

	// A declared 422, a final business decision, is a response, not an error.
	refund, err := c.CreateRefund(ctx, api.CreateRefundRequest{PaymentID: first.ID, Body: api.NewRefund{Amount: 100000}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := refund.Response.(api.CreateRefund422Response); !ok || refund.Key == "" {
		t.Fatalf("refund beyond the captured amount: %T %+v", refund.Response, refund)
	}

	// A GET, and a declared 404.
	got, err := c.GetPayment(ctx, api.GetPaymentRequest{PaymentID: first.ID})
	if p, ok := got.Response.(api.GetPayment200Response); err != nil || !ok || p.Body.ID != first.ID {
		t.Fatalf("get: %+v, %v", got, err)
	}
	missing, err := c.GetPayment(ctx, api.GetPaymentRequest{PaymentID: "pay_none"})
	if _, ok := missing.Response.(api.GetPayment404Response); err != nil || !ok {
		t.Fatalf("get a missing payment: %+v, %v", missing, err)
	}
	limit := int32(1)
	list, err := c.ListPayments(ctx, api.ListPaymentsRequest{Limit: &limit})
	if l, ok := list.Response.(api.ListPayments200Response); err != nil || !ok || len(l.Body.Payments) != 1 {
		t.Fatalf("list with limit 1: %+v, %v", list, err)
	}
}
