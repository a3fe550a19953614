package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/webhook"
	"github.com/idemgen/idemgen/runtime/webhook/internal/testapi"
)

// bearer accepts the token t0ken (testapi requires bearerAuth).
type bearer struct{}

func (bearer) BearerAuth(_ context.Context, token string, _ []string) (testapi.Principal, error) {
	if token != "t0ken" {
		return nil, errors.New("unknown token")
	}
	return "tester", nil
}

// notes is the sending service: createNote stores nothing of its own but
// sends the note.created webhook in the engine's transaction, and fails
// (rolling it back) for the text "fail".
type notes struct{ testapi.Unimplemented }

func (notes) CreateNote(ctx context.Context, tx pgx.Tx, req testapi.CreateNoteRequest) (testapi.CreateNoteResponse, error) {
	if err := testapi.SendNoteCreated(ctx, tx, req.Body); err != nil {
		return nil, err
	}
	if req.Body.Text == testapi.NoteTextTwice {
		if err := testapi.SendNoteCreated(ctx, tx, testapi.Note{ID: req.Body.ID + "-2", Text: testapi.NoteTextTwice}); err != nil {
			return nil, err
		}
	}
	if req.Body.Text == testapi.NoteTextFail {
		return nil, errors.New("business rule failed after sending")
	}
	return testapi.CreateNote201Response{Body: req.Body}, nil
}

// ledger is the receiving service: one row per note it was told about.
type ledger struct{}

func (ledger) NoteCreated(ctx context.Context, tx pgx.Tx, payload testapi.Note) error {
	d, _ := webhook.DeliveryFromContext(ctx)
	_, err := tx.Exec(ctx, `INSERT INTO received (name, body) VALUES ($1, $2)`, d.Key, payload.ID)
	return err
}

// twice publishes every event twice, as a relay that died between publish
// and commit would.
type twice struct{ events.Publisher }

func (p twice) Publish(ctx context.Context, ev cloudevents.Event) error {
	if err := p.Publisher.Publish(ctx, ev); err != nil {
		return err
	}
	return p.Publisher.Publish(ctx, ev)
}

func TestEndToEnd(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()

	// The receiver: the generated webhook handler, recording what it answered.
	var mu sync.Mutex
	var answers []string
	recv := httptest.NewServer(testapi.NewWebhookHandler(ledger{}, db, "ledger",
		testapi.WithWebhookMiddleware(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(w, r)
				mu.Lock()
				answers = append(answers, r.URL.Path+" key="+r.Header.Get("Idempotency-Key")+" replayed="+w.Header().Get("Idempotent-Replayed"))
				mu.Unlock()
			})
		})))
	defer recv.Close()

	// The sender: the generated API behind the idempotency engine.
	engine, err := idem.New(db, idem.Config{Operations: testapi.IdempotentOperations})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(testapi.NewHandler(notes{}, engine, testapi.WithSecurity(bearer{})))
	defer api.Close()
	var targets []string
	relay := events.NewRelay(db, twice{webhook.NewHTTPPublisher(webhook.PublisherConfig{
		Target: func(_ context.Context, ev cloudevents.Event) (string, error) {
			targets = append(targets, ev.Type()+" "+ev.Source())
			return recv.URL + testapi.DefaultWebhookBasePath + "/" + ev.Type(), nil
		},
	})}, events.RelayConfig{})

	create := func(key, id, text string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, api.URL+"/notes", strings.NewReader(`{"id":"`+id+`","text":"`+text+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Authorization", "Bearer t0ken")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	relayAll := func() int {
		t.Helper()
		n, err := relay.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	const key = "0195f3a4-8b1c-7d2e-9f00-1a2b3c4d5e6f"
	if st := create(key, "n1", "hello"); st != 201 {
		t.Fatalf("create: %d", st)
	}
	if st := create(key, "n1", "hello"); st != 201 { // the client's retry: replayed, no second event
		t.Fatalf("retry: %d", st)
	}
	if n := relayAll(); n != 1 {
		t.Fatalf("relay published %d events, want 1", n)
	}
	if n := count(t, db, `SELECT count(*) FROM received WHERE name = $1 AND body = 'n1'`, key); n != 1 {
		t.Fatalf("receiver ran %d times with key %s, want once", n, key)
	}
	want := []string{
		"/webhooks/note.created key=" + key + " replayed=",
		"/webhooks/note.created key=" + key + " replayed=true",
	}
	if strings.Join(answers, "\n") != strings.Join(want, "\n") {
		t.Fatalf("receiver answered\n%s\nwant\n%s", strings.Join(answers, "\n"), strings.Join(want, "\n"))
	}
	if targets[0] != "note.created urn:test:notes" {
		t.Errorf("event %s", targets[0])
	}

	// The sender's transaction rolls back: nothing is enqueued or delivered.
	answers = nil
	if st := create("0195f3a4-8b1c-7d2e-9f00-00000000fa11", "n2", "fail"); st != 500 {
		t.Fatalf("failing create: %d", st)
	}
	if n := relayAll(); n != 0 || len(answers) != 0 {
		t.Fatalf("after a rollback the relay published %d, the receiver saw %v", n, answers)
	}

	// One request sending two webhooks: both delivered (same key, distinct
	// CloudEvents ids), each once.
	const key2 = "0195f3a4-8b1c-7d2e-9f00-000000000002"
	if st := create(key2, "n3", "twice"); st != 201 {
		t.Fatalf("create twice: %d", st)
	}
	if n := relayAll(); n != 2 {
		t.Fatalf("relay published %d events, want 2", n)
	}
	if n := count(t, db, `SELECT count(*) FROM received WHERE name = $1`, key2); n != 2 {
		t.Fatalf("receiver rows for %s: %d, want 2", key2, n)
	}
	if n := count(t, db, `SELECT count(*) FROM received`); n != 3 {
		t.Fatalf("receiver rows: %d, want 3", n)
	}
	if n := count(t, db, `SELECT count(*) FROM idem_outbox`); n != 0 {
		t.Fatalf("outbox holds %d events", n)
	}
}

// A payload the receiver's schema refuses is a 400 before the inbox: the
// publisher reports a permanent error, the relay dead-letters the event and
// nothing is recorded; after events.Requeue it is delivered.
func TestEndToEndBadPayloadThenRequeue(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	recv := httptest.NewServer(testapi.NewWebhookHandler(ledger{}, db, "ledger"))
	defer recv.Close()

	path := "/webhooks/note.created"
	pub := webhook.NewHTTPPublisher(webhook.PublisherConfig{
		Target: func(context.Context, cloudevents.Event) (string, error) { return recv.URL + path, nil },
	})
	var dead []string
	relay := events.NewRelay(db, pub, events.RelayConfig{
		OnPublishError: func(ev cloudevents.Event, _ int, isDead bool, err error) {
			if isDead {
				dead = append(dead, ev.ID())
			}
		},
	})
	// An event enqueued outside a request, with a payload the receiver's
	// schema refuses (text not in the enum).
	key := idem.Key{Operation: "createNote", Value: "0195f3a4-8b1c-7d2e-9f00-0000000000bd"}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.Send(idem.ContextWithKey(ctx, key), tx, testapi.WebhookSource, testapi.WebhookTypeNoteCreated,
		map[string]string{"id": "n9", "text": "nope"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := relay.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 {
		t.Fatalf("dead-lettered %v, want the event", dead)
	}
	if n := count(t, db, `SELECT count(*) FROM idem_inbox`); n != 0 {
		t.Fatalf("inbox records after a refused payload: %d", n)
	}
	// Requeue it to a receiver that accepts any payload: delivered once.
	var ran int
	rc := webhook.NewReceiver(webhook.ReceiverConfig{DB: db, Consumer: "raw"})
	raw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.Receive(w, r, "note.created", func([]byte) (events.HandlerFunc, error) {
			return func(context.Context, pgx.Tx) error { ran++; return nil }, nil
		})
	}))
	defer raw.Close()
	recv.URL, path = raw.URL, ""
	if n, err := events.Requeue(ctx, db, "", dead[0]); err != nil || n != 1 {
		t.Fatalf("requeue: %d %v", n, err)
	}
	if n, err := relay.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("relay after requeue: %d %v", n, err)
	}
	if ran != 1 {
		t.Fatalf("handler ran %d times, want 1", ran)
	}
}
