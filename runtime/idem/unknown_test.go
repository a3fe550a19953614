package idem_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// How a cutConn breaks.
const (
	cutNone = iota
	// cutBefore: the statement never reaches the server whole (a message
	// header goes out, then the connection closes): the server runs none
	// of it, but the client cannot know.
	cutBefore
	// cutAfter: the statement reaches the server and runs, its answer is
	// read off the wire up to ReadyForQuery and dropped, and the connection
	// closes: what a client sees of a primary killed just after it
	// committed.
	cutAfter
)

// cutConn is a connection to PostgreSQL that a test breaks at its n-th
// write of a statement (a Bind or Query message; the Parse and Describe
// round trips of pgx's statement cache do not count) after arm.
type cutConn struct {
	net.Conn
	mu   sync.Mutex
	mode int
	skip int // statement writes to let through first
	cut  bool
	// lost: the cut statement went out (cutAfter); every read from then on
	// drains the server's answer, hands none of it over, and fails.
	lost    bool
	drainMu sync.Mutex // one reader drains; pgconn may read from two goroutines
}

func (c *cutConn) arm(mode, nth int) {
	c.mu.Lock()
	c.mode, c.skip = mode, nth-1
	c.mu.Unlock()
}

// sendsStatement reports whether b, a run of frontend messages, holds a
// Bind or a simple Query.
func sendsStatement(b []byte) bool {
	for len(b) >= 5 {
		if b[0] == 'B' || b[0] == 'Q' {
			return true
		}
		n := int(binary.BigEndian.Uint32(b[1:5]))
		if n < 4 || n+1 > len(b) {
			return false
		}
		b = b[n+1:]
	}
	return false
}

func (c *cutConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	mode := c.mode
	if mode != cutNone && sendsStatement(b) {
		if c.skip > 0 {
			c.skip--
			mode = cutNone
		} else {
			c.mode, c.cut = cutNone, true
		}
	} else {
		mode = cutNone
	}
	c.mu.Unlock()
	switch mode {
	case cutBefore:
		n, _ := c.Conn.Write(b[:5])
		c.Conn.Close()
		return n, &net.OpError{Op: "write", Net: "tcp", Err: errors.New("injected: connection cut before the statement arrived")}
	case cutAfter:
		// The answer is drained by the next read, not here: a write that
		// takes long makes pgconn start a background reader, which would
		// race the drain for the server's bytes.
		c.mu.Lock()
		c.lost = true
		c.mu.Unlock()
	}
	return c.Conn.Write(b)
}

func (c *cutConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	lost := c.lost
	c.mu.Unlock()
	if !lost {
		return c.Conn.Read(b)
	}
	c.drainMu.Lock()
	defer c.drainMu.Unlock()
	err := c.drain() // fails at once on a connection an earlier read closed
	c.Conn.Close()
	if err == nil {
		err = errors.New("injected: connection lost after the statement ran")
	}
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: err}
}

// drain reads the server's answer up to ReadyForQuery.
func (c *cutConn) drain() error {
	hdr := make([]byte, 5)
	for {
		if _, err := io.ReadFull(c.Conn, hdr); err != nil {
			return err
		}
		if _, err := io.CopyN(io.Discard, c.Conn, int64(binary.BigEndian.Uint32(hdr[1:]))-4); err != nil {
			return err
		}
		if hdr[0] == 'Z' {
			return nil
		}
	}
}

// cutPool is a pool on db's schema whose connections are cutConns.
func cutPool(t *testing.T, db *pgtest.DB) *pgxpool.Pool {
	return poolOn(t, db, func(c *pgxpool.Config) {
		c.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &cutConn{Conn: conn}, nil
		}
	})
}

// cutterOf returns the cutConn under tx.
func cutterOf(tx pgx.Tx) *cutConn {
	return tx.Conn().PgConn().Conn().(*cutConn)
}

// TestUnknownCommit breaks the connection of a request's transaction in its
// last round trip — the outcome and COMMIT — as a primary that is killed or
// fails over does, once before the COMMIT reaches the server and once after
// it committed. Either way the client gets 503 IDEMPOTENT_REQUEST_OUTCOME_UNKNOWN
// with Retry-After, never a 2xx nor a plain failure, and its retry replays
// what committed or runs again when nothing did. In lease mode the claim of
// a COMMIT that did not land is UNKNOWN at once, so the retry takes it over
// without waiting for the lease, and the recovery hook decides before the
// handler runs again; the same holds when the connection is lost while the
// handler runs (after an external effect, say).
func TestUnknownCommit(t *testing.T) {
	t.Parallel()
	type tcase struct {
		name  string
		mode  idem.Mode
		plain bool // one statement per round trip: the outcome, then COMMIT
		cut   int
		// inHandler: the cut hits the handler's own next statement.
		inHandler bool
		landed    bool // the transaction committed before the cut
	}
	var cases []tcase
	for _, mode := range []idem.Mode{idem.ModeAtomic, idem.ModeLease} {
		for _, plain := range []bool{false, true} {
			for _, cut := range []int{cutBefore, cutAfter} {
				name := string(mode) + "/" + map[bool]string{false: "pipelined", true: "plain"}[plain] +
					"/" + map[int]string{cutBefore: "lost before commit", cutAfter: "lost after commit"}[cut]
				cases = append(cases, tcase{name: name, mode: mode, plain: plain, cut: cut, landed: cut == cutAfter})
			}
		}
		cases = append(cases, tcase{name: string(mode) + "/lost while the handler runs", mode: mode, cut: cutBefore, inHandler: true})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := testPolicy(tc.mode)
			p.Lease = time.Minute // a retry that had to wait for it would time out
			var hooks atomic.Int64
			var hookRuns atomic.Int64 // handler runs when the hook was called
			var e *env
			hook := func(ctx context.Context, rec idem.Recovery) (idem.Decision, error) {
				hooks.Add(1)
				hookRuns.Store(e.runs.Load())
				return idem.NotExecuted(), nil
			}
			db := pgtest.New(t, pgtest.Options{Migrations: businessSchema})
			pool := cutPool(t, db)
			var edb idem.DB = pool
			if tc.plain {
				edb = plainDB{pool}
			}
			e = newEnvWith(t, db, edb, p, idem.Config{
				Recover: map[string]idem.RecoverFunc{"createPayment": hook},
				Hooks:   idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}},
			})
			var armed atomic.Bool
			e.handle("cut", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				if armed.Swap(false) {
					c := cutterOf(tx)
					if tc.inHandler {
						c.arm(tc.cut, 1)
						if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
							return nil, err
						}
						t.Error("the handler's statement survived the cut")
					}
					nth := 1
					if tc.plain && tc.cut == cutAfter {
						nth = 2 // the outcome, then COMMIT
					}
					c.arm(tc.cut, nth)
				}
				return &idem.Response{Status: 201, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("paid")}, nil
			})
			key := newKey()
			armed.Store(true)
			r := e.post(key, payReq{Amount: 7, Behave: "cut"})
			reason := idemproblem.ReasonOutcomeUnknown
			if tc.inHandler && tc.mode == idem.ModeAtomic {
				// Nothing committed and nothing acted outside: a plain
				// failure, which a retry runs again.
				reason = idemproblem.ReasonDatabaseDown
			}
			if m := r.problem(t); r.Status != 503 || m["reason"] != reason {
				t.Errorf("first answer: %d %s, want 503 %s", r.Status, r.Body, reason) // and go on: what does the retry do?
			}
			if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 1 {
				t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
			}
			state := e.state(key)
			switch {
			case tc.landed && state != idem.StateCompleted:
				t.Errorf("the COMMIT landed, the record is %s", state)
			case !tc.landed && tc.mode == idem.ModeLease && state != idem.StateUnknown:
				t.Errorf("the COMMIT did not land: the claim is %s, want UNKNOWN", state)
			case !tc.landed && tc.mode == idem.ModeAtomic && state != "none" && state != idem.StateFailedRetryable:
				t.Errorf("the COMMIT did not land: the record is %s", state)
			}

			r = e.post(key, payReq{Amount: 7, Behave: "cut"})
			if r.Status != 201 || string(r.Body) != "paid" {
				t.Fatalf("retry: %d %s", r.Status, r.Body)
			}
			replayed := r.Header.Get("Idempotent-Replayed") == "true"
			runs := e.runs.Load()
			if tc.landed {
				if !replayed || runs != 1 || hooks.Load() != 0 {
					t.Errorf("retry of a committed outcome: replayed %v, handler runs %d, hook calls %d; want a replay of the one run",
						replayed, runs, hooks.Load())
				}
			} else {
				if replayed || runs != 2 {
					t.Errorf("retry of an outcome that did not commit: replayed %v, handler runs %d; want a second run", replayed, runs)
				}
				if tc.mode == idem.ModeLease && (hooks.Load() != 1 || hookRuns.Load() != 1) {
					t.Errorf("lease mode: recovery hook called %d times, after %d runs; want once, before the second run",
						hooks.Load(), hookRuns.Load())
				}
			}
			if n := e.payments(); n != 1 {
				t.Errorf("%d payments committed, want 1", n)
			}
		})
	}
}
