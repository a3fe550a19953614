package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
	"github.com/idemgen/idemgen/runtime/webhook"
)

var testSchema = fstest.MapFS{"9000_test.up.sql": {Data: []byte(`
CREATE TABLE received (id serial PRIMARY KEY, name text NOT NULL, body text NOT NULL);
`)}}

func newDB(t testing.TB) *pgtest.DB {
	return pgtest.New(t, pgtest.Options{Migrations: testSchema})
}

func count(t testing.TB, db *pgtest.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func event(t testing.TB, key string) cloudevents.Event {
	t.Helper()
	ev := cloudevents.New()
	ev.SetID("0b9f6a8e-1111-4c2d-9e3f-000000000001")
	ev.SetType("note.created")
	ev.SetSource("urn:test")
	ev.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err := ev.SetData("application/json", []byte(`{"text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if key != "" {
		ev.SetExtension(events.ExtensionIdempotencyKey, key)
	}
	return ev
}

func TestPublisherHeadersAndBody(t *testing.T) {
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, body = r.Clone(context.Background()), must(io.ReadAll(r.Body))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	secret := []byte("s3cret")
	pub := webhook.NewHTTPPublisher(webhook.PublisherConfig{
		Target: func(_ context.Context, ev cloudevents.Event) (string, error) {
			return srv.URL + "/hooks/" + ev.Type(), nil
		},
		Sign: webhook.SignHMAC(secret),
	})

	for _, tc := range []struct{ name, ext, wantKey string }{
		{"propagated key", "7d1f8c1e-0a55-4f5c-9b43-2f0c4f8a2d11", "7d1f8c1e-0a55-4f5c-9b43-2f0c4f8a2d11"},
		{"no key: the event id", "", "0b9f6a8e-1111-4c2d-9e3f-000000000001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := pub.Publish(context.Background(), event(t, tc.ext)); err != nil {
				t.Fatal(err)
			}
			if got.Method != http.MethodPost || got.URL.Path != "/hooks/note.created" {
				t.Errorf("request %s %s", got.Method, got.URL.Path)
			}
			want := map[string]string{
				"Idempotency-Key": tc.wantKey,
				"Content-Type":    "application/json",
				"Ce-Id":           "0b9f6a8e-1111-4c2d-9e3f-000000000001",
				"Ce-Type":         "note.created",
				"Ce-Source":       "urn:test",
				"Ce-Specversion":  "1.0",
				"Ce-Time":         "2026-01-02T03:04:05Z",
				"Webhook-Id":      "0b9f6a8e-1111-4c2d-9e3f-000000000001",
			}
			for h, v := range want {
				if g := got.Header.Get(h); g != v {
					t.Errorf("%s = %q, want %q", h, g, v)
				}
			}
			if string(body) != `{"text":"hi"}` {
				t.Errorf("body %s", body)
			}
			if err := webhook.VerifyHMAC(secret, 0)(got, body); err != nil {
				t.Errorf("signature: %v", err)
			}
			if err := webhook.VerifyHMAC([]byte("other"), 0)(got, body); !errors.Is(err, webhook.ErrBadSignature) {
				t.Errorf("wrong secret verified: %v", err)
			}
		})
	}
}

func TestPublisherStatuses(t *testing.T) {
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	pub := webhook.NewHTTPPublisher(webhook.PublisherConfig{
		Target: func(context.Context, cloudevents.Event) (string, error) { return srv.URL, nil },
	})
	for _, tc := range []struct {
		status        int
		ok, permanent bool
	}{
		{200, true, false}, {202, true, false}, {204, true, false},
		{400, false, true}, {401, false, true}, {404, false, true}, {409, false, true}, {422, false, true},
		{408, false, false}, {429, false, false}, {500, false, false}, {502, false, false}, {503, false, false},
		{302, false, false},
	} {
		status.Store(int32(tc.status))
		err := pub.Publish(context.Background(), event(t, "k1"))
		if (err == nil) != tc.ok || events.IsPermanent(err) != tc.permanent {
			t.Errorf("%d: err=%v permanent=%v, want ok=%v permanent=%v", tc.status, err, events.IsPermanent(err), tc.ok, tc.permanent)
		}
		var se *webhook.StatusError
		if !tc.ok && tc.status != 302 && (!errors.As(err, &se) || se.Status != tc.status) {
			t.Errorf("%d: not a *StatusError: %v", tc.status, err)
		}
	}

	// Transport errors are retryable; a missing target is permanent.
	srv.Close()
	if err := pub.Publish(context.Background(), event(t, "k1")); err == nil || events.IsPermanent(err) {
		t.Errorf("closed server: %v", err)
	}
	none := webhook.NewHTTPPublisher(webhook.PublisherConfig{
		Target: func(context.Context, cloudevents.Event) (string, error) { return "", nil }})
	if err := none.Publish(context.Background(), event(t, "k1")); !events.IsPermanent(err) {
		t.Errorf("empty target: %v", err)
	}
}

// receiver serves /hook with a handler that inserts a row, or fails while
// fail is set.
func receiver(t *testing.T, db *pgtest.DB, fail *atomic.Bool) *httptest.Server {
	rc := webhook.NewReceiver(webhook.ReceiverConfig{DB: db, Consumer: "test", MaxBodyBytes: 1 << 10})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.Receive(w, r, "note.created", func(body []byte) (events.HandlerFunc, error) {
			var p struct{ Text string }
			if err := json.Unmarshal(body, &p); err != nil {
				return nil, idem.InvalidRequest("body", err)
			}
			if p.Text == "" {
				return nil, idem.InvalidRequest("body", errors.New("text is required"))
			}
			return func(ctx context.Context, tx pgx.Tx) error {
				d, ok := webhook.DeliveryFromContext(ctx)
				if !ok || d.Scope != "note.created" {
					return fmt.Errorf("delivery %+v %v", d, ok)
				}
				if _, err := tx.Exec(ctx, `INSERT INTO received (name, body) VALUES ($1, $2)`, d.Key, p.Text); err != nil {
					return err
				}
				if fail != nil && fail.Load() {
					return errors.New("handler failed")
				}
				return nil
			}, nil
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, key, ceID, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if ceID != "" {
		req.Header.Set("Ce-Id", ceID)
		req.Header.Set("Ce-Source", "urn:test")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var problem map[string]any
	if b := must(io.ReadAll(resp.Body)); len(b) > 0 {
		if err := json.Unmarshal(b, &problem); err != nil {
			t.Fatalf("body %s: %v", b, err)
		}
	}
	return resp, problem
}

func TestReceiveDeduplicates(t *testing.T) {
	db := newDB(t)
	srv := receiver(t, db, nil)

	resp, _ := post(t, srv.URL, "key-1", "", `{"text":"hello"}`)
	if resp.StatusCode != 204 || resp.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d replayed=%q", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	}
	// Same key, same payload re-encoded: a duplicate.
	resp, _ = post(t, srv.URL, "key-1", "", "{ \"text\" : \"hello\" }\n")
	if resp.StatusCode != 204 || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("second: %d replayed=%q", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	}
	if n := count(t, db, `SELECT count(*) FROM received`); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
	// Same key, another payload: 409 conflict, nothing run.
	resp, problem := post(t, srv.URL, "key-1", "", `{"text":"other"}`)
	if resp.StatusCode != 409 || problem["reason"] != idemproblem.ReasonConflict ||
		resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("conflict: %d %v", resp.StatusCode, problem)
	}
	// Two events of one request share the key but not the CloudEvents id.
	for _, id := range []string{"ev-1", "ev-2", "ev-2"} {
		if resp, _ := post(t, srv.URL, "key-2", id, `{"text":"`+id+`"}`); resp.StatusCode != 204 {
			t.Fatalf("%s: %d", id, resp.StatusCode)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM received`); n != 3 {
		t.Fatalf("rows %d, want 3", n)
	}
}

func TestReceiveRejectsBeforeRecording(t *testing.T) {
	db := newDB(t)
	srv := receiver(t, db, nil)
	for _, tc := range []struct {
		name, key, body string
		status          int
		reason          string
	}{
		{"no key", "", `{"text":"a"}`, 400, idemproblem.ReasonKeyRequired},
		{"bad key", "a b", `{"text":"a"}`, 400, idemproblem.ReasonKeyMalformed},
		{"not JSON", "k", `{`, 400, idemproblem.ReasonInvalidJSON},
		{"invalid payload", "k", `{"text":""}`, 400, idemproblem.ReasonInvalidRequest},
		{"too large", "k", `{"text":"` + strings.Repeat("x", 2<<10) + `"}`, 413, idemproblem.ReasonBodyTooLarge},
	} {
		resp, problem := post(t, srv.URL, tc.key, "", tc.body)
		if resp.StatusCode != tc.status || problem["reason"] != tc.reason {
			t.Errorf("%s: %d %v, want %d %s", tc.name, resp.StatusCode, problem, tc.status, tc.reason)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM idem_inbox`); n != 0 {
		t.Fatalf("inbox holds %d records after rejected deliveries", n)
	}
	// The rejected key is free: a corrected delivery runs.
	if resp, _ := post(t, srv.URL, "k", "", `{"text":"fixed"}`); resp.StatusCode != 204 {
		t.Fatalf("corrected: %d", resp.StatusCode)
	}
}

func TestReceiveHandlerErrorThenRetry(t *testing.T) {
	db := newDB(t)
	var fail atomic.Bool
	fail.Store(true)
	srv := receiver(t, db, &fail)
	if resp, _ := post(t, srv.URL, "key-9", "", `{"text":"x"}`); resp.StatusCode != 500 {
		t.Fatalf("failing handler: %d", resp.StatusCode)
	}
	if n := count(t, db, `SELECT count(*) FROM idem_inbox`) + count(t, db, `SELECT count(*) FROM received`); n != 0 {
		t.Fatalf("%d rows recorded after a failed handler", n)
	}
	fail.Store(false)
	resp, _ := post(t, srv.URL, "key-9", "", `{"text":"x"}`)
	if resp.StatusCode != 204 || resp.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry: %d replayed=%q", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	}
	if n := count(t, db, `SELECT count(*) FROM received`); n != 1 {
		t.Fatalf("rows %d, want 1", n)
	}
}

func TestReceiveVerify(t *testing.T) {
	db := newDB(t)
	secret := []byte("k")
	rc := webhook.NewReceiver(webhook.ReceiverConfig{DB: db, Consumer: "v", Verify: webhook.VerifyHMAC(secret, time.Minute)})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.Receive(w, r, "x", func([]byte) (events.HandlerFunc, error) {
			return func(context.Context, pgx.Tx) error { return nil }, nil
		})
	}))
	defer srv.Close()
	if resp, _ := post(t, srv.URL, "k1", "id1", `{}`); resp.StatusCode != 401 {
		t.Fatalf("unsigned: %d", resp.StatusCode)
	}
	pub := webhook.NewHTTPPublisher(webhook.PublisherConfig{
		Target: func(context.Context, cloudevents.Event) (string, error) { return srv.URL, nil },
		Sign:   webhook.SignHMAC(secret),
	})
	if err := pub.Publish(context.Background(), event(t, "k1")); err != nil {
		t.Fatalf("signed: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
