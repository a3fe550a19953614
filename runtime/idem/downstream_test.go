package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/downstream"
	"github.com/idemgen/idemgen/runtime/idem"
)

var downstreamSecret = []byte("a downstream secret of 32 bytes.")

// derivedKeys records, per call, the keys a handler derived for two call
// sites ("refund", "notify"), or the error Key returned.
type derivedKeys struct {
	mu   sync.Mutex
	seen []map[string]string
}

func (d *derivedKeys) handler(then idem.Handler) idem.Handler {
	return func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
		got := map[string]string{}
		for _, site := range []string{"refund", "notify"} {
			k, err := downstream.Key(ctx, site)
			if err != nil {
				k = "error: " + err.Error()
			}
			got[site] = k
		}
		d.mu.Lock()
		d.seen = append(d.seen, got)
		d.mu.Unlock()
		if then != nil {
			return then(ctx, tx)
		}
		b, _ := json.Marshal(got)
		return &idem.Response{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}, nil
	}
}

func (d *derivedKeys) all() []map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]map[string]string(nil), d.seen...)
}

func wantDerived(t *testing.T, tenant, key, site, got string) {
	t.Helper()
	want, err := downstream.Derive(downstreamSecret, downstream.Record{Tenant: tenant, Operation: "createPayment", Key: key}, site, downstream.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("tenant %q, site %s: derived %q, want %q", tenant, site, got, want)
	}
}

// TestDownstreamKeys: a handler run by the engine derives, for each call
// site, the key of the request's record (tenant, operation, key) under the
// engine's secret; two tenants sending one key, and two call sites, derive
// different keys; every attempt of a request derives the same ones, also
// after a crash left no record (atomic mode, where the record's creation
// time differs between the attempts); a request without a key derives none.
func TestDownstreamKeys(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeAtomic)
	p.Required = false
	cfg := idem.Config{
		DownstreamSecret: downstreamSecret,
		Scope:            func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		Hooks:            idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}},
	}
	e := newEnv(t, p, cfg)
	// another process on the same database, with its own secret's copy
	other := newEnvOn(t, e.db, p, idem.Config{DownstreamSecret: []byte(string(downstreamSecret)), Scope: cfg.Scope, Hooks: cfg.Hooks})
	var d derivedKeys
	e.handle("derive", d.handler(nil))

	t.Run("tenants and call sites", func(t *testing.T) {
		key := newKey()
		var got [2]map[string]string
		for i, tenant := range []string{"acme", "globex"} {
			r := e.post(key, payReq{Amount: 1, Behave: "derive"}, withHeader("X-Tenant", tenant))
			if r.Status != 201 {
				t.Fatalf("tenant %s: %d %s", tenant, r.Status, r.Body)
			}
			if err := json.Unmarshal(r.Body, &got[i]); err != nil {
				t.Fatal(err)
			}
			wantDerived(t, tenant, key, "refund", got[i]["refund"])
			wantDerived(t, tenant, key, "notify", got[i]["notify"])
			if got[i]["refund"] == got[i]["notify"] {
				t.Fatalf("two call sites derived one key %s", got[i]["refund"])
			}
		}
		if got[0]["refund"] == got[1]["refund"] {
			t.Fatalf("two tenants sending key %s derived one downstream key %s", key, got[0]["refund"])
		}
	})

	t.Run("every attempt", func(t *testing.T) {
		// The first attempt is cut off by a crash of its connection after
		// deriving: no record. The second, run meanwhile by another
		// process (as a client whose server died retries), derives under a
		// record created anew (another Key.Since) and fails
		// (FAILED_RETRYABLE). The third completes.
		var calls atomic.Int64
		var mu sync.Mutex
		since := map[time.Time]bool{}
		attempts := d.handler(func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
			k, _ := idem.KeyFromContext(ctx)
			mu.Lock()
			since[k.Since] = true
			mu.Unlock()
			switch calls.Add(1) {
			case 1:
				var pid int32
				if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
					return nil, err
				}
				e.started <- pid
				<-e.release
				if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
					return nil, err
				}
			case 2:
				return nil, errors.New("after the downstream call, the transaction rolls back")
			}
			return &idem.Response{Status: 201, Body: []byte("done")}, nil
		})
		e.handle("attempts", attempts)
		other.handle("attempts", attempts)
		release := e.releaseOnExit(t)
		key := newKey()
		body := payReq{Amount: 1, Behave: "attempts"}
		before := len(d.all())
		crashed := e.async(key, body, withHeader("X-Tenant", "acme"))
		pid := waitStarted(t, e)
		e.exec("SELECT pg_terminate_backend($1)", pid)
		if r := other.post(key, body, withHeader("X-Tenant", "acme")); r.Status != 500 {
			t.Fatalf("second attempt: %d %s", r.Status, r.Body)
		}
		release()
		recv(t, crashed) // whatever it answers: it may even run the third attempt itself
		if r := other.post(key, body, withHeader("X-Tenant", "acme")); r.Status != 201 || string(r.Body) != "done" {
			t.Fatalf("third attempt: %d %s", r.Status, r.Body)
		}
		seen := d.all()[before:]
		if len(seen) != 3 {
			t.Fatalf("%d attempts ran, want 3", len(seen))
		}
		for _, s := range seen {
			wantDerived(t, "acme", key, "refund", s["refund"])
			wantDerived(t, "acme", key, "notify", s["notify"])
		}
		if len(since) < 2 {
			t.Fatalf("the attempts ran under one record creation time: the test does not cover a changing one")
		}
	})

	t.Run("no key", func(t *testing.T) {
		before := len(d.all())
		if r := e.post("", payReq{Amount: 1, Behave: "derive"}); r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		s := d.all()[before]
		for site, k := range s {
			if !strings.HasPrefix(k, "error: ") || !strings.Contains(k, "carries no idempotent request") {
				t.Fatalf("site %s without a key derived %q, want ErrNoRequest", site, k)
			}
		}
	})

	t.Run("short secret", func(t *testing.T) {
		_, err := idem.New(e.db, idem.Config{DownstreamSecret: []byte("too short")})
		if err == nil || err.Error() != "idem: DownstreamSecret is 9 bytes; want at least 16 random bytes" {
			t.Fatalf("New with a 9-byte secret: %v", err)
		}
	})
}

// TestDownstreamKeyTakeover: in lease mode, the attempt that takes over a
// claim whose holder stalled derives the same keys as the holder did, in
// its recovery hook and in its handler.
func TestDownstreamKeyTakeover(t *testing.T) {
	t.Parallel()
	var d derivedKeys
	var hookKey atomic.Value
	p := testPolicy(idem.ModeLease)
	p.Lease = time.Hour // expired by hand below
	e := newEnv(t, p, idem.Config{
		DownstreamSecret: downstreamSecret,
		Recover: map[string]idem.RecoverFunc{"createPayment": func(ctx context.Context, rec idem.Recovery) (idem.Decision, error) {
			k, err := downstream.Key(ctx, "refund")
			if err != nil {
				return idem.Unknown(), err
			}
			hookKey.Store(k)
			return idem.NotExecuted(), nil
		}},
		Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}},
	})
	e.handle("once", d.handler(blockOnce(e, false)))
	release := e.releaseOnExit(t)
	key := newKey()
	stalled := e.async(key, payReq{Amount: 1, Behave: "once"})
	waitStarted(t, e)
	e.exec("UPDATE idem_records SET lease_expires_at = now() - interval '1 second'")
	r := e.post(key, payReq{Amount: 1, Behave: "once"})
	if r.Status != 201 || string(r.Body) != "second" {
		t.Fatalf("takeover: %d %s", r.Status, r.Body)
	}
	release()
	recv(t, stalled).wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENCY_LEASE_LOST")
	seen := d.all()
	if len(seen) != 2 {
		t.Fatalf("%d handler runs, want the holder's and the taker's", len(seen))
	}
	wantDerived(t, "", key, "refund", seen[0]["refund"])
	if seen[1]["refund"] != seen[0]["refund"] || seen[1]["notify"] != seen[0]["notify"] {
		t.Fatalf("the taker derived %v, the holder it took over %v", seen[1], seen[0])
	}
	if k, _ := hookKey.Load().(string); k != seen[0]["refund"] {
		t.Fatalf("the recovery hook derived %q, the holder %q", k, seen[0]["refund"])
	}
}
