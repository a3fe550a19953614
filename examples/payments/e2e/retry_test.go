package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
	"github.com/idemgen/idemgen/runtime/idemclient"
)

// retryStats counts what retrying clients saw.
type retryStats struct {
	mu        sync.Mutex
	attempts  int
	timeouts  int            // the client gave up before the response
	byOutcome map[string]int // "201", "201 replayed", "409 IDEMPOTENT_REQUEST_IN_PROGRESS", ...
	paymentOf map[string]map[string]bool
}

func newRetryStats() *retryStats {
	return &retryStats{byOutcome: map[string]int{}, paymentOf: map[string]map[string]bool{}}
}

func (s *retryStats) note(key string, ex *harness.Exchange, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	switch {
	case err != nil:
		s.timeouts++
	case ex.Status == 201:
		var p paymentBody
		_ = ex.Decode(&p)
		if s.paymentOf[key] == nil {
			s.paymentOf[key] = map[string]bool{}
		}
		s.paymentOf[key][p.ID] = true
		if ex.Replayed() {
			s.byOutcome["201 replayed"]++
		} else {
			s.byOutcome["201"]++
		}
	default:
		p, _ := ex.Problem()
		s.byOutcome[fmt.Sprintf("%d %s", ex.Status, p.Reason)]++
	}
}

// noteAttempt counts an attempt of the generated client.
func (s *retryStats) noteAttempt(a idemclient.Attempt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if a.Status == 0 {
		s.timeouts++
		return
	}
	s.byOutcome[strconv.Itoa(a.Status)]++
}

// notePayment records the payment a call ended with.
func (s *retryStats) notePayment(key, id string, replayed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paymentOf[key] == nil {
		s.paymentOf[key] = map[string]bool{}
	}
	s.paymentOf[key][id] = true
	if replayed {
		s.byOutcome["201 replayed (final)"]++
	}
}

// maxAttemptTimeout caps the attempt timeouts of retrying callers, which
// start shorter than the gateway's latency and grow. It is far above the
// service's latency on any machine the tests run on, so that a caller's
// attempts always come to outlast it: at load 35 under -race, attempts of
// TestRetryingClients took over 5 s (3 917 of 4 046 timed out), and a cap
// of 5 s left callers timing out until their deadline.
const maxAttemptTimeout = time.Minute

// retryBudget is how long TestRetryingClients' callers keep calling. It
// guards against a key that never completes; it is not a claim about speed,
// which the machine's load decides. A caller gets its answer once its
// attempt timeout outlasts the service's latency, and a generated-client
// caller whose every attempt times out (5 attempts a call, the timeout
// doubling from 40 ms per call) starts its first 10 s attempt after 51 s,
// its first 20 s attempt after 1.7 minutes and its first 41 s one after 3.4
// (the hand-rolled caller, growing its timeout by half per attempt, sooner):
// the test fails on load alone only where the service needs over 40 s a
// request. The former budget, 60 s with attempts capped at 5 s, failed
// where it needed over 5 s. On an idle machine the test takes seconds.
const retryBudget = 5 * time.Minute

// createUntilDone sends POST /payments with key until a 201, with a timeout
// per attempt that starts shorter than the gateway's latency and grows (to
// maxAttemptTimeout), and a jittered backoff. It gives up at ctx's deadline.
func createUntilDone(ctx context.Context, c *harness.Client, key string, amount int64, firstTimeout time.Duration, st *retryStats) bool {
	timeout := firstTimeout
	for attempt := 0; attempt < 200; attempt++ {
		if ctx.Err() != nil {
			return false
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		ex, err := c.Do(actx, "POST", "/payments", key, newPayment(amount))
		cancel()
		st.note(key, ex, err)
		if err == nil && ex.Status == 201 {
			return true
		}
		timeout = min(timeout*3/2, maxAttemptTimeout)
		backoff := time.Duration(5+rand.IntN(20+attempt*10)) * time.Millisecond
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
	}
	return false
}

// TestRetryingClients: many keys, several clients per key sending the same
// request at once, each retrying with timeouts shorter than the handler's
// latency, while the gateway fails before and after charging. Afterwards the
// ledger holds exactly one payment per key and the gateway exactly one
// charge per key, and every client that got a 201 for a key got the same
// payment. The clients are hand-rolled loops (a timeout per attempt that
// grows, any answer but a 201 retried), then the generated client (its own
// retry rules, 5 attempts per call with a timeout starting at 40ms, the
// intent's key again with a doubled timeout when a call runs out).
func TestRetryingClients(t *testing.T) {
	t.Parallel()
	t.Run("hand-rolled", func(t *testing.T) {
		retryingClients(t, func(s *stack) createFunc {
			return func(ctx context.Context, key string, amount int64, st *retryStats) bool {
				c := &harness.Client{URL: s.srv.URL, HTTP: &http.Client{}}
				// 40ms: shorter than the 120ms the gateway takes.
				return createUntilDone(ctx, c, key, amount, 40*time.Millisecond, st)
			}
		})
	})
	t.Run("generated client", func(t *testing.T) {
		retryingClients(t, func(s *stack) createFunc {
			client := newAPIClient(t, s.srv.URL)
			// A caller whose call runs out of attempts calls again with the
			// intent's key and more patience, as IsRetryable says it may,
			// or when its last attempt got the declared 502 (the spec's
			// "retry with the same key"): the client returns a declared
			// response, not an error, so IsRetryable never sees it.
			return func(ctx context.Context, key string, amount int64, st *retryStats) bool {
				for timeout := 40 * time.Millisecond; ; timeout = min(timeout*2, maxAttemptTimeout) {
					res, err := client.CreatePayment(ctx, paymentRequest(amount), idemclient.WithIdempotencyKey(key),
						idemclient.WithAttemptTimeout(timeout), idemclient.WithMaxAttempts(5), idemclient.WithAttemptObserver(st.noteAttempt))
					gatewayFailed := err == nil && res.Status == http.StatusBadGateway
					p, err := createdPayment(res, err)
					if (idemclient.IsRetryable(err) || gatewayFailed) && ctx.Err() == nil {
						continue
					}
					if err != nil {
						t.Logf("key %s: %v", key, err)
						return false
					}
					st.notePayment(key, p.ID, res.Replayed)
					return true
				}
			}
		})
	})
}

// createFunc creates the payment of one intent, retrying until it gets a
// 201; false when it gives up.
type createFunc func(ctx context.Context, key string, amount int64, st *retryStats) bool

func retryingClients(t *testing.T, newCreate func(*stack) createFunc) {
	s := newStack(t)
	create := newCreate(s)
	s.gw.Set(gateway.Switches{Latency: 120 * time.Millisecond, FailBeforeRate: 0.1, FailAfterRate: 0.1})
	const keys, clientsPerKey = 40, 3
	ctx, cancel := context.WithTimeout(context.Background(), retryBudget)
	defer cancel()
	start := time.Now()

	st := newRetryStats()
	want := map[string]int64{}
	var wg sync.WaitGroup
	failed := make(chan string, keys*clientsPerKey)
	for i := range keys {
		key := harness.NewKey()
		amount := int64(100 + i)
		want[key] = amount
		for range clientsPerKey {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !create(ctx, key, amount, st) {
					failed <- key
				}
			}()
		}
	}
	wg.Wait()
	close(failed)
	for key := range failed {
		t.Errorf("a client never got a 201 for key %s", key)
	}
	s.gw.Set(gateway.Switches{})

	checkBooks(t, readLedger(t, s.db), s.gw, want)
	for key, ids := range st.paymentOf {
		if len(ids) != 1 {
			t.Errorf("key %s: clients got %d different payments", key, len(ids))
		}
	}
	gs := s.gw.Stats()
	t.Logf("%d keys × %d clients in %v: %d attempts, %d client timeouts, outcomes %v; gateway %d calls, %d charges",
		keys, clientsPerKey, time.Since(start).Round(time.Millisecond), st.attempts, st.timeouts, st.byOutcome, gs.Calls, gs.Charges)
	if st.timeouts == 0 {
		t.Error("no client ever timed out: the test did not exercise what it claims")
	}
}
