package idemclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/downstream"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

var (
	testSecret = []byte("a downstream secret of 32 bytes.")
	testRecord = downstream.Record{Tenant: "acme", Operation: "cancelBooking", Key: "0198a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"}
)

// inRequest is the context of a handler the engine runs for testRecord.
func inRequest() context.Context {
	return downstream.NewContext(context.Background(), testSecret, testRecord)
}

func derivedFor(t *testing.T, site string, f downstream.Format) string {
	t.Helper()
	k, err := downstream.Derive(testSecret, testRecord, site, f)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// callIn calls op on s with ctx, the request's key parameter set to
// reqKey ("" for none).
func callIn(t *testing.T, ctx context.Context, s *script, op Operation, reqKey string, opts ...CallOption) (*Result[thing], error) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, WithRetryPolicy(fast), WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
	if err != nil {
		t.Fatal(err)
	}
	req := NewRequest("/things")
	req.Key = reqKey
	if err := req.JSON("application/json", map[string]any{"amount": 5}); err != nil {
		t.Fatal(err)
	}
	return Do(ctx, c, &op, req, readThing, opts...)
}

// TestDerivedKeys: inside an idempotent request, a call without a key of
// its own carries the key derived from the request and the call site (the
// operation's ID, or WithKeySite), on every attempt and in every call of
// the same site; a key the caller gives wins.
func TestDerivedKeys(t *testing.T) {
	want := derivedFor(t, "createThing", downstream.UUID)
	for i := range 2 { // two calls: two attempts of the incoming request
		s := &script{steps: []func(http.ResponseWriter, *http.Request){problem(503, idemproblem.ReasonDatabaseDown, "0"), hangUp, created(false)}}
		res, err := callIn(t, inRequest(), s, createOp, "")
		if err != nil {
			t.Fatal(err)
		}
		if res.Key != want || res.KeySite != "createThing" || res.Attempts != 3 {
			t.Fatalf("call %d: key %s (site %q) after %d attempts, want %s (createThing) after 3", i+1, res.Key, res.KeySite, res.Attempts, want)
		}
		for _, a := range s.attempts() {
			if a.key != want {
				t.Fatalf("call %d: an attempt carried %s, want %s", i+1, a.key, want)
			}
		}
	}
	for _, c := range []struct {
		name      string
		reqKey    string
		opts      []CallOption
		key, site string
		op        Operation
	}{
		{name: "named site", opts: []CallOption{WithKeySite("refund/2")}, key: derivedFor(t, "refund/2", downstream.UUID), site: "refund/2", op: createOp},
		{name: "explicit key", opts: []CallOption{WithIdempotencyKey("018f0000-0000-7000-8000-000000000001"), WithKeySite("refund/2")}, key: "018f0000-0000-7000-8000-000000000001", op: createOp},
		{name: "key parameter", reqKey: "018f0000-0000-7000-8000-000000000002", key: "018f0000-0000-7000-8000-000000000002", op: createOp},
		{name: "uuidv4", op: withFormat(createOp, "uuidv4"), key: derivedFor(t, "createThing", downstream.UUIDv4), site: "createThing"},
		{name: "uuidv7", op: withFormat(createOp, "uuidv7"), key: derivedFor(t, "createThing", downstream.UUIDv7), site: "createThing"},
		{name: "opaque", op: withFormat(createOp, "opaque"), key: want, site: "createThing"},
	} {
		s := &script{steps: []func(http.ResponseWriter, *http.Request){created(false)}}
		res, err := callIn(t, inRequest(), s, c.op, c.reqKey, c.opts...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Key != c.key || res.KeySite != c.site || s.attempts()[0].key != c.key {
			t.Fatalf("%s: sent %s (site %q), want %s (site %q)", c.name, s.attempts()[0].key, res.KeySite, c.key, c.site)
		}
		if c.op.KeyFormat != "opaque" && c.site != "" {
			if _, err := idem.ParseKey(res.Key, idem.KeyFormat(c.op.KeyFormat)); err != nil {
				t.Fatalf("%s: keyFormat %s refuses the derived key: %v", c.name, c.op.KeyFormat, err)
			}
		}
	}
}

func withFormat(op Operation, f string) Operation {
	op.KeyFormat = f
	return op
}

// TestOutsideARequest: a call made outside an idempotent request gets a
// fresh key, unless it names a call site: then it is an error, and nothing
// is sent.
func TestOutsideARequest(t *testing.T) {
	s := &script{steps: []func(http.ResponseWriter, *http.Request){created(false)}}
	res, err := callIn(t, context.Background(), s, createOp, "")
	if err != nil {
		t.Fatal(err)
	}
	if u, err := uuid.Parse(res.Key); err != nil || u.Version() != 7 || res.KeySite != "" {
		t.Fatalf("key %s (site %q): want a fresh UUIDv7", res.Key, res.KeySite)
	}
	_, err = callIn(t, context.Background(), s, createOp, "", WithKeySite("refund"))
	if !errors.Is(err, downstream.ErrNoRequest) || !strings.Contains(err.Error(), `createThing: deriving the idempotency key of call site "refund"`) {
		t.Fatalf("a named site outside a request: %v", err)
	}
	if n := len(s.attempts()); n != 1 {
		t.Fatalf("%d requests sent, want 1", n)
	}
}

// TestDerivedKeyConflict: a downstream that refuses a derived key reused
// with another request is reported as a conflict, not retried, and the
// error says why that happens.
func TestDerivedKeyConflict(t *testing.T) {
	s := &script{steps: []func(http.ResponseWriter, *http.Request){problem(409, idemproblem.ReasonConflict, "")}}
	_, err := callIn(t, inRequest(), s, createOp, "")
	if !IsConflict(err) || IsRetryable(err) || len(s.attempts()) != 1 {
		t.Fatalf("conflict: %v after %d attempts", err, len(s.attempts()))
	}
	if !strings.Contains(err.Error(), `the key was derived from the incoming request (call site "createThing") and an earlier attempt of it sent another request under it`) {
		t.Fatalf("conflict message: %v", err)
	}
	// A conflict on a key of the caller's says nothing of derivation.
	_, err = callIn(t, inRequest(), s, createOp, "", WithIdempotencyKey("018f0000-0000-7000-8000-000000000001"))
	if !IsConflict(err) || strings.Contains(err.Error(), "derived") {
		t.Fatalf("conflict on a given key: %v", err)
	}
}
