package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/internal/harness"
)

type paymentBody struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	ChargeID string `json:"chargeId"`
	Status   string `json:"status"`
}

func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// TestContract walks the HTTP contract table of the README over real HTTP,
// one row per subtest.
func TestContract(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	c := s.c

	t.Run("key missing on a required operation", func(t *testing.T) {
		ex := mustDo(t, c, "POST", "/payments", "", newPayment(100))
		wantProblem(t, ex, 400, "ERR400_MISSING_OR_MALFORMED_HEADER", "IDEMPOTENCY_KEY_REQUIRED")
	})

	t.Run("key not in keyFormat", func(t *testing.T) {
		ex := mustDo(t, c, "POST", "/payments", "not-a-uuid", newPayment(100))
		wantProblem(t, ex, 400, "ERR400_MISSING_OR_MALFORMED_HEADER", "IDEMPOTENCY_KEY_MALFORMED")
	})

	t.Run("key header given twice", func(t *testing.T) {
		req, _ := http.NewRequest("POST", s.srv.URL+"/payments", bytes.NewReader([]byte(`{"amount":100,"currency":"EUR"}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Add("Idempotency-Key", harness.NewKey())
		req.Header.Add("Idempotency-Key", harness.NewKey())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p harness.Problem
		_ = json.NewDecoder(resp.Body).Decode(&p)
		if resp.StatusCode != 400 || p.Reason != "IDEMPOTENCY_KEY_MALFORMED" {
			t.Fatalf("got %d %s, want 400 IDEMPOTENCY_KEY_MALFORMED", resp.StatusCode, p.Reason)
		}
	})

	key := harness.NewKey()
	var first *harness.Exchange
	t.Run("first execution", func(t *testing.T) {
		first = mustDo(t, c, "POST", "/payments", key, newPayment(1234))
		wantStatus(t, first, 201)
		if got := first.Header.Get("Idempotency-Key"); got != key {
			t.Errorf("Idempotency-Key echo = %q, want %q", got, key)
		}
		if got, want := first.Header.Get("Content-Digest"), digest(first.Body); got != want {
			t.Errorf("Content-Digest = %q, want %q (over the request payload)", got, want)
		}
		if first.Replayed() || first.Header.Get("Last-Modified") != "" {
			t.Errorf("a first execution carries replay headers: %v", first.Header)
		}
		var p paymentBody
		if err := first.Decode(&p); err != nil || p.ID == "" || p.Amount != 1234 {
			t.Fatalf("body %s: %v", first.RespBody, err)
		}
		if first.Header.Get("Location") != "/payments/"+p.ID || !strings.HasPrefix(first.Header.Get("X-Gateway-Charge-Id"), "ch_") {
			t.Errorf("declared headers Location %q, X-Gateway-Charge-Id %q", first.Header.Get("Location"), first.Header.Get("X-Gateway-Charge-Id"))
		}
	})
	if first == nil || first.Status != 201 {
		t.FailNow()
	}

	t.Run("same key, same fingerprint, completed", func(t *testing.T) {
		again := mustDo(t, c, "POST", "/payments", key, newPayment(1234))
		wantStatus(t, again, 201)
		if !bytes.Equal(again.RespBody, first.RespBody) {
			t.Errorf("replayed body differs:\n got %s\nwant %s", again.RespBody, first.RespBody)
		}
		if !again.Replayed() {
			t.Error("Idempotent-Replayed: true missing")
		}
		if again.Header.Get("Idempotency-Key") != key || again.Header.Get("Content-Digest") != digest(again.Body) {
			t.Errorf("replay headers: %v", again.Header)
		}
		lm, err := http.ParseTime(again.Header.Get("Last-Modified"))
		if err != nil || lm.After(time.Now().Add(time.Minute)) {
			t.Errorf("Last-Modified %q: %v", again.Header.Get("Last-Modified"), err)
		}
		// The declared response headers (Location, X-Gateway-Charge-Id) are
		// stored and replayed as the first response sent them.
		for _, h := range []string{"Content-Type", "Location", "X-Gateway-Charge-Id"} {
			if again.Header.Get(h) != first.Header.Get(h) {
				t.Errorf("%s %q, first %q", h, again.Header.Get(h), first.Header.Get(h))
			}
		}
	})

	t.Run("a field excluded from the fingerprint may differ", func(t *testing.T) {
		k := harness.NewKey()
		body := func(sentAt string) map[string]any {
			p := newPayment(555)
			p["metadata"] = map[string]any{"clientSentAt": sentAt}
			return p
		}
		a := mustDo(t, c, "POST", "/payments", k, body("2026-01-01T10:00:00Z"))
		wantStatus(t, a, 201)
		b := mustDo(t, c, "POST", "/payments", k, body("2026-01-01T10:00:09Z"))
		wantStatus(t, b, 201)
		if !b.Replayed() || !bytes.Equal(a.RespBody, b.RespBody) {
			t.Fatalf("a retry differing only in /metadata/clientSentAt was not replayed: %s", b.RespBody)
		}
	})

	t.Run("same key, different fingerprint", func(t *testing.T) {
		ex := mustDo(t, c, "POST", "/payments", key, newPayment(9999))
		wantProblem(t, ex, 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")
	})

	t.Run("same key, first still running", func(t *testing.T) {
		k := harness.NewKey()
		release := s.gw.Hold()
		defer release()
		done := make(chan *harness.Exchange, 1)
		go func() {
			ex, _ := c.Do(context.Background(), "POST", "/payments", k, newPayment(300))
			done <- ex
		}()
		waitFor(t, "the first request to reach the gateway", func() bool { return s.gw.Calls(k) == 1 })
		dup := mustDo(t, c, "POST", "/payments", k, newPayment(300))
		wantProblem(t, dup, 409, "ERR409_SERVER_STATE_CONFLICT", "IDEMPOTENT_REQUEST_IN_PROGRESS")
		if dup.Header.Get("Retry-After") == "" {
			t.Error("Retry-After missing")
		}
		release()
		if ex := <-done; ex == nil || ex.Status != 201 {
			t.Fatalf("the first request: %+v", ex)
		}
		if n := s.gw.Calls(k); n != 1 {
			t.Fatalf("gateway called %d times, want 1", n)
		}
	})

	// What is stored and replayed, and what is not.

	t.Run("a replayStatuses outcome is kept and replayed", func(t *testing.T) {
		var p paymentBody
		_ = first.Decode(&p)
		wantStatus(t, mustDo(t, c, "PATCH", "/payments/"+p.ID, harness.NewKey(), map[string]any{"amount": 1000}), 200)
		k := harness.NewKey()
		r1 := mustDo(t, c, "POST", "/payments/"+p.ID+"/refunds", k, map[string]any{"amount": 1001})
		wantStatus(t, r1, 422)
		// Capture cannot grow, but a smaller refund under another key moves
		// the balance; the 422 under k stays what it was.
		wantStatus(t, mustDo(t, c, "POST", "/payments/"+p.ID+"/refunds", harness.NewKey(), map[string]any{"amount": 1}), 201)
		r2 := mustDo(t, c, "POST", "/payments/"+p.ID+"/refunds", k, map[string]any{"amount": 1001})
		wantStatus(t, r2, 422)
		if !r2.Replayed() || !bytes.Equal(r1.RespBody, r2.RespBody) {
			t.Fatalf("422 not replayed: %s / %s", r1.RespBody, r2.RespBody)
		}
	})

	t.Run("a 4xx not in replayStatuses releases the key", func(t *testing.T) {
		k := harness.NewKey()
		bad := mustDo(t, c, "POST", "/payments", k, map[string]any{"amount": 0, "currency": "EUR"})
		wantStatus(t, bad, 400)
		good := mustDo(t, c, "POST", "/payments", k, newPayment(700))
		wantStatus(t, good, 201)
		if good.Replayed() {
			t.Fatal("the corrected request was answered by a replay")
		}
	})

	t.Run("a request the generated decoder rejects leaves no record", func(t *testing.T) {
		k := harness.NewKey()
		ex := mustDo(t, c, "POST", "/payments", k, []byte(`{"amount": "lots"`))
		if p, ok := ex.Problem(); ex.Status != 400 || !ok {
			t.Fatalf("got %d %+v, want a 400 problem", ex.Status, p)
		}
		wantStatus(t, mustDo(t, c, "POST", "/payments", k, newPayment(800)), 201)
	})

	t.Run("a 5xx rolls back and a retry runs again", func(t *testing.T) {
		k := harness.NewKey()
		s.gw.Set(gateway.Switches{FailBeforeCharge: 1})
		ex := mustDo(t, c, "POST", "/payments", k, newPayment(900))
		wantStatus(t, ex, 502)
		if l := readLedger(t, s.db); l.count[k] != 0 {
			t.Fatalf("ledger holds %d payments after a 502", l.count[k])
		}
		// FAILED_RETRYABLE stays bound to its payload.
		wantProblem(t, mustDo(t, c, "POST", "/payments", k, newPayment(901)), 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")
		retry := mustDo(t, c, "POST", "/payments", k, newPayment(900))
		wantStatus(t, retry, 201)
		if retry.Replayed() {
			t.Fatal("a 5xx was replayed")
		}
	})

	t.Run("gateway timeout after charging: the retry recovers the charge", func(t *testing.T) {
		k := harness.NewKey()
		s.gw.Set(gateway.Switches{FailAfterCharge: 1})
		wantStatus(t, mustDo(t, c, "POST", "/payments", k, newPayment(4200)), 502)
		charged, ok, _ := s.gw.Lookup(context.Background(), k)
		if !ok {
			t.Fatal("the gateway did not charge")
		}
		retry := mustDo(t, c, "POST", "/payments", k, newPayment(4200))
		wantStatus(t, retry, 201)
		var p paymentBody
		_ = retry.Decode(&p)
		if p.ChargeID != charged.ID || chargesFor(s.gw, k) != 1 {
			t.Fatalf("payment charge %s, gateway charge %s, charges %d", p.ChargeID, charged.ID, chargesFor(s.gw, k))
		}
	})

	t.Run("atomic mode: capture is replayed, a conflicting capture refused", func(t *testing.T) {
		pay := mustDo(t, c, "POST", "/payments", harness.NewKey(), newPayment(5000))
		wantStatus(t, pay, 201)
		var p paymentBody
		_ = pay.Decode(&p)
		k := harness.NewKey()
		a := mustDo(t, c, "PATCH", "/payments/"+p.ID, k, map[string]any{})
		wantStatus(t, a, 200)
		b := mustDo(t, c, "PATCH", "/payments/"+p.ID, k, map[string]any{})
		if b.Status != 200 || !b.Replayed() || !bytes.Equal(a.RespBody, b.RespBody) {
			t.Fatalf("capture retry: %d replayed=%v %s", b.Status, b.Replayed(), b.RespBody)
		}
		wantProblem(t, mustDo(t, c, "PATCH", "/payments/"+p.ID, k, map[string]any{"amount": 1}), 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")
		// A second capture under a new key runs, and is refused by the business rule.
		wantStatus(t, mustDo(t, c, "PATCH", "/payments/"+p.ID, harness.NewKey(), map[string]any{}), 422)
	})

	t.Run("an operation that opted out needs no key", func(t *testing.T) {
		ex := mustDo(t, c, "POST", "/payments/quote", "", map[string]any{"amount": 1000, "currency": "EUR"})
		wantStatus(t, ex, 200)
		if ex.Header.Get("Idempotency-Key") != "" || ex.Replayed() {
			t.Fatalf("idempotency headers on an opted-out operation: %v", ex.Header)
		}
		wantStatus(t, mustDo(t, c, "GET", "/payments?limit=5", "", nil), 200)
		wantStatus(t, mustDo(t, c, "GET", "/payments/nope", "", nil), 404)
	})

	t.Run("ledger", func(t *testing.T) {
		l := readLedger(t, s.db)
		for k, n := range l.count {
			if n != 1 {
				t.Errorf("%d payments for key %s", n, k)
			}
		}
		if st := s.gw.Stats(); st.Charges != l.rows || st.Amount != l.total {
			t.Errorf("gateway %+v, ledger %d payments %d", st, l.rows, l.total)
		}
	})
}
