package idem_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
)

var modes = []idem.Mode{idem.ModeAtomic, idem.ModeLease}

func TestFirstExecutionAndReplay(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("%s/plain=%v", mode, plain), func(t *testing.T) {
				t.Parallel()
				e := newEnvDB(t, plain, testPolicy(mode), idem.Config{})
				key := newKey()
				body := `{"amount": 10, "note": "x"}`
				first := e.post(key, body)
				if first.Status != 201 {
					t.Fatalf("first: %d %s", first.Status, first.Body)
				}
				sum := sha256.Sum256([]byte(body))
				digest := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
				if got := first.Header.Get("Idempotency-Key"); got != key {
					t.Errorf("first Idempotency-Key = %q", got)
				}
				if got := first.Header.Get("Content-Digest"); got != digest {
					t.Errorf("first Content-Digest = %q, want %q", got, digest)
				}
				if first.Header.Get("Idempotent-Replayed") != "" || first.Header.Get("Last-Modified") != "" {
					t.Errorf("first execution has replay headers: %v", first.Header)
				}
				if e.state(key) != idem.StateCompleted {
					t.Fatalf("state %s", e.state(key))
				}

				// Same payload with other whitespace and member order: same fingerprint.
				again := e.post(strings.ToUpper(key), `{"note":"x","amount":10}`)
				if again.Status != 201 || !bytes.Equal(again.Body, first.Body) {
					t.Fatalf("replay: %d %s, want 201 %s", again.Status, again.Body, first.Body)
				}
				if again.Header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("replay lacks Idempotent-Replayed: %v", again.Header)
				}
				lm, err := http.ParseTime(again.Header.Get("Last-Modified"))
				if err != nil || lm.IsZero() {
					t.Errorf("replay Last-Modified %q: %v", again.Header.Get("Last-Modified"), err)
				}
				if again.Header.Get("Idempotency-Key") != strings.ToUpper(key) {
					t.Errorf("replay Idempotency-Key = %q", again.Header.Get("Idempotency-Key"))
				}
				if again.Header.Get("Content-Digest") == "" {
					t.Error("replay lacks Content-Digest")
				}
				for _, h := range []string{"Content-Type", "Location"} {
					if again.Header.Get(h) != first.Header.Get(h) {
						t.Errorf("replay %s = %q, first %q", h, again.Header.Get(h), first.Header.Get(h))
					}
				}
				if again.Header.Get("Set-Cookie") != "" || again.Header.Get("X-Not-Stored") != "" {
					t.Errorf("replay carries headers outside the allowlist: %v", again.Header)
				}
				if n := e.runs.Load(); n != 1 {
					t.Errorf("handler ran %d times", n)
				}
				if n := e.payments(); n != 1 {
					t.Errorf("%d payments", n)
				}
			})
		}
	}
}

func TestFingerprintConflict(t *testing.T) {
	t.Parallel()
	for _, profile := range []idem.Profile{idem.ProfileDefault, idem.ProfileIETF} {
		t.Run(string(profile), func(t *testing.T) {
			t.Parallel()
			p := testPolicy(idem.ModeAtomic)
			p.Profile = profile
			e := newEnv(t, p, idem.Config{})
			key := newKey()
			if r := e.post(key, payReq{Amount: 10}); r.Status != 201 {
				t.Fatalf("first: %d", r.Status)
			}
			r := e.post(key, payReq{Amount: 11})
			if profile == idem.ProfileIETF {
				r.wantProblem(t, 422, "ERR422_UNPROCESSABLE_CONTENT", "CONFLICTING_IDEMPOTENT_REQUEST")
			} else {
				r.wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")
			}
			// Another path parameter is another request too.
			r = e.postTo("/accounts/acc-2/payments", key, payReq{Amount: 10})
			if r.Status == 201 {
				t.Fatalf("other path parameter replayed: %s", r.Body)
			}
			// An excluded member does not count.
			key2 := newKey()
			if r := e.post(key2, payReq{Amount: 10, Meta: map[string]any{"sentAt": "t1", "k": 1}}); r.Status != 201 {
				t.Fatalf("first with metadata: %d", r.Status)
			}
			if r := e.post(key2, payReq{Amount: 10, Meta: map[string]any{"sentAt": "t2", "k": 1}}); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("excluded member changed the fingerprint: %d %s", r.Status, r.Body)
			}
			if r := e.post(key2, payReq{Amount: 10, Meta: map[string]any{"sentAt": "t2", "k": 2}}); r.Status == 201 {
				t.Fatalf("a member that is not excluded did not change the fingerprint")
			}
			if e.runs.Load() != 2 {
				t.Errorf("handler ran %d times", e.runs.Load())
			}
		})
	}
}

func TestKeyErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{})
	pv4 := testPolicy(idem.ModeAtomic)
	pv4.KeyFormat = idem.KeyFormatUUIDv4
	ev4 := newEnvOn(t, e.db, pv4, idem.Config{})
	popaque := testPolicy(idem.ModeAtomic)
	popaque.KeyFormat = idem.KeyFormatOpaque
	eop := newEnvOn(t, e.db, popaque, idem.Config{})

	const malformed = "IDEMPOTENCY_KEY_MALFORMED"
	cases := []struct {
		name   string
		env    *env
		opts   []reqOpt
		reason string
	}{
		{"missing", e, nil, "IDEMPOTENCY_KEY_REQUIRED"},
		{"empty", e, []reqOpt{withHeader("Idempotency-Key", "")}, malformed},
		{"not a uuid", e, []reqOpt{withHeader("Idempotency-Key", "payment-1")}, malformed},
		{"uuid without dashes", e, []reqOpt{withHeader("Idempotency-Key", strings.ReplaceAll(newKey(), "-", ""))}, malformed},
		{"nil uuid", e, []reqOpt{withHeader("Idempotency-Key", "00000000-0000-0000-0000-000000000000")}, malformed},
		{"max uuid", e, []reqOpt{withHeader("Idempotency-Key", "ffffffff-ffff-ffff-ffff-ffffffffffff")}, malformed},
		{"duplicated header", e, []reqOpt{withHeader("Idempotency-Key", newKey()), withHeader("Idempotency-Key", newKey())}, malformed},
		{"bad sf-string", e, []reqOpt{withHeader("Idempotency-Key", `"`+newKey())}, malformed},
		{"bad sf-string escape", e, []reqOpt{withHeader("Idempotency-Key", `"a\b"`)}, malformed},
		{"uuidv4 policy given v7", ev4, []reqOpt{withHeader("Idempotency-Key", newKey())}, malformed},
		{"opaque 256 chars", eop, []reqOpt{withHeader("Idempotency-Key", strings.Repeat("k", 256))}, malformed},
		// Go's HTTP server refuses other control characters before any handler runs.
		{"opaque tab", eop, []reqOpt{withHeader("Idempotency-Key", "abc\tdef")}, malformed},
		{"opaque non-ASCII", eop, []reqOpt{withHeader("Idempotency-Key", "abc\xc3\xa9")}, malformed},
		{"uuid with tab", e, []reqOpt{withHeader("Idempotency-Key", "\""+newKey()[:10]+"\t\"")}, malformed},
		{"opaque space", eop, []reqOpt{withHeader("Idempotency-Key", `"abc def"`)}, malformed},
	}
	for _, c := range cases {
		r := c.env.post("", payReq{Amount: 1}, c.opts...)
		if r.Status == 0 {
			t.Fatalf("%s: no response", c.name)
		}
		t.Run(c.name, func(t *testing.T) {
			r.wantProblem(t, 400, "ERR400_MISSING_OR_MALFORMED_HEADER", c.reason)
		})
	}
	if n := e.records(); n != 0 {
		t.Errorf("%d records after key errors", n)
	}
	if n := e.payments(); n != 0 {
		t.Errorf("handler wrote %d payments", n)
	}

	// Accepted shapes: a quoted string, upper-case UUIDs, opaque keys.
	k := newKey()
	if r := e.post("", payReq{Amount: 1}, withHeader("Idempotency-Key", `"`+k+`"`)); r.Status != 201 {
		t.Fatalf("sf-string key: %d %s", r.Status, r.Body)
	}
	if r := e.post(strings.ToUpper(k), payReq{Amount: 1}); r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("bare upper-case form of the same key did not replay: %d", r.Status)
	}
	if r := eop.post("", payReq{Amount: 1}, withHeader("Idempotency-Key", strings.Repeat("~", 255))); r.Status != 201 {
		t.Fatalf("opaque key of 255: %d %s", r.Status, r.Body)
	}
}

func TestOptionalKey(t *testing.T) {
	t.Parallel()
	p := testPolicy(idem.ModeAtomic)
	p.Required = false
	e := newEnv(t, p, idem.Config{})
	for i := 0; i < 2; i++ {
		r := e.post("", payReq{Amount: 5})
		if r.Status != 201 || r.Header.Get("Idempotency-Key") != "" {
			t.Fatalf("no key: %d %v", r.Status, r.Header)
		}
	}
	if r := e.post("", payReq{Amount: 5, Behave: "status:400"}); r.Status != 400 {
		t.Fatalf("400: %d", r.Status)
	}
	if e.records() != 0 || e.payments() != 2 {
		t.Fatalf("%d records, %d payments; want 0, 2", e.records(), e.payments())
	}
}

func TestRequestErrorsLeaveNoRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{MaxBodyBytes: 64})
	r := e.post(newKey(), `{"amount": 1,`)
	r.wantProblem(t, 400, "ERR400_INVALID_REQUEST", "REQUEST_BODY_INVALID_JSON")
	r = e.post(newKey(), `{"amount": 0}`)
	r.wantProblem(t, 400, "ERR400_INVALID_REQUEST", "REQUEST_INVALID")
	if !strings.Contains(string(r.Body), "amount") {
		t.Errorf("validation problem does not say where: %s", r.Body)
	}
	r = e.post(newKey(), payReq{Amount: 1, Note: strings.Repeat("x", 100)})
	r.wantProblem(t, 413, "ERR413_CONTENT_TOO_LARGE", "REQUEST_BODY_TOO_LARGE")
	if e.records() != 0 || e.runs.Load() != 0 {
		t.Fatalf("%d records, %d runs after request errors", e.records(), e.runs.Load())
	}
}

// TestOutcomeClasses drives each outcome class of the contract (README,
// docs/design.md) in both modes.
func TestOutcomeClasses(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, testPolicy(mode), idem.Config{Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}})

			t.Run("replayable status kept", func(t *testing.T) {
				key := newKey()
				r := e.post(key, payReq{Amount: 1, Behave: "status:402"})
				if r.Status != 402 || e.state(key) != idem.StateFailedReplayable {
					t.Fatalf("%d, state %s", r.Status, e.state(key))
				}
				before := e.runs.Load()
				again := e.post(key, payReq{Amount: 1, Behave: "status:402"})
				if again.Status != 402 || !bytes.Equal(again.Body, r.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("replay of 402: %d %s", again.Status, again.Body)
				}
				if e.runs.Load() != before {
					t.Fatal("handler ran again")
				}
				if n := e.count("SELECT count(*) FROM payments WHERE idem_key = $1", key); n != 1 {
					t.Fatalf("%d payments for a kept 402", n)
				}
			})

			for _, st := range []string{"400", "401", "403", "404", "429"} {
				t.Run("released "+st, func(t *testing.T) {
					key := newKey()
					r := e.post(key, payReq{Amount: 1, Behave: "status:" + st})
					if r.Status != atoi(st) || r.Header.Get("Idempotency-Key") != key {
						t.Fatalf("status %d, key %q", r.Status, r.Header.Get("Idempotency-Key"))
					}
					if s := e.state(key); s != "none" {
						t.Fatalf("state %s, want the key released", s)
					}
					if n := e.count("SELECT count(*) FROM payments WHERE idem_key = $1", key); n != 0 {
						t.Fatalf("released outcome kept %d business rows", n)
					}
					// A corrected retry with the same key runs.
					if r := e.post(key, payReq{Amount: 2}); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
						t.Fatalf("corrected retry: %d", r.Status)
					}
				})
			}

			for _, behave := range []string{"error", "status:503", "panic"} {
				t.Run("retryable "+behave, func(t *testing.T) {
					key := newKey()
					r := e.post(key, payReq{Amount: 1, Behave: behave})
					switch behave {
					case "status:503":
						if r.Status != 503 {
							t.Fatalf("status %d", r.Status)
						}
					default:
						r.wantProblem(t, 500, "ERR500_INTERNAL_SERVER_ERROR", "INTERNAL_ERROR")
						if strings.Contains(string(r.Body), "secret") || strings.Contains(string(r.Body), "bug") {
							t.Fatalf("500 leaks the error: %s", r.Body)
						}
					}
					if s := e.state(key); s != idem.StateFailedRetryable {
						t.Fatalf("state %s", s)
					}
					if n := e.count("SELECT count(*) FROM payments WHERE idem_key = $1", key); n != 0 {
						t.Fatalf("failed attempt kept %d business rows", n)
					}
					// Another payload under the same key is refused...
					e.post(key, payReq{Amount: 99}).wantProblem(t, 409, "ERR409_SERVER_STATE_CONFLICT", "CONFLICTING_IDEMPOTENT_REQUEST")
					// ...the same payload runs again (and fails again here).
					before := e.runs.Load()
					e.post(key, payReq{Amount: 1, Behave: behave})
					if e.runs.Load() != before+1 {
						t.Fatal("the same payload did not run again")
					}
					var attempts int
					if err := e.db.QueryRow(context.Background(), "SELECT attempts FROM idem_records WHERE idempotency_key=$1", key).Scan(&attempts); err != nil {
						t.Fatal(err)
					}
					if attempts != 2 {
						t.Fatalf("attempts %d, want 2", attempts)
					}
				})
			}
		})
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestRetryAfterFailure: a retryable failure, then the same payload succeeds.
func TestRetryAfterFailure(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, testPolicy(mode), idem.Config{Hooks: idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}}})
			fail := true
			var mu sync.Mutex
			e.handle("flaky", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				mu.Lock()
				defer mu.Unlock()
				if fail {
					fail = false
					return &idem.Response{Status: 503, Body: []byte("try later")}, nil
				}
				return &idem.Response{Status: 201, Body: []byte("ok")}, nil
			})
			key := newKey()
			if r := e.post(key, payReq{Amount: 1, Behave: "flaky"}); r.Status != 503 {
				t.Fatalf("first: %d", r.Status)
			}
			if r := e.post(key, payReq{Amount: 1, Behave: "flaky"}); r.Status != 201 || string(r.Body) != "ok" {
				t.Fatalf("retry: %d %s", r.Status, r.Body)
			}
			if r := e.post(key, payReq{Amount: 1, Behave: "flaky"}); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay: %d", r.Status)
			}
			if e.state(key) != idem.StateCompleted || e.payments() != 1 || e.runs.Load() != 2 {
				t.Fatalf("state %s, %d payments, %d runs", e.state(key), e.payments(), e.runs.Load())
			}
		})
	}
}
