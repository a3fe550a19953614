package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestNoInternalsInResponses runs the service as a process whose gateway
// address nobody listens on, and whose database connection goes through a
// proxy the test cuts: the 502 and the failing /healthz are problem+json
// that name neither addresses nor driver messages, and the causes are in
// the service's log.
func TestNoInternalsInResponses(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
	proxy := newTCPProxy(t, db.URL)
	deadGateway, err := harness.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	svc := startService(t, proxy.dbURL, "http://"+deadGateway)
	c := &harness.Client{URL: svc.url(), HTTP: &http.Client{Timeout: 30 * time.Second}}
	_, gwPort, _ := net.SplitHostPort(deadGateway)
	_, proxyPort, _ := net.SplitHostPort(proxy.addr)
	u, _ := url.Parse(db.URL)
	leaks := []string{gwPort, proxyPort, "dial", "refused", "127.0.0.1", "Post ", u.User.Username(), db.Schema, "pgx", "SQLSTATE"}

	ex := mustDo(t, c, "POST", "/payments", harness.NewKey(), newPayment(1999))
	p, ok := ex.Problem()
	// The gateway client cannot tell a refused connection from a lost
	// answer, so it reports a timeout; either code is right.
	if ex.Status != 502 || !ok || (p.Code != "gateway_unavailable" && p.Code != "gateway_timeout") || p.Status != 502 {
		t.Fatalf("dead gateway: got %s, want a 502 problem+json with a gateway code", ex.Format())
	}
	for _, leak := range leaks {
		if leak != "" && strings.Contains(string(ex.RespBody), leak) {
			t.Errorf("the 502 body shows %q: %s", leak, ex.RespBody)
		}
	}
	waitFor(t, "the gateway's error in the service log", func() bool {
		return strings.Contains(svc.proc.Logs(), "connection refused")
	})

	proxy.cut()
	resp, err := http.Get(svc.url() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("database cut: /healthz %d %s %s, want 503 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var hp harness.Problem
	if err := json.Unmarshal(body, &hp); err != nil || hp.Status != 503 {
		t.Fatalf("/healthz body is not a 503 problem: %q", body)
	}
	// What the driver said is in the log, and not in the body.
	waitFor(t, "the failed ping in the service log", func() bool {
		return strings.Contains(svc.proc.Logs(), "healthz: database ping")
	})
	logs := svc.proc.Logs()
	cause := logs[strings.Index(logs, "healthz: database ping"):]
	cause = cause[strings.Index(cause, "err=")+len("err="):]
	cause = strings.Trim(strings.SplitN(cause, "\n", 2)[0], `"`)
	if cause == "" || strings.Contains(string(body), cause) {
		t.Errorf("/healthz shows the cause %q: %s", cause, body)
	}
	for _, leak := range leaks {
		if leak != "" && strings.Contains(string(body), leak) {
			t.Errorf("/healthz shows %q: %s", leak, body)
		}
	}
}

// TestSlowClientsAreCutOff: a client that trickles its body is disconnected
// once the read timeout passes, a body announced over the limit gets 413
// before it is sent, a header block over the limit gets 431, a body over
// the limit 413, and the service keeps serving others meanwhile.
func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
	svc := startService(t, db.URL, "", "HTTP_READ_TIMEOUT=1s", "HTTP_READ_HEADER_TIMEOUT=1s")
	// A connection per request: without an idle timeout of its own the
	// server closes a kept-alive connection once it has been idle for the
	// read timeout, 1 s here, which on a busy machine races the client's
	// next request on it ("http: server closed idle connection").
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	c := &harness.Client{URL: svc.url(), HTTP: hc}

	t.Run("trickled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", svc.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// A Content-Length within the body limit: one over it is refused
		// before the body is read (see "announced over the limit").
		fmt.Fprintf(conn, "POST /payments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\n\r\n{", harness.NewKey(), 32<<10)
		// Trickle a byte a second until the server hangs up (or 30 s pass,
		// which fails the test).
		closed := make(chan string, 1)
		go func() {
			b, _ := io.ReadAll(conn) // returns when the server closes
			closed <- string(b)
		}()
		var answer string
	trickle:
		for i := 0; ; i++ {
			select {
			case answer = <-closed:
				break trickle
			case <-time.After(time.Second):
				if i == 30 {
					t.Fatal("the server kept a trickling upload open for 30 s with HTTP_READ_TIMEOUT=1s")
				}
				_, _ = conn.Write([]byte(" "))
			}
		}
		if answer != "" && !strings.HasPrefix(answer, "HTTP/1.1 408 ") {
			t.Errorf("the answer to a timed-out upload is not a 408: %q", answer)
		}
		for _, leak := range []string{"i/o timeout", "127.0.0.1", "read tcp"} {
			if strings.Contains(answer, leak) {
				t.Errorf("the answer to a timed-out upload shows %q: %q", leak, answer)
			}
		}
		// Meanwhile and afterwards the service serves.
		wantStatus(t, doRetried(t, c, "/payments", harness.NewKey(), newPayment(100)), 201)
	})

	t.Run("announced over the limit", func(t *testing.T) {
		// A body announced over HTTP_MAX_BODY_BYTES is 413 before it is
		// sent: with Expect: 100-continue the client is not told to send it.
		conn, err := net.Dial("tcp", svc.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(conn, "POST /payments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: %s\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", harness.NewKey(), 1<<20)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer before the body: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Fatalf("1 MiB announced with Expect: 100-continue: %d before the body, want 413", resp.StatusCode)
		}
	})

	t.Run("headers over the limit", func(t *testing.T) {
		status := refusedEarly(t, "GET /payments with a 64 KiB header", func() (int, error) {
			req, _ := http.NewRequest("GET", svc.url()+"/payments", nil)
			req.Header.Set("X-Padding", strings.Repeat("a", 64<<10))
			resp, err := hc.Do(req)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		})
		if status != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("64 KiB header: %d, want 431", status)
		}
	})

	t.Run("body over the limit", func(t *testing.T) {
		k := harness.NewKey()
		big := map[string]any{"amount": 100, "currency": "EUR", "description": strings.Repeat("x", 80<<10)}
		var ex *harness.Exchange
		refusedEarly(t, "POST /payments with an 80 KiB body", func() (status int, err error) {
			ex, err = c.Do(context.Background(), "POST", "/payments", k, big)
			if err != nil {
				return 0, err
			}
			return ex.Status, nil
		})
		if p, ok := ex.Problem(); ex.Status != 413 || !ok {
			t.Fatalf("80 KiB body: got %d %+v, want a 413 problem", ex.Status, p)
		}
		// No record: the key is free for a request that fits.
		wantStatus(t, doRetried(t, c, "/payments", k, newPayment(100)), 201)
		// The same bound holds on a route the engine does not serve.
		status := refusedEarly(t, "POST /payments/quote with an 80 KiB body", func() (int, error) {
			ex, err := c.Do(context.Background(), "POST", "/payments/quote", "", map[string]any{"amount": 1, "currency": "EUR", "pad": strings.Repeat("x", 80<<10)})
			if err != nil {
				return 0, err
			}
			return ex.Status, nil
		})
		if status != 413 && status != 400 {
			t.Fatalf("80 KiB body on /payments/quote: %d, want it refused", status)
		}
	})
}

// TestIdleAndWriteTimeouts: a keep-alive connection left idle is closed
// once HTTP_IDLE_TIMEOUT passes, and a response that would take longer
// than HTTP_WRITE_TIMEOUT is cut off; the payment it made is kept, and the
// client's retry with the same key gets it, charged once.
func TestIdleAndWriteTimeouts(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MigrationsTable: "payments_schema_migrations"})
	gw := gateway.New()
	gwSrv := httptest.NewServer(gw.Handler())
	t.Cleanup(gwSrv.Close)
	svc := startService(t, db.URL, gwSrv.URL, "HTTP_IDLE_TIMEOUT=1s", "HTTP_WRITE_TIMEOUT=1s")

	t.Run("idle connection", func(t *testing.T) {
		conn, err := net.Dial("tcp", svc.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("/healthz: %d (close %v), want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
		}
		// Idle now: the server hangs up after 1 s. 10 s fails the test: less
		// than HTTP_READ_TIMEOUT (15 s), which net/http would use without an
		// idle timeout.
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("an idle keep-alive connection: read %v, %v; want the server to close it (EOF)", n, err)
		}
	})

	t.Run("slow response", func(t *testing.T) {
		gw.Set(gateway.Switches{Latency: 3 * time.Second})
		defer gw.Set(gateway.Switches{})
		// A connection per request: net/http's Transport sends a request
		// with an Idempotency-Key again by itself when a reused connection
		// dies before the answer, and that second send, made once the
		// handler has finished, is answered by the replay — the cut-off
		// this subtest looks for would never reach it.
		hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		c := &harness.Client{URL: svc.url(), HTTP: hc}
		key := harness.NewKey()
		ex, err := c.Do(context.Background(), "POST", "/payments", key, newPayment(1500))
		if err == nil {
			t.Fatalf("a response slower than HTTP_WRITE_TIMEOUT reached the client: %s", ex.Format())
		}
		// The lease-mode handler was not cut off: its payment is kept and
		// a retry gets it (409 while it still runs).
		gw.Set(gateway.Switches{})
		var got *harness.Exchange
		waitFor(t, "the retry to get the payment", func() bool {
			got = mustDo(t, c, "POST", "/payments", key, newPayment(1500))
			if got.Status == 409 {
				time.Sleep(200 * time.Millisecond)
			}
			return got.Status != 409
		})
		wantStatus(t, got, 201)
		if n := chargesFor(gw, key); n != 1 {
			t.Fatalf("%d charges for the key, want 1", n)
		}
		if l := readLedger(t, db); l.count[key] != 1 {
			t.Fatalf("%d payments for the key, want 1", l.count[key])
		}
	})
}

// tcpProxy forwards connections to a PostgreSQL server until cut, after
// which it refuses new ones and has closed the old ones.
type tcpProxy struct {
	addr  string
	dbURL string // the database URL rewritten to go through the proxy
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func newTCPProxy(t *testing.T, dbURL string) *tcpProxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{addr: ln.Addr().String(), ln: ln}
	u.Host = p.addr
	p.dbURL = u.String()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			if p.dead {
				in.Close()
				out.Close()
			} else {
				p.conns = append(p.conns, in, out)
			}
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dead = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// refusedEarly sends a request the server refuses before reading all of it
// (do sends it on a new connection and returns the status) and returns the
// status it answered. The server answers and closes the connection without
// reading the rest; when the client has not finished writing by then — a
// busy machine deschedules it mid-request — its write fails with a broken
// pipe, a reset or a connection closed before an answer, and the answer
// is lost. That is the refusal too, but it says nothing of the status, so
// the request is sent again, up to ten times, until one answer is read.
func refusedEarly(t *testing.T, what string, do func() (int, error)) int {
	t.Helper()
	var err error
	for range 10 {
		var status int
		status, err = do()
		if err == nil {
			return status
		}
		// net/http reports a connection closed before any answer as
		// "server closed idle connection" (unexported), also on a new one;
		// a write still under way when the transport saw the close, as
		// net.ErrClosed ("use of closed network connection"); and when
		// the server's close reset the connection while the request was
		// still being sent, its answer can be lost in the reset: io.EOF
		// (seen on a busy machine, headers over the limit).
		if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) &&
			!strings.Contains(err.Error(), "server closed idle connection") {
			break
		}
		t.Logf("%s: %v; sending it again", what, err)
	}
	t.Fatalf("%s: %v", what, err)
	return 0
}

// doRetried sends a keyed request that fits every limit. With
// HTTP_READ_TIMEOUT=1s a busy machine can delay it past the timeout, and
// the server closes the connection unanswered, as it does a refused one;
// the client then does what the key is for and sends it again with the
// same key (refusedEarly's retries).
func doRetried(t *testing.T, c *harness.Client, path, key string, body any) *harness.Exchange {
	t.Helper()
	var ex *harness.Exchange
	refusedEarly(t, "POST "+path, func() (status int, err error) {
		if ex, err = c.Do(context.Background(), "POST", path, key, body); err != nil {
			return 0, err
		}
		return ex.Status, nil
	})
	return ex
}
