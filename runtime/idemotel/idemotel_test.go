package idemotel_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemotel"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

var schema = fstest.MapFS{"9000_things.up.sql": {Data: []byte(`
CREATE TABLE things (id serial PRIMARY KEY, n int NOT NULL);
CREATE TABLE booked (id serial PRIMARY KEY, event_id text NOT NULL);`)}}

// memPublisher keeps what the relay publishes.
type memPublisher struct {
	mu  sync.Mutex
	evs []cloudevents.Event
}

func (p *memPublisher) Publish(_ context.Context, ev cloudevents.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = append(p.evs, ev)
	return nil
}

// TestOneTraceFromRequestToConsumer serves a request whose handler starts a
// span of its own and enqueues an event, replays it, relays the event and
// consumes it, recording spans with the SDK's in-memory exporter. The
// request's spans form the expected tree; the publish and process spans
// continue the request's trace under the handler's span; attributes name
// the outcome, attempt, fence and key hash, and no span holds the raw key.
func TestOneTraceFromRequestToConsumer(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tr := idemotel.New(idemotel.Options{TracerProvider: tp})

	db := pgtest.New(t, pgtest.Options{Migrations: schema})
	pol := idem.DefaultPolicy()
	pol.SchemaVersion = "v1"
	op := &idem.Operation{ID: "createThing", Method: "POST", Pattern: "/things", Policy: pol}
	eng, err := idem.New(db, idem.Config{Operations: []*idem.Operation{op}, Observers: []idem.Observer{tr}})
	if err != nil {
		t.Fatal(err)
	}
	handlerTracer := tp.Tracer("service")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The HTTP server span a service's middleware (otelhttp) would start.
		ctx, span := handlerTracer.Start(r.Context(), "POST /things", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		eng.Serve(w, r.WithContext(ctx), op, func([]byte) (idem.Prepared, error) {
			return idem.Prepared{Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				_, s := handlerTracer.Start(ctx, "gateway.charge")
				s.End()
				ev := cloudevents.New()
				ev.SetType("things.created")
				ev.SetSource("/things")
				if err := events.Enqueue(ctx, tx, ev); err != nil {
					return nil, err
				}
				return &idem.Response{Status: 201, Body: []byte(`{"id":1}`)}, nil
			}}, nil
		})
	}))
	defer srv.Close()
	key := uuid.NewString()
	post := func() { post201(t, srv.URL, key) }
	post()
	post() // a replay

	pub := &memPublisher{}
	if n, err := events.NewRelay(db, tr.Publisher(pub), events.RelayConfig{}).RunOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("relay: %d, %v", n, err)
	}
	handle := tr.Handler(func(ctx context.Context, tx pgx.Tx, ev cloudevents.Event) error {
		_, err := tx.Exec(ctx, `INSERT INTO booked (event_id) VALUES ($1)`, ev.ID())
		return err
	})
	ev := pub.evs[0]
	if _, err := events.Handle(context.Background(), db, "books", ev, func(ctx context.Context, tx pgx.Tx) error {
		return handle(ctx, tx, ev)
	}); err != nil {
		t.Fatal(err)
	}

	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		byID[s.SpanContext.SpanID()] = s
	}
	parentName := func(s tracetest.SpanStub) string {
		if p, ok := byID[s.Parent.SpanID()]; ok {
			return p.Name
		}
		return "(root)"
	}
	// The tree, as "child <- parent" lines, per trace.
	var tree []string
	for _, s := range spans {
		tree = append(tree, s.Name+" <- "+parentName(s))
	}
	sort.Strings(tree)
	want := []string{
		"POST /things <- (root)", "POST /things <- (root)",
		"gateway.charge <- idem.handler",
		"idem createThing <- POST /things", "idem createThing <- POST /things",
		"idem.claim <- idem createThing",
		"idem.handler <- idem createThing",
		"idem.read <- idem createThing", "idem.read <- idem createThing",
		"idem.replay <- idem createThing",
		"idem.store <- idem createThing",
		"process things.created <- idem.handler",
		"publish things.created <- idem.handler",
	}
	if strings.Join(tree, "\n") != strings.Join(want, "\n") {
		t.Errorf("span tree:\n%s\nwant:\n%s", strings.Join(tree, "\n"), strings.Join(want, "\n"))
	}
	// One trace from the first request to the consumer, carried by the
	// event's traceparent extension.
	first := byName["idem.handler"][0].SpanContext.TraceID()
	if tp, _ := ev.Extensions()["traceparent"].(string); !strings.Contains(tp, first.String()) {
		t.Errorf("the published event's traceparent is %q, want the request's trace %s", tp, first)
	}
	for _, name := range []string{"publish things.created", "process things.created", "gateway.charge", "idem.store"} {
		if got := byName[name][0].SpanContext.TraceID(); got != first {
			t.Errorf("%s is in trace %s, the request in %s", name, got, first)
		}
	}
	if k := byName["publish things.created"][0].SpanKind; k != trace.SpanKindProducer {
		t.Errorf("publish span kind %v", k)
	}
	if k := byName["process things.created"][0].SpanKind; k != trace.SpanKindConsumer {
		t.Errorf("process span kind %v", k)
	}

	hash := idem.Key{Operation: "createThing", Value: key}.Hash()
	attrs := func(s tracetest.SpanStub) map[string]string {
		m := map[string]string{}
		for _, a := range s.Attributes {
			m[string(a.Key)] = a.Value.Emit()
		}
		return m
	}
	reqs := byName["idem createThing"]
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].StartTime.Before(reqs[j].StartTime) })
	for i, want := range []map[string]string{
		{"idem.operation": "createThing", "idem.outcome": "executed", "idem.replayed": "false", "idem.attempt": "1", "idem.fence": "1", "idem.key_hash": hash, "http.response.status_code": "201"},
		{"idem.outcome": "replayed", "idem.replayed": "true", "idem.attempt": "0", "idem.key_hash": hash},
	} {
		got := attrs(reqs[i])
		for k, v := range want {
			if got[k] != v {
				t.Errorf("request %d: %s = %q, want %q (all: %v)", i+1, k, got[k], v, got)
			}
		}
	}
	// No span, attribute or event holds the raw key.
	for _, s := range spans {
		if strings.Contains(s.Name, key) {
			t.Errorf("span name %q holds the key", s.Name)
		}
		for k, v := range attrs(s) {
			if strings.Contains(v, key) {
				t.Errorf("span %s: attribute %s holds the key", s.Name, k)
			}
		}
		for _, e := range s.Events {
			if strings.Contains(fmt.Sprint(e.Attributes), key) {
				t.Errorf("span %s: event %s holds the key", s.Name, e.Name)
			}
		}
	}
}

// TestLeaseTakeoverSpans: a lease-mode claim whose holder died is taken over
// by a retry; its request span has the claim, the recovery hook, the
// handler and the store as children, and says attempt 2, fence 2,
// recovered.
func TestLeaseTakeoverSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tr := idemotel.New(idemotel.Options{TracerProvider: tp})

	db := pgtest.New(t, pgtest.Options{Migrations: schema})
	pol := idem.DefaultPolicy()
	pol.Mode, pol.Lease, pol.SchemaVersion = idem.ModeLease, 5*time.Second, "v1"
	op := &idem.Operation{ID: "chargeThing", Method: "POST", Pattern: "/things", Policy: pol}
	eng, err := idem.New(db, idem.Config{
		Operations: []*idem.Operation{op},
		Observers:  []idem.Observer{tr},
		Recover: map[string]idem.RecoverFunc{"chargeThing": func(context.Context, idem.Recovery) (idem.Decision, error) {
			return idem.NotExecuted(), nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		eng.Serve(w, r, op, func([]byte) (idem.Prepared, error) {
			return idem.Prepared{Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				return &idem.Response{Status: 201, Body: []byte(`{"id":1}`)}, nil
			}}, nil
		})
	}))
	defer srv.Close()
	key := uuid.NewString()
	post := func() { post201(t, srv.URL, key) }
	post()
	// As if the holder had died mid-request: the claim's lease lapsed.
	if _, err := db.Exec(context.Background(), `UPDATE idem_records SET state = 'IN_PROGRESS', response_status = NULL,
		response_headers = NULL, response_body = NULL, completed_at = NULL, lease_expires_at = now() - interval '1 second'
		WHERE idempotency_key = $1`, key); err != nil {
		t.Fatal(err)
	}
	exp.Reset()
	post()

	spans := exp.GetSpans()
	var root tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "idem chargeThing" {
			root = s
		}
	}
	var children []string
	for _, s := range spans {
		if s.Parent.SpanID() == root.SpanContext.SpanID() {
			children = append(children, s.Name)
		}
	}
	sort.Strings(children)
	if got, want := strings.Join(children, " "), "idem.claim idem.handler idem.read idem.recover idem.store"; got != want {
		t.Errorf("children of the takeover's span: %s, want %s", got, want)
	}
	got := map[string]string{}
	for _, a := range root.Attributes {
		got[string(a.Key)] = a.Value.Emit()
	}
	for k, v := range map[string]string{"idem.outcome": "recovered", "idem.attempt": "2", "idem.fence": "2", "idem.replayed": "false",
		"idem.mode": "lease", "idem.key_hash": idem.Key{Operation: "chargeThing", Value: key}.Hash()} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	for _, s := range spans {
		if strings.Contains(s.Name, key) || strings.Contains(fmt.Sprint(s.Attributes), key) || strings.Contains(fmt.Sprint(s.Events), key) {
			t.Errorf("span %s holds the key", s.Name)
		}
	}
}

// post201 sends POST {"n":1} with Idempotency-Key key to url and fails the
// test unless the answer is 201.
func post201(t *testing.T, url, key string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"n":1}`))
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}
