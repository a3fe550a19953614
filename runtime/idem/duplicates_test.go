package idem_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestConcurrentDuplicates: 100 clients send one key at once; the handler
// runs once, every other client gets the replay or 409 in flight.
func TestConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		mode     idem.Mode
		inFlight idem.InFlight
	}{
		{"atomic reject", idem.ModeAtomic, idem.InFlightReject},
		{"atomic wait", idem.ModeAtomic, idem.InFlightWait},
		{"lease reject", idem.ModeLease, idem.InFlightReject},
		{"lease wait", idem.ModeLease, idem.InFlightWait},
	}
	for _, plain := range []bool{false, true} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/plain=%v", c.name, plain), func(t *testing.T) {
				t.Parallel()
				p := testPolicy(c.mode)
				p.InFlight = c.inFlight
				p.Wait = 20 * time.Second
				e := newEnvDB(t, plain, p, idem.Config{})
				e.handle("slow", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
					time.Sleep(50 * time.Millisecond) // let the duplicates pile up
					return &idem.Response{Status: 201, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("paid once")}, nil
				})
				key := newKey()
				const n = 100
				results := make([]result, n)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						results[i] = e.post(key, payReq{Amount: 7, Behave: "slow"})
					}()
				}
				close(start)
				wg.Wait()
				created, replayed, inFlight := 0, 0, 0
				for _, r := range results {
					switch {
					case r.Status == 201 && string(r.Body) == "paid once":
						if r.Header.Get("Idempotent-Replayed") == "true" {
							replayed++
						} else {
							created++
						}
					case r.Status == 409:
						r.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
						if r.Header.Get("Retry-After") == "" {
							t.Error("409 in flight without Retry-After")
						}
						inFlight++
					default:
						t.Fatalf("unexpected response %d %s", r.Status, r.Body)
					}
				}
				if created != 1 || e.runs.Load() != 1 || e.payments() != 1 {
					t.Fatalf("created %d, runs %d, payments %d; want 1 each", created, e.runs.Load(), e.payments())
				}
				t.Logf("1 execution, %d replays, %d in flight", replayed, inFlight)
			})
		}
	}
}

func TestInFlight(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode)+"/reject", func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, testPolicy(mode), idem.Config{})
			key := newKey()
			first := e.async(key, payReq{Amount: 1, Behave: "block"})
			waitStarted(t, e)
			r := e.post(key, payReq{Amount: 1, Behave: "block"})
			r.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
			if r.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
			close(e.release)
			if r := recv(t, first); r.Status != 201 {
				t.Fatalf("first: %d %s", r.Status, r.Body)
			}
		})
		t.Run(string(mode)+"/wait", func(t *testing.T) {
			t.Parallel()
			p := testPolicy(mode)
			p.InFlight = idem.InFlightWait
			p.Wait = 30 * time.Second
			e := newEnv(t, p, idem.Config{})
			key := newKey()
			first := e.async(key, payReq{Amount: 1, Behave: "block"})
			waitStarted(t, e)
			second := e.async(key, payReq{Amount: 1, Behave: "block"})
			time.Sleep(100 * time.Millisecond) // the second is waiting now (or soon)
			close(e.release)
			r1, r2 := recv(t, first), recv(t, second)
			if r1.Status != 201 || r2.Status != 201 || !bytes.Equal(r1.Body, r2.Body) || r2.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("first %d %s, second %d %s %v", r1.Status, r1.Body, r2.Status, r2.Body, r2.Header)
			}
			if e.runs.Load() != 1 {
				t.Fatalf("%d runs", e.runs.Load())
			}
		})
	}
}
