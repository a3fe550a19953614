package idem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
)

func TestTenants(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			scope := func(r *http.Request) (string, error) {
				tn := r.Header.Get("X-Tenant")
				if tn == "" {
					return "", http.ErrNoCookie // any error: unauthenticated
				}
				return tn, nil
			}
			e := newEnv(t, testPolicy(mode), idem.Config{Scope: scope})
			key := newKey()
			// Tenant a's request blocks while b runs the same key: b is
			// neither blocked by nor replays a's record.
			ra := e.async(key, payReq{Amount: 1, Behave: "block"}, withHeader("X-Tenant", "a"))
			waitStarted(t, e)
			rb := e.post(key, payReq{Amount: 2}, withHeader("X-Tenant", "b"))
			if rb.Status != 201 || rb.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("tenant b: %d %s", rb.Status, rb.Body)
			}
			close(e.release)
			if r := recv(t, ra); r.Status != 201 {
				t.Fatalf("tenant a: %d", r.Status)
			}
			// Each tenant replays its own.
			if r := e.post(key, payReq{Amount: 2}, withHeader("X-Tenant", "b")); !bytes.Equal(r.Body, rb.Body) {
				t.Fatalf("tenant b replay: %s", r.Body)
			}
			if e.runs.Load() != 2 || e.count("SELECT count(DISTINCT tenant) FROM idem_records") != 2 {
				t.Fatalf("%d runs", e.runs.Load())
			}
			e.post(key, payReq{Amount: 2}).wantProblem(t, 401, "ERR401_UNAUTHORIZED", "UNAUTHENTICATED")
		})
	}
}

func TestSchemaChange(t *testing.T) {
	t.Parallel()
	for _, on := range []idem.OnSchemaChange{idem.SchemaChangeReplay, idem.SchemaChangeReject} {
		t.Run(string(on), func(t *testing.T) {
			t.Parallel()
			v1 := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{})
			key := newKey()
			first := v1.post(key, payReq{Amount: 3})
			if first.Status != 201 {
				t.Fatal(first.Status)
			}
			// The next deployment: response schema v2.
			p := testPolicy(idem.ModeAtomic)
			p.SchemaVersion = "v2"
			p.OnSchemaChange = on
			v2 := newEnvOn(t, v1.db, p, idem.Config{})
			r := v2.post(key, payReq{Amount: 3})
			if on == idem.SchemaChangeReject {
				r.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "STORED_RESPONSE_SCHEMA_CHANGED")
				return
			}
			if r.Status != 201 || !bytes.Equal(r.Body, first.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay under v2: %d %s", r.Status, r.Body)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	for _, on := range []idem.OnExpired{idem.ExpiredExecute, idem.ExpiredReject} {
		for _, tombstone := range []bool{false, true} {
			name := string(on)
			if tombstone {
				name += "/swept"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				p := testPolicy(idem.ModeAtomic)
				p.OnExpired = on
				e := newEnv(t, p, idem.Config{})
				key := newKey()
				if r := e.post(key, payReq{Amount: 3}); r.Status != 201 {
					t.Fatal(r.Status)
				}
				first := e.since.Load().(time.Time)
				if first.IsZero() {
					t.Fatal("the handler's key carries no Since")
				}
				e.exec("UPDATE idem_records SET expires_at = now() - interval '1 second'")
				if tombstone {
					// A sweep within the grace keeps the expired record.
					res, err := admin.NewSweeper(e.db, admin.SweeperConfig{}).RunOnce(context.Background())
					if err != nil || res.Deleted != 0 || e.state(key) != idem.StateCompleted {
						t.Fatalf("sweep: %+v %v", res, err)
					}
				}
				r := e.post(key, payReq{Amount: 3})
				if on == idem.ExpiredReject {
					r.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENCY_KEY_EXPIRED")
					if e.runs.Load() != 1 {
						t.Fatal("handler ran on an expired key")
					}
					return
				}
				if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" || e.runs.Load() != 2 {
					t.Fatalf("execute after expiry: %d, %d runs", r.Status, e.runs.Load())
				}
				if again := e.since.Load().(time.Time); !again.After(first) {
					t.Fatalf("Key.Since of the new execution %v is not after the first's %v", again, first)
				}
				if e.state(key) != idem.StateCompleted || e.count("SELECT count(*) FROM idem_records WHERE expires_at > now() + interval '1 hour'") != 1 {
					t.Fatal("the new execution did not get a fresh record")
				}
				// Any payload may reuse an expired key.
				e.exec("UPDATE idem_records SET expires_at = now() - interval '1 second'")
				if r := e.post(key, payReq{Amount: 4}); r.Status != 201 {
					t.Fatalf("other payload after expiry: %d", r.Status)
				}
			})
		}
	}
}

// TestNestedTransactions: a handler may nest transactions (savepoints) and
// use large objects in the engine's transaction, pipelined or not; what a
// nested rollback undoes is gone, the rest commits with the record.
func TestNestedTransactions(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("%s/plain=%v", mode, plain), func(t *testing.T) {
				t.Parallel()
				e := newEnvDB(t, plain, testPolicy(mode), idem.Config{})
				e.handle("nested", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
					insert := func(tx pgx.Tx) error {
						_, err := tx.Exec(ctx, `INSERT INTO payments (tenant, idem_key, amount) VALUES ('', 'nested', 1)`)
						return err
					}
					undo := errors.New("undo")
					if err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
						if err := insert(sp); err != nil {
							return err
						}
						return undo
					}); !errors.Is(err, undo) {
						return nil, fmt.Errorf("nested rollback: %v", err)
					}
					if err := pgx.BeginFunc(ctx, tx, insert); err != nil {
						return nil, err
					}
					if tx.Conn() == nil {
						return nil, errors.New("no connection")
					}
					lo := tx.LargeObjects()
					if _, err := lo.Create(ctx, 0); err != nil {
						return nil, fmt.Errorf("large object: %w", err)
					}
					return &idem.Response{Status: 201, Body: []byte("nested")}, nil
				})
				key := newKey()
				if r := e.post(key, payReq{Amount: 3, Behave: "nested"}); r.Status != 201 {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				if n := e.payments(); n != 2 {
					t.Fatalf("%d payments; want the handler's and the committed nested one", n)
				}
				if s := e.state(key); s != idem.StateCompleted {
					t.Fatalf("state %s", s)
				}
			})
		}
	}
}
