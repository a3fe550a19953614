package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// recorder is an Observer, an OnOutcome, an OnAudit and a slog handler's
// buffer: everything the engine says about requests, in order.
type recorder struct {
	mu       sync.Mutex
	events   []string // "request", "phase:claim", "end:claim", "done"
	outcomes []idem.Outcome
	audits   []idem.Audit
	logs     bytes.Buffer
}

type ctxMark struct{}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
}

func (r *recorder) Request(ctx context.Context, op *idem.Operation) (context.Context, func(idem.Outcome)) {
	r.add("request")
	return context.WithValue(ctx, ctxMark{}, "observed"), func(o idem.Outcome) { r.add("done:" + o.Label()) }
}

func (r *recorder) Phase(ctx context.Context, op *idem.Operation, p idem.Phase) (context.Context, func(error)) {
	r.add(string(p))
	return ctx, func(err error) {
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			r.add("end:" + string(p) + ":error")
			return
		}
		r.add("end:" + string(p))
	}
}

// take returns and forgets what was recorded.
func (r *recorder) take() (events []string, outcomes []idem.Outcome, audits []idem.Audit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events, outcomes, audits = r.events, r.outcomes, r.audits
	r.events, r.outcomes, r.audits = nil, nil, nil
	return
}

func (r *recorder) config() idem.Config {
	return idem.Config{
		Observers: []idem.Observer{r},
		Logger:    slog.New(slog.NewJSONHandler(&lockedWriter{mu: &r.mu, w: &r.logs}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Hooks: idem.Hooks{
			OnOutcome: func(_ context.Context, _ *idem.Operation, o idem.Outcome) {
				r.mu.Lock()
				r.outcomes = append(r.outcomes, o)
				r.mu.Unlock()
			},
			OnAudit: func(_ context.Context, a idem.Audit) {
				r.mu.Lock()
				r.audits = append(r.audits, a)
				r.mu.Unlock()
			},
		},
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestObservability drives one key through execution, replay, conflict,
// failure and expiry, over both transports, and checks what the observer,
// the outcome hook, the audit hook and the log saw: phases in order, the
// handler running in the observer's context, outcome labels, attempts and
// fences, the key's hash, and no raw key or body anywhere in the log.
func TestObservability(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			rec := &recorder{}
			e := newEnvDB(t, plain, testPolicy(idem.ModeAtomic), rec.config())
			var handlerSaw any
			var failed bool
			e.handle("fail-once", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				if !failed {
					failed = true
					return nil, errors.New("secret database detail")
				}
				return &idem.Response{Status: 201, Body: []byte(`{}`)}, nil
			})
			e.handle("observed", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				handlerSaw = ctx.Value(ctxMark{})
				return &idem.Response{Status: 201, Body: []byte(`{"ok":true}`)}, nil
			})
			k1, k2, k3 := newKey(), newKey(), newKey()
			secret := "body-secret-7f3a"
			hash := idem.Key{Operation: "createPayment", Value: k1}.Hash()

			// 1. executed
			if r := e.post(k1, payReq{Amount: 10, Behave: "observed", Note: secret}); r.Status != 201 {
				t.Fatalf("first: %d %s", r.Status, r.Body)
			}
			ev, outs, audits := rec.take()
			want := []string{"request", "read", "end:read", "claim", "end:claim", "handler", "end:handler", "store", "end:store", "done:executed"}
			if strings.Join(ev, " ") != strings.Join(want, " ") {
				t.Errorf("executed: events\n got %v\nwant %v", ev, want)
			}
			if handlerSaw != "observed" {
				t.Errorf("the handler ran with another context than the observer's (saw %v)", handlerSaw)
			}
			o := outs[0]
			if o.Label() != "executed" || o.Attempt != 1 || o.Fence != 1 || o.KeyHash != hash || o.Bytes != len(`{"ok":true}`) || len(audits) != 0 {
				t.Errorf("executed: outcome %+v (label %s), audits %v", o, o.Label(), audits)
			}

			// 2. replayed: audited, with when the response was stored
			if r := e.post(k1, payReq{Amount: 10, Behave: "observed", Note: secret}); r.Status != 201 {
				t.Fatalf("replay: %d", r.Status)
			}
			ev, outs, audits = rec.take()
			if want := "request read end:read replay end:replay done:replayed"; strings.Join(ev, " ") != want {
				t.Errorf("replayed: events %v, want %s", ev, want)
			}
			o = outs[0]
			if o.Label() != "replayed" || o.Attempt != 0 || o.StoredAt.IsZero() || o.KeyHash != hash {
				t.Errorf("replayed: outcome %+v", o)
			}
			if len(audits) != 1 || audits[0].Kind != idem.AuditReplay || audits[0].KeyHash != hash || audits[0].Status != 201 ||
				audits[0].Operation != "createPayment" || audits[0].StoredAt.IsZero() || !strings.HasPrefix(audits[0].RemoteAddr, "127.0.0.1:") {
				t.Errorf("replayed: audits %+v", audits)
			}

			// 3. conflict: audited
			if r := e.post(k1, payReq{Amount: 11, Note: secret}); r.Status != 409 {
				t.Fatalf("conflict: %d", r.Status)
			}
			_, outs, audits = rec.take()
			if outs[0].Label() != "conflict" || len(audits) != 1 || audits[0].Kind != idem.AuditConflict || audits[0].Status != 409 || audits[0].KeyHash != hash {
				t.Errorf("conflict: outcome %s, audits %+v", outs[0].Label(), audits)
			}

			// 4. a handler error: failed_retryable, the cause logged at Error
			if r := e.post(k2, payReq{Amount: 12, Behave: "fail-once", Note: secret}); r.Status != 500 {
				t.Fatalf("error: %d", r.Status)
			}
			ev, outs, _ = rec.take()
			if outs[0].Label() != "failed_retryable" || !strings.Contains(strings.Join(ev, " "), "handler end:handler:error") {
				t.Errorf("error: label %s, events %v", outs[0].Label(), ev)
			}
			// ... and run again: attempt 2, fence 2
			if r := e.post(k2, payReq{Amount: 12, Behave: "fail-once", Note: secret}); r.Status != 201 {
				t.Fatalf("retry: %d %s", r.Status, r.Body)
			}
			_, outs, _ = rec.take()
			if o := outs[0]; o.Label() != "executed" || o.Attempt != 2 || o.Fence != 2 {
				t.Errorf("retry: %+v (%s)", o, o.Label())
			}

			// 5. an expired key runs again as a new operation
			if r := e.post(k3, payReq{Amount: 13, Note: secret}); r.Status != 201 {
				t.Fatalf("k3: %d", r.Status)
			}
			e.exec(`UPDATE idem_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, k3)
			rec.take()
			if r := e.post(k3, payReq{Amount: 14, Note: secret}); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("expired: %d %s", r.Status, r.Header)
			}
			_, outs, _ = rec.take()
			if o := outs[0]; o.Label() != "expired_executed" || !o.Expired || o.Attempt != 2 {
				t.Errorf("expired: %+v (%s)", o, o.Label())
			}

			// The log: one line per request with the four attributes, the
			// handler's error at Error, never a raw key or the body.
			rec.mu.Lock()
			logs := rec.logs.String()
			rec.mu.Unlock()
			for _, raw := range []string{k1, k2, k3, secret} {
				if strings.Contains(logs, raw) {
					t.Errorf("the log contains %q:\n%s", raw, logs)
				}
			}
			lines := strings.Split(strings.TrimSpace(logs), "\n")
			var sawError bool
			for _, line := range lines {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				for _, a := range []string{"operation", "outcome", "key_hash", "attempt"} {
					if _, ok := m[a]; !ok {
						t.Errorf("log line without %s: %s", a, line)
					}
				}
				if m["outcome"] == "failed_retryable" {
					sawError = m["level"] == "ERROR" && strings.Contains(fmt.Sprint(m["error"]), "secret database detail")
				}
			}
			if len(lines) != 7 || !sawError {
				t.Errorf("want 7 log lines (one per request), the handler error at ERROR with its cause; got %d:\n%s", len(lines), logs)
			}
		})
	}
}

// timeoutReader fails as a connection whose read deadline passed.
type timeoutReader struct{}

func (timeoutReader) Read([]byte) (int, error) {
	return 0, &net.OpError{Op: "read", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5432}, Err: os.ErrDeadlineExceeded}
}

// TestBodyReadErrors: a body that cannot be read (here, a read deadline
// passing) is a 408 problem without the network error's text, and leaves
// no record.
func TestBodyReadErrors(t *testing.T) {
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{})
	r := httptest.NewRequest("POST", "/accounts/acc-1/payments", io.MultiReader(strings.NewReader(`{"amount":`), timeoutReader{}))
	r.Header.Set("Idempotency-Key", newKey())
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	e.eng.Serve(w, r, e.op, e.prepare)
	res := result{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
	res.wantProblem(t, http.StatusRequestTimeout, idemproblem.CodeRequestTimeout, idemproblem.ReasonBodyUnreadable)
	for _, leak := range []string{"10.1.2.3", "5432", "deadline", "i/o timeout", "read tcp"} {
		if bytes.Contains(res.Body, []byte(leak)) {
			t.Errorf("the problem shows %q: %s", leak, res.Body)
		}
	}
	if n := e.records(); n != 0 {
		t.Errorf("%d records after an unreadable body, want 0", n)
	}
}
