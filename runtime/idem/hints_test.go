package idem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// logBuffer collects an engine's JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(&lockedWriter{mu: &l.mu, w: &l.buf}, nil))
}

// lines returns the lines logged so far with message msg.
func (l *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// hangUpEnv is an atomic-mode service whose log lines and outcomes the
// hang-up tests read.
func hangUpEnv(t *testing.T) (*env, *logBuffer, <-chan idem.Outcome) {
	logs := &logBuffer{}
	outcomes := make(chan idem.Outcome, 10)
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{Logger: logs.logger(),
		Hooks: idem.Hooks{OnOutcome: func(_ context.Context, _ *idem.Operation, o idem.Outcome) { outcomes <- o }}})
	return e, logs, outcomes
}

// nextOutcome is the next outcome Hooks.OnOutcome sent on ch, once the
// engine has written (or tried to write) the response of a request whose
// client hung up.
func nextOutcome(t *testing.T, ch <-chan idem.Outcome) idem.Outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("no outcome for the request whose client hung up")
		return idem.Outcome{}
	}
}

// TestHandledErrorWithoutSavepoint: a handler catches its statement's
// unique violation and answers the declared 409 (a replayed status). The
// statement aborted its transaction, so the 409 cannot be stored with it:
// the client gets a 500 whose detail says so, and the request's log line
// says what happened and names the fix (a savepoint, tx.Begin) instead of
// the bare "store outcome: ... (SQLSTATE 25P02)". The same handler with
// the statement in a savepoint has its 409 stored and replayed. Both
// modes, pipelined and one statement per round trip.
func TestHandledErrorWithoutSavepoint(t *testing.T) {
	t.Parallel()
	// duplicate inserts the row the handler just inserted again, through q
	// (tx or a savepoint of it), and answers 409 on the unique violation.
	duplicate := func(ctx context.Context, tx pgx.Tx, q pgx.Tx) (*idem.Response, error) {
		var id int
		if err := tx.QueryRow(ctx, "SELECT max(id) FROM payments").Scan(&id); err != nil {
			return nil, err
		}
		_, err := q.Exec(ctx, "INSERT INTO payments (id, tenant, idem_key, amount) VALUES ($1, '', '', 1)", id)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23505" {
			return nil, fmt.Errorf("want a unique violation, got %w", err)
		}
		return &idem.Response{Status: 409, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"error":"duplicate"}`)}, nil
	}
	for _, mode := range []idem.Mode{idem.ModeAtomic, idem.ModeLease} {
		for _, plain := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/plain=%v", mode, plain), func(t *testing.T) {
				t.Parallel()
				logs := &logBuffer{}
				e := newEnvDB(t, plain, testPolicy(mode), idem.Config{Logger: logs.logger()})
				e.handle("unsaved", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
					return duplicate(ctx, tx, tx)
				})
				e.handle("savepoint", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
					sp, err := tx.Begin(ctx)
					if err != nil {
						return nil, err
					}
					resp, err := duplicate(ctx, tx, sp)
					if rerr := sp.Rollback(ctx); rerr != nil {
						return nil, rerr
					}
					return resp, err
				})

				r := e.post(newKey(), payReq{Amount: 1, Behave: "unsaved"})
				r.wantProblem(t, 500, idemproblem.CodeInternal, idemproblem.ReasonInternal)
				if d, _ := r.problem(t)["detail"].(string); !strings.Contains(d, "a statement of the service's transaction failed") {
					t.Errorf("the 500's detail %q does not say why the response could not be stored", d)
				}
				lines := logs.lines(t, "idem: request")
				if len(lines) != 1 {
					t.Fatalf("%d request lines, want 1: %v", len(lines), lines)
				}
				msg, _ := lines[0]["error"].(string)
				for _, want := range []string{`operation "createPayment"`, "answered 409 after a statement of its transaction had failed", "savepoint", "tx.Begin(ctx)", "25P02"} {
					if !strings.Contains(msg, want) {
						t.Errorf("the request's log line says %q; want it to hold %q", msg, want)
					}
				}

				key := newKey()
				if r := e.post(key, payReq{Amount: 1, Behave: "savepoint"}); r.Status != 409 || r.Header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("with a savepoint: %d %s, want the handler's 409", r.Status, r.Body)
				}
				if r := e.post(key, payReq{Amount: 1, Behave: "savepoint"}); r.Status != 409 || r.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("with a savepoint, again: %d %s, want the 409 replayed", r.Status, r.Body)
				}
			})
		}
	}
}

// TestSlowAtomicHandlerHint: an atomic handler that runs past
// Config.SlowAtomicHandler is logged once per operation, however many do,
// with the advice to use lease mode and a recovery hook; a lease-mode one
// never is, nor one under the threshold. A threshold of 1 ns makes every
// handler slow, one of an hour none, whatever the machine's load.
func TestSlowAtomicHandlerHint(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode      idem.Mode
		threshold time.Duration
		want      int
	}{
		{idem.ModeAtomic, time.Nanosecond, 1},
		{idem.ModeAtomic, time.Hour, 0},
		{idem.ModeAtomic, -1, 0},
		{idem.ModeLease, time.Nanosecond, 0},
	} {
		t.Run(fmt.Sprintf("%s/%v", c.mode, c.threshold), func(t *testing.T) {
			t.Parallel()
			logs := &logBuffer{}
			e := newEnv(t, testPolicy(c.mode), idem.Config{Logger: logs.logger(), SlowAtomicHandler: c.threshold})
			for range 3 {
				if r := e.post(newKey(), payReq{Amount: 1}); r.Status != 201 {
					t.Fatalf("POST: %d %s", r.Status, r.Body)
				}
			}
			hints := logs.lines(t, "idem: slow atomic handler")
			if len(hints) != c.want {
				t.Fatalf("%d slow-handler lines after 3 requests, want %d: %v", len(hints), c.want, hints)
			}
			if c.want == 1 {
				h := hints[0]
				advice, _ := h["hint"].(string)
				if h["operation"] != e.op.ID || h["level"] != "WARN" || !strings.Contains(advice, "mode: lease") || !strings.Contains(advice, "recovery hook") {
					t.Errorf("the hint %v does not name the operation and advise lease mode with a recovery hook", h)
				}
			}
		})
	}
}

// TestClientHangUpIsNotATimeout: the client of an atomic request hangs up
// while its handler runs; the handler's next statement fails with pgx's
// "timeout: context already done: context canceled". The request is
// reported as a hang-up (499, ErrClientGone, its log line saying the
// client closed the connection and that lease mode keeps a handler that
// calls the outside world from running twice), not as a 500 timeout. The
// key stays FAILED_RETRYABLE: the retry runs the handler again.
func TestClientHangUpIsNotATimeout(t *testing.T) {
	t.Parallel()
	e, logs, outcomes := hangUpEnv(t)
	started := make(chan struct{}, 1)
	var calls atomic.Int32
	e.handle("hangup", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
		if calls.Add(1) == 1 {
			started <- struct{}{}
			<-ctx.Done() // the client hangs up
		}
		if _, err := tx.Exec(ctx, "UPDATE payments SET amount = amount"); err != nil {
			return nil, fmt.Errorf("refund: %w", err)
		}
		return &idem.Response{Status: 201, Body: []byte(`{"refunded":true}`)}, nil
	})

	key := newKey()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/accounts/acc-1/payments", strings.NewReader(`{"amount":1,"behave":"hangup"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	go func() {
		<-started
		cancel()
	}()
	if resp, err := e.srv.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the request was answered (%d) although its client hung up", resp.StatusCode)
	}
	o := nextOutcome(t, outcomes)
	if o.Status != 499 || !errors.Is(o.Err, idem.ErrClientGone) || o.Label() != "failed_retryable" {
		t.Errorf("outcome %d %s (%v), want 499 failed_retryable wrapping ErrClientGone", o.Status, o.Label(), o.Err)
	}
	lines := logs.lines(t, "idem: request")
	if len(lines) != 1 {
		t.Fatalf("%d request lines, want 1: %v", len(lines), lines)
	}
	msg, _ := lines[0]["error"].(string)
	if !strings.Contains(msg, "the client closed the connection while the handler ran") || !strings.Contains(msg, "mode: lease") ||
		strings.HasPrefix(msg, "timeout") || lines[0]["status"] != float64(499) {
		t.Errorf("the request's log line (status %v) says %q; want a hang-up with the lease-mode advice", lines[0]["status"], msg)
	}
	if st := e.state(key); st != idem.StateFailedRetryable {
		t.Errorf("the key is %s after the hang-up, want FAILED_RETRYABLE", st)
	}
	if r := e.post(key, `{"amount":1,"behave":"hangup"}`); r.Status != 201 || calls.Load() != 2 {
		t.Errorf("retry: %d after %d handler calls, want 201 from a second run", r.Status, calls.Load())
	}
}

// TestHangUpBeforeTheHandler: a client hangs up while the engine's own
// statement for its request runs (a lease claim, waiting for a row lock
// another transaction holds on the key's record). The statement fails with
// "context canceled": that is the client's going away (499, ErrClientGone
// on the request's log line), not the engine failing (500) nor a timeout.
func TestHangUpBeforeTheHandler(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	outcomes := make(chan idem.Outcome, 10)
	e := newEnv(t, testPolicy(idem.ModeLease), idem.Config{Logger: logs.logger(),
		Hooks: idem.Hooks{OnOutcome: func(_ context.Context, _ *idem.Operation, o idem.Outcome) { outcomes <- o }}})
	var calls atomic.Int32
	e.handle("fails-once", func(context.Context, pgx.Tx) (*idem.Response, error) {
		if calls.Add(1) == 1 {
			return nil, errors.New("the first attempt fails")
		}
		return &idem.Response{Status: 201, Body: []byte("paid")}, nil
	})
	key := newKey()
	body := `{"amount":1,"behave":"fails-once"}`
	if r := e.post(key, body); r.Status != 500 {
		t.Fatalf("first attempt: %d, want 500", r.Status)
	}
	<-outcomes
	// The retry's claim must update the record, which this transaction
	// holds locked until the client has gone.
	lock, err := e.db.Pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(context.Background())
	if _, err := lock.Exec(context.Background(), "SELECT 1 FROM idem_records WHERE idempotency_key = $1 FOR UPDATE", key); err != nil {
		t.Fatal(err)
	}
	// The claims this lock holds up: pg_stat_activity is the cluster's,
	// shared with the tests that run beside this one.
	var lockPID int32
	if err := lock.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&lockPID); err != nil {
		t.Fatal(err)
	}
	blocked := `FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/accounts/acc-1/payments", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	go func() {
		// Hang up once the claim waits for the lock.
		for e.count(`SELECT count(*) `+blocked, lockPID) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	if resp, err := e.srv.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the request was answered (%d) although its client hung up", resp.StatusCode)
	}
	o := nextOutcome(t, outcomes)
	if o.Status != 499 || !errors.Is(o.Err, idem.ErrClientGone) || !errors.Is(o.Err, context.Canceled) {
		t.Errorf("outcome %d %s (%v), want 499 wrapping ErrClientGone", o.Status, o.Label(), o.Err)
	}
	lines := logs.lines(t, "idem: request")
	last := lines[len(lines)-1]
	if msg, _ := last["error"].(string); !strings.Contains(msg, "the client closed the connection before its request was decided") ||
		last["status"] != float64(499) {
		t.Errorf("the request's log line (status %v) says %q; want a hang-up", last["status"], msg)
	}
	// pgx's default context handler closes the connection without sending
	// PostgreSQL a CancelRequest: the claim's statement, and the COMMIT
	// pipelined behind it, still wait for the lock on the server and would
	// commit a claim nobody runs once it is released. That is safe (the key
	// answers 409 in flight until the claim's lease lapses, then a retry
	// recovers it), but it is not what this test is about: cancel the
	// orphan as a pool that sends CancelRequests would, and wait until it
	// has gone before the lock is released.
	e.count(`SELECT count(pg_cancel_backend(pid)) `+blocked, lockPID)
	for e.count(`SELECT count(*) `+blocked, lockPID) != 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := lock.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := e.post(key, body); r.Status != 201 || calls.Load() != 2 {
		t.Errorf("retry: %d after %d handler calls, want 201 from a second run", r.Status, calls.Load())
	}
}

// TestPlainHangUp: a GET (through Engine.Plain) whose Server method fails
// because its client hung up is reported as a hang-up too: outcome failed,
// status 499, ErrClientGone on the request's log line.
func TestPlainHangUp(t *testing.T) {
	t.Parallel()
	e, logs, outcomes := hangUpEnv(t)
	started := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /things", func(w http.ResponseWriter, r *http.Request) {
		w, r, done := e.eng.Plain(w, r, "listThings")
		defer done()
		close(started)
		<-r.Context().Done()
		_, err := e.db.Exec(r.Context(), "SELECT 1")
		e.eng.WriteError(w, r, idem.ProfileDefault, fmt.Errorf("list things: %w", err))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/things", nil)
	go func() {
		<-started
		cancel()
	}()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("answered (%d) although the client hung up", resp.StatusCode)
	}
	o := nextOutcome(t, outcomes)
	if o.Status != 499 || o.Label() != "failed" || !errors.Is(o.Err, idem.ErrClientGone) {
		t.Errorf("outcome %d %s (%v), want 499 failed wrapping ErrClientGone", o.Status, o.Label(), o.Err)
	}
	lines := logs.lines(t, "idem: request")
	if len(lines) != 1 || !strings.Contains(fmt.Sprint(lines[0]["error"]), "the client closed the connection") {
		t.Errorf("log lines %v; want the request's line saying the client hung up", lines)
	}
}
