package idemclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// script is a server that answers attempt n with steps[n] (the last one
// repeats) and records what every attempt carried.
type script struct {
	mu    sync.Mutex
	steps []func(w http.ResponseWriter, r *http.Request)
	seen  []seen
}

type seen struct {
	key, body, ctype string
	keys             int
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.seen)
	s.seen = append(s.seen, seen{key: r.Header.Get("Idempotency-Key"), body: string(b), ctype: r.Header.Get("Content-Type"), keys: len(r.Header.Values("Idempotency-Key"))})
	step := s.steps[min(n, len(s.steps)-1)]
	s.mu.Unlock()
	step(w, r)
}

func (s *script) attempts() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.seen...)
}

func problem(status int, reason string, retryAfter string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"about:blank","title":%q,"status":%d,"code":"C%d","reason":%q,"detail":"d"}`, http.StatusText(status), status, status, reason)
	}
}

func created(replayed bool) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = io.WriteString(w, `{"id":"pay_1"}`)
	}
}

// hangUp closes the connection without answering: a transport error after
// the request was sent.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

var (
	createOp = Operation{ID: "createThing", Method: "POST", Idempotent: true, KeyHeader: "Idempotency-Key", KeyFormat: "uuid"}
	quoteOp  = Operation{ID: "quoteThing", Method: "POST"}
	getOp    = Operation{ID: "getThing", Method: "GET"}
)

type thing struct {
	ID string `json:"id"`
}

func readThing(r *Response) (thing, error) {
	var t thing
	if r.Status == 201 && r.Declared("application/json") {
		return t, r.DecodeJSON(&t)
	}
	return t, r.Error()
}

// fast is a policy whose backoff does not slow the tests down.
var fast = RetryPolicy{MaxAttempts: 10, InitialBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}

func doCall(t *testing.T, s *script, op Operation, pol RetryPolicy, opts ...CallOption) (*Result[thing], error, []Attempt) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	// No connection reuse: net/http resends a request with an
	// Idempotency-Key by itself when a reused connection closes before any
	// answer, which would hide hangUp from the count.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	c, err := New(srv.URL+"/api/", WithRetryPolicy(pol), WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	req := NewRequest("/things")
	if err := req.JSON("application/json", map[string]any{"amount": 5, "note": "x"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var as []Attempt
	opts = append(opts, WithAttemptObserver(func(a Attempt) { mu.Lock(); as = append(as, a); mu.Unlock() }))
	res, err := Do(context.Background(), c, &op, req, readThing, opts...)
	return res, err, as
}

func TestRetriesSendOneKeyAndTheSameBytes(t *testing.T) {
	s := &script{steps: []func(http.ResponseWriter, *http.Request){
		problem(503, idemproblem.ReasonDatabaseDown, "0"),
		problem(500, idemproblem.ReasonInternal, ""),
		hangUp,
		problem(409, idemproblem.ReasonInProgress, "0"),
		problem(409, idemproblem.ReasonLeaseLost, "0"),
		problem(502, "", ""),
		created(true),
	}}
	res, err, as := doCall(t, s, createOp, fast)
	if err != nil {
		t.Fatal(err)
	}
	got := s.attempts()
	if res.Attempts != 7 || len(as) != 7 || len(got) != 7 {
		t.Fatalf("%d attempts seen, result says %d, observer %d; want 7", len(got), res.Attempts, len(as))
	}
	u, err := uuid.Parse(res.Key)
	if err != nil || u.Version() != 7 || u.String() != res.Key {
		t.Fatalf("key %q is not a canonical UUIDv7 (%v)", res.Key, err)
	}
	for i, a := range got {
		if a.key != res.Key || a.keys != 1 || a.body != got[0].body || a.ctype != "application/json" {
			t.Errorf("attempt %d carried key %q (%d values), body %q, type %q; want key %q, body %q", i+1, a.key, a.keys, a.body, a.ctype, res.Key, got[0].body)
		}
	}
	if !res.Replayed || res.Status != 201 || res.Response.ID != "pay_1" {
		t.Errorf("result %+v", res)
	}
	for i, a := range as[:6] {
		if !a.Retry || a.N != i+1 || a.Key != res.Key {
			t.Errorf("attempt %+v: want a retry", a)
		}
	}
	transport := 0
	for _, a := range as {
		if a.Status == 0 && a.Err != nil {
			transport++
		}
	}
	if transport != 1 {
		t.Errorf("%d transport errors among the attempts %+v, want 1 (the hang-up)", transport, as)
	}
}

func TestNeverRetried(t *testing.T) {
	cases := []struct {
		name  string
		step  func(http.ResponseWriter, *http.Request)
		check func(error) bool
	}{
		{"409 conflict", problem(409, idemproblem.ReasonConflict, "1"), IsConflict},
		{"422 conflict (ietf)", problem(422, idemproblem.ReasonConflict, ""), IsConflict},
		{"400 malformed key", problem(400, idemproblem.ReasonKeyMalformed, ""), IsKeyError},
		{"409 schema changed", problem(409, idemproblem.ReasonSchemaChanged, ""), func(err error) bool { return !IsRetryable(err) }},
		{"400 invalid request", problem(400, idemproblem.ReasonInvalidRequest, ""), func(err error) bool { return StatusOf(err) == 400 && !IsKeyError(err) }},
		{"400 key required", problem(400, idemproblem.ReasonKeyRequired, ""), IsKeyError},
		{"415 media type", problem(415, idemproblem.ReasonMediaType, ""), func(err error) bool { return StatusOf(err) == 415 }},
		{"401 unauthenticated", problem(401, idemproblem.ReasonUnauthenticated, ""), func(err error) bool { return StatusOf(err) == 401 }},
		{"422 undeclared", problem(422, "", ""), func(err error) bool { return StatusOf(err) == 422 && !IsConflict(err) }},
		{"404", problem(404, "", ""), func(err error) bool { return StatusOf(err) == 404 }},
		{"501", problem(501, "", ""), func(err error) bool { return !IsRetryable(err) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{steps: []func(http.ResponseWriter, *http.Request){tc.step, created(false)}}
			_, err, _ := doCall(t, s, createOp, fast)
			if n := len(s.attempts()); n != 1 {
				t.Fatalf("%d attempts, want 1", n)
			}
			var e *Error
			if !errors.As(err, &e) || !tc.check(err) || e.Attempts != 1 || e.Key == "" || e.Problem == nil || e.Problem.Detail != "d" {
				t.Fatalf("err = %#v", err)
			}
			if IsRetryable(err) && tc.name != "404" {
				t.Errorf("IsRetryable(%v) = true", err)
			}
		})
	}
}

func TestNonIdempotentPostIsNotRetriedUnlessAsked(t *testing.T) {
	for _, step := range []func(http.ResponseWriter, *http.Request){problem(503, "", "0"), hangUp} {
		s := &script{steps: []func(http.ResponseWriter, *http.Request){step, created(false)}}
		_, err, _ := doCall(t, s, quoteOp, fast)
		if n := len(s.attempts()); n != 1 || err == nil {
			t.Fatalf("%d attempts, err %v; want 1 and an error", n, err)
		}
		var te *TransportError
		if errors.As(err, &te) && (IsRetryable(err) || !te.Unsafe) {
			t.Errorf("a cut call of a non-idempotent POST says it may be sent again: %#v", err)
		}
		if s.attempts()[0].key != "" {
			t.Errorf("a non-idempotent operation sent a key %q", s.attempts()[0].key)
		}
		s = &script{steps: []func(http.ResponseWriter, *http.Request){step, created(false)}}
		res, err, _ := doCall(t, s, quoteOp, fast, WithRetryUnsafe())
		if err != nil || res.Attempts != 2 || res.Key != "" {
			t.Fatalf("WithRetryUnsafe: %+v, %v; want 2 attempts and no key", res, err)
		}
		// Opted in, a call cut on its last attempt may be made again.
		s = &script{steps: []func(http.ResponseWriter, *http.Request){hangUp}}
		_, err, _ = doCall(t, s, quoteOp, fast, WithRetryUnsafe(), WithMaxAttempts(1))
		if !errors.As(err, new(*TransportError)) || !IsRetryable(err) {
			t.Errorf("WithRetryUnsafe, cut: %#v; want a retryable TransportError", err)
		}
	}
	// GET is idempotent by HTTP's definition: retried without a key.
	s := &script{steps: []func(http.ResponseWriter, *http.Request){hangUp, problem(503, "", "0"), created(false)}}
	res, err, _ := doCall(t, s, getOp, fast)
	if err != nil || res.Attempts != 3 {
		t.Fatalf("GET: %+v, %v; want 3 attempts", res, err)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	// The policy's backoff (1-4ms) is far from a second: only Retry-After
	// makes the client wait one. Each step is timed by the server too.
	for _, step := range []struct {
		name string
		h    func(http.ResponseWriter, *http.Request)
	}{
		{"409 in progress", problem(409, idemproblem.ReasonInProgress, "1")},
		{"503 database down", problem(503, idemproblem.ReasonDatabaseDown, "1")},
		{"503 as an HTTP date", func(w http.ResponseWriter, r *http.Request) {
			problem(503, idemproblem.ReasonOutcomeUnknown, time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))(w, r)
		}},
	} {
		t.Run(step.name, func(t *testing.T) {
			var at []time.Time
			var mu sync.Mutex
			stamp := func(next func(http.ResponseWriter, *http.Request)) func(http.ResponseWriter, *http.Request) {
				return func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					at = append(at, time.Now())
					mu.Unlock()
					next(w, r)
				}
			}
			s := &script{steps: []func(http.ResponseWriter, *http.Request){stamp(step.h), stamp(created(true))}}
			res, err, as := doCall(t, s, createOp, fast)
			if err != nil || res.Attempts != 2 {
				t.Fatalf("%+v, %v", res, err)
			}
			// An HTTP date has a resolution of one second: it asks for
			// 1-2s from now.
			if as[0].Wait < 900*time.Millisecond || as[0].Wait > 2200*time.Millisecond {
				t.Fatalf("waited %s after Retry-After, want about 1s (or 1-2s for a date)", as[0].Wait)
			}
			if gap := at[1].Sub(at[0]); gap < 900*time.Millisecond {
				t.Fatalf("the retry came %s after the answer asking for a second", gap)
			}
		})
	}
	// Longer than MaxRetryAfter: the call ends with the response.
	s := &script{steps: []func(http.ResponseWriter, *http.Request){problem(503, "", "3600"), created(true)}}
	_, err, _ := doCall(t, s, createOp, fast)
	if StatusOf(err) != 503 || len(s.attempts()) != 1 || !IsRetryable(err) {
		t.Fatalf("err %v after %d attempts; want the 503 after 1", err, len(s.attempts()))
	}
	var e *Error
	if errors.As(err, &e); e.RetryAfter != time.Hour {
		t.Errorf("RetryAfter = %s, want 1h", e.RetryAfter)
	}
}

func TestTheContextIsTheBudget(t *testing.T) {
	s := &script{steps: []func(http.ResponseWriter, *http.Request){problem(503, idemproblem.ReasonOutcomeUnknown, "5"), created(true)}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c, _ := New(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var as []Attempt
	_, err := Do(ctx, c, &createOp, NewRequest("/things"), readThing, WithAttemptObserver(func(a Attempt) { as = append(as, a) }))
	// A 5s wait cannot fit a 2s budget: the call answers with the 503 at
	// once rather than sleeping into the deadline.
	if StatusOf(err) != 503 || len(as) != 1 || as[0].Retry || !IsRetryable(err) || ctx.Err() != nil {
		t.Fatalf("err %v, attempts %+v, ctx %v", err, as, ctx.Err())
	}

	// A context ending during a wait ends the call with its error and the key.
	s = &script{steps: []func(http.ResponseWriter, *http.Request){problem(503, "", "")}}
	srv2 := httptest.NewServer(s)
	defer srv2.Close()
	c2, _ := New(srv2.URL, WithRetryPolicy(RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: time.Hour}))
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() {
		for len(s.attempts()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel2()
	}()
	_, err = Do(ctx2, c2, &createOp, NewRequest("/things"), readThing)
	var te *TransportError
	if !errors.As(err, &te) || !errors.Is(err, context.Canceled) || te.Key == "" || te.Attempts != 1 {
		t.Fatalf("err = %#v", err)
	}
}

func TestMaxAttempts(t *testing.T) {
	s := &script{steps: []func(http.ResponseWriter, *http.Request){problem(503, "", "")}}
	pol := fast
	pol.MaxAttempts = 3
	_, err, _ := doCall(t, s, createOp, pol)
	var e *Error
	if !errors.As(err, &e) || e.Attempts != 3 || len(s.attempts()) != 3 || !IsRetryable(err) {
		t.Fatalf("err %v after %d attempts", err, len(s.attempts()))
	}
	if !strings.Contains(err.Error(), "after 3 attempts") || !strings.HasPrefix(err.Error(), "createThing: 503") {
		t.Errorf("message %q", err)
	}
	s = &script{steps: []func(http.ResponseWriter, *http.Request){problem(503, "", "")}}
	if _, err, _ := doCall(t, s, createOp, fast, WithMaxAttempts(1)); StatusOf(err) != 503 || len(s.attempts()) != 1 {
		t.Fatalf("WithMaxAttempts(1): %v after %d attempts", err, len(s.attempts()))
	}
}

func TestAttemptTimeoutRetriesAHungServer(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := &script{steps: []func(http.ResponseWriter, *http.Request){
		func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
		created(true),
	}}
	res, err, as := doCall(t, s, createOp, fast, WithAttemptTimeout(100*time.Millisecond))
	if err != nil || res.Attempts != 2 || !errors.Is(as[0].Err, context.DeadlineExceeded) {
		t.Fatalf("%+v, %v, first attempt %+v", res, err, as[0])
	}
	if got := s.attempts(); got[0].key != got[1].key {
		t.Errorf("keys %q and %q", got[0].key, got[1].key)
	}
}

func TestKeys(t *testing.T) {
	s := &script{steps: []func(http.ResponseWriter, *http.Request){created(false)}}
	res, _, _ := doCall(t, s, createOp, fast, WithIdempotencyKey("0190a8e2-7c3b-7d4e-8f00-000000000001"))
	if res.Key != "0190a8e2-7c3b-7d4e-8f00-000000000001" || s.attempts()[0].key != res.Key {
		t.Fatalf("WithIdempotencyKey: sent %q, result %q", s.attempts()[0].key, res.Key)
	}
	v4 := createOp
	v4.KeyFormat = "uuidv4"
	s = &script{steps: []func(http.ResponseWriter, *http.Request){created(false)}}
	res, _, _ = doCall(t, s, v4, fast)
	if u, err := uuid.Parse(res.Key); err != nil || u.Version() != 4 {
		t.Fatalf("uuidv4 operation got key %q", res.Key)
	}
	// Two calls, two keys.
	a, _ := NewKey("uuid")
	b, _ := NewKey("uuid")
	if a == b {
		t.Error("two calls minted the same key")
	}
}

func TestRequestEditorErrorEndsTheCall(t *testing.T) {
	s := &script{steps: []func(http.ResponseWriter, *http.Request){created(false)}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	boom := errors.New("no credentials")
	c, _ := New(srv.URL, WithRequestEditor(func(*http.Request) error { return boom }))
	_, err := Do(context.Background(), c, &createOp, NewRequest("/things"), readThing)
	if !errors.Is(err, boom) || len(s.attempts()) != 0 {
		t.Fatalf("err %v, %d attempts", err, len(s.attempts()))
	}
}

func TestBaseURLAndParameters(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		created(false)(w, r)
	}))
	defer srv.Close()
	c, err := New(srv.URL+"/prefix/", WithRequestEditor(func(r *http.Request) error { r.Header.Set("Authorization", "Bearer t"); return nil }))
	if err != nil {
		t.Fatal(err)
	}
	type status string
	limit := int32(7)
	r := NewRequest("/things/" + PathParam("a b/c") + "/x")
	QueryOptional(r, "limit", &limit)
	QueryOptional[int64](r, "absent", nil)
	QueryList(r, "tag", []status{"new", "old"}, true)
	QueryList(r, "ids", []int64{1, 2}, false)
	Query(r, "at", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	Query(r, "id", uuid.MustParse("0190a8e2-7c3b-7d4e-8f00-000000000001"))
	Header(r, "X-Flag", true)
	Cookie(r, "session", "s1")
	if _, err := Do(context.Background(), c, &getOp, r, readThing); err != nil {
		t.Fatal(err)
	}
	if got.URL.EscapedPath() != "/prefix/things/a%20b%2Fc/x" {
		t.Errorf("path %q", got.URL.EscapedPath())
	}
	q := got.URL.Query()
	if q.Get("limit") != "7" || q.Has("absent") || strings.Join(q["tag"], "|") != "new|old" || q.Get("ids") != "1,2" ||
		q.Get("at") != "2024-01-02T03:04:05Z" || q.Get("id") != "0190a8e2-7c3b-7d4e-8f00-000000000001" {
		t.Errorf("query %v", q)
	}
	if got.Header.Get("X-Flag") != "true" || got.Header.Get("Authorization") != "Bearer t" || got.Header.Get("Cookie") != "session=s1" {
		t.Errorf("headers %v", got.Header)
	}
	if _, err := New("localhost:8080"); err == nil {
		t.Error("a base URL without a scheme was accepted")
	}
}

// TestBasePath: WithBasePath adds the server's base path to the base URL
// unless the base URL already ends in it (the spec's server URL), and a
// later WithBasePath replaces an earlier one (a generated client passes its
// own first).
func TestBasePath(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.EscapedPath()
		created(false)(w, r)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		base string
		opts []Option
		want string
	}{
		{srv.URL, []Option{WithBasePath("/v1")}, "/v1/things"},
		{srv.URL + "/", []Option{WithBasePath("/v1/")}, "/v1/things"},
		{srv.URL + "/v1", []Option{WithBasePath("/v1")}, "/v1/things"},
		{srv.URL + "/v1/", []Option{WithBasePath("/v1")}, "/v1/things"},
		{srv.URL + "/gateway", []Option{WithBasePath("/v1")}, "/gateway/v1/things"},
		{srv.URL + "/xv1", []Option{WithBasePath("/v1")}, "/xv1/v1/things"},
		{srv.URL, []Option{WithBasePath("/v1"), WithBasePath("/api")}, "/api/things"},
		{srv.URL, []Option{WithBasePath("/v1"), WithBasePath("")}, "/things"},
	} {
		c, err := New(tc.base, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Do(context.Background(), c, &getOp, NewRequest("/things"), readThing); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("base URL %s: path %q, want %q", tc.base, got, tc.want)
		}
	}
}

func TestDeclared(t *testing.T) {
	resp := func(ct, body string) *Response {
		return &Response{Status: 200, Header: http.Header{"Content-Type": {ct}}, Body: []byte(body)}
	}
	for _, tc := range []struct {
		ct, declared string
		want, other  bool
	}{
		{"application/json; charset=utf-8", "application/json", true, true},
		{"application/vnd.api+json", "application/json", true, true},
		{"application/problem+json", "application/json", false, false},
		{"application/problem+json", "application/problem+json", true, false},
		{"text/html", "application/json", false, false},
		{"application/pdf", "application/*", true, true},
		{"application/problem+json", "*/*", false, false},
		{"image/png", "*/*", true, true},
		// text/json is JSON to the server's decoder, so to the client too.
		{"text/json", "application/json", true, true},
	} {
		r := resp(tc.ct, "{}")
		if r.Declared(tc.declared) != tc.want || r.DeclaredOther(tc.declared) != tc.other {
			t.Errorf("%s as %s: Declared %v, DeclaredOther %v; want %v, %v", tc.ct, tc.declared, r.Declared(tc.declared), r.DeclaredOther(tc.declared), tc.want, tc.other)
		}
	}
	if !resp("", "").Declared("") || resp("application/problem+json", "{}").Declared("") {
		t.Error("Declared(\"\") for an empty body, or not for a problem")
	}
	var d *DecodeError
	if err := resp("application/json", "{").DecodeJSON(&struct{}{}); !errors.As(err, &d) || d.Status != 200 {
		t.Errorf("DecodeJSON of a broken body: %v", err)
	}
	if err := resp("application/json", "{} {}").DecodeJSON(&struct{}{}); !errors.As(err, &d) {
		t.Errorf("DecodeJSON of two values: %v", err)
	}
	// Untyped numbers keep their digits, as the server decodes them.
	var v map[string]any
	if err := resp("application/json", `{"n":9007199254740993}`).DecodeJSON(&v); err != nil || v["n"] != json.Number("9007199254740993") {
		t.Errorf("DecodeJSON of a number past 2^53 into any: %#v, %v", v, err)
	}
}

func TestBackoff(t *testing.T) {
	pol := RetryPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	for n := 1; n <= 8; n++ {
		ceiling := min(100*time.Millisecond<<(n-1), time.Second)
		for range 50 {
			if d := backoff(n, pol); d < ceiling/2 || d > ceiling {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", n, d, ceiling/2, ceiling)
			}
		}
	}
}

func TestEncode(t *testing.T) {
	type item struct {
		Price    string `json:"price"`
		Quantity int    `json:"quantity"`
	}
	type form struct {
		Amount   int64             `json:"amount"`
		Expand   []string          `json:"expand"`
		Metadata map[string]string `json:"metadata"`
		Items    []item            `json:"items"`
		Note     *string           `json:"note"`
		Live     bool              `json:"live"`
	}
	r := NewRequest("/")
	if err := r.Encode("application/x-www-form-urlencoded", form{Amount: 5, Expand: []string{"a", "b"},
		Metadata: map[string]string{"order": "6735"}, Items: []item{{"p_1", 2}}, Live: true}); err != nil {
		t.Fatal(err)
	}
	want := "amount=5&expand=a&expand=b&items%5B0%5D%5Bprice%5D=p_1&items%5B0%5D%5Bquantity%5D=2&live=true&metadata%5Border%5D=6735"
	if string(r.Body) != want || r.ContentType != "application/x-www-form-urlencoded" {
		t.Errorf("form %s (%s), want %s", r.Body, r.ContentType, want)
	}
	for _, v := range []any{[]byte("raw"), "raw", strings.NewReader("raw")} {
		r := NewRequest("/")
		if err := r.Encode("application/octet-stream", v); err != nil || string(r.Body) != "raw" {
			t.Errorf("%T: %q, %v", v, r.Body, err)
		}
	}
	var nilForm *form
	if err := r.Encode("application/x-www-form-urlencoded", nilForm); err != nil {
		t.Errorf("a nil body: %v", err)
	}
	if err := NewRequest("/").Encode("application/xml", form{}); err == nil {
		t.Error("a struct encoded as XML")
	}
	// A body declared text/json is JSON, as the generated server reads it.
	j := NewRequest("/")
	if err := j.Encode("text/json", item{"p_1", 2}); err != nil || string(j.Body) != `{"price":"p_1","quantity":2}` || j.ContentType != "text/json" {
		t.Errorf("text/json: %s (%s), %v", j.Body, j.ContentType, err)
	}
}

// TestPredicates: what each predicate says of the errors a call can end
// with, also wrapped by the caller.
func TestPredicates(t *testing.T) {
	prob := func(status int, code, reason string) error {
		h := http.Header{"Content-Type": {"application/problem+json"}}
		body := fmt.Sprintf(`{"type":"about:blank","title":"t","status":%d,"code":%q,"reason":%q}`, status, code, reason)
		return (&Response{Operation: "op", Status: status, Header: h, Body: []byte(body), Key: "k", Attempts: 1}).Error()
	}
	plain := func(status int) error {
		return (&Response{Operation: "op", Status: status, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("no")}).Error()
	}
	transport := &TransportError{Operation: "op", Key: "k", Attempts: 3, Err: errors.New("connection reset")}
	type want struct{ conflict, inFlight, keyError, retryable bool }
	for _, tc := range []struct {
		name string
		err  error
		want want
	}{
		{"409 conflict", prob(409, idemproblem.CodeConflict, idemproblem.ReasonConflict), want{conflict: true}},
		{"422 conflict (ietf)", prob(422, "", idemproblem.ReasonConflict), want{conflict: true}},
		{"409 in progress", prob(409, idemproblem.CodeConflict, idemproblem.ReasonInProgress), want{inFlight: true, retryable: true}},
		{"409 lease lost", prob(409, idemproblem.CodeConflict, idemproblem.ReasonLeaseLost), want{retryable: true}},
		{"409 schema changed", prob(409, idemproblem.CodeConflict, idemproblem.ReasonSchemaChanged), want{}},
		{"409 not a problem", plain(409), want{}},
		{"400 key required", prob(400, "", idemproblem.ReasonKeyRequired), want{keyError: true}},
		{"400 key malformed", prob(400, "", idemproblem.ReasonKeyMalformed), want{keyError: true}},
		{"400 invalid request", prob(400, "", idemproblem.ReasonInvalidRequest), want{}},
		{"404", plain(404), want{}},
		{"408", plain(408), want{retryable: true}},
		{"429", plain(429), want{retryable: true}},
		{"500", plain(500), want{retryable: true}},
		{"503 outcome unknown", prob(503, "", idemproblem.ReasonOutcomeUnknown), want{retryable: true}},
		{"501", plain(501), want{}},
		{"505", plain(505), want{}},
		{"transport", transport, want{retryable: true}},
		{"transport, not idempotent", &TransportError{Operation: "op", Attempts: 1, Err: errors.New("reset"), Unsafe: true}, want{}},
		{"decode", &DecodeError{Operation: "op", Status: 201, Err: errors.New("bad")}, want{}},
		{"other", errors.New("other"), want{}},
		{"nil", nil, want{}},
	} {
		for _, err := range []error{tc.err, fmt.Errorf("wrapped: %w", tc.err)} {
			got := want{IsConflict(err), IsInFlight(err), IsKeyError(err), IsRetryable(err)}
			if got != tc.want {
				t.Errorf("%s (%v): conflict, in flight, key error, retryable = %+v, want %+v", tc.name, err, got, tc.want)
			}
		}
	}
	var e *Error
	if err := prob(409, idemproblem.CodeConflict, idemproblem.ReasonInProgress); !errors.As(err, &e) || e.Code() != idemproblem.CodeConflict ||
		e.Reason() != idemproblem.ReasonInProgress || e.Key != "k" || e.Problem.Status != 409 {
		t.Errorf("decoded problem: %+v", e)
	}
	if err := plain(404); !errors.As(err, &e) || e.Problem != nil || e.Code() != "" || e.Reason() != "" || string(e.Body) != "no" {
		t.Errorf("a response that is not problem+json: %+v", e)
	}
	if StatusOf(transport) != 0 || !errors.As(fmt.Errorf("w: %w", transport), new(*TransportError)) {
		t.Errorf("transport error: status %d", StatusOf(transport))
	}
}

// multipartPart is one part of a multipart body as mime/multipart reads it.
type multipartPart struct{ name, filename, contentType, body string }

func readMultipart(t *testing.T, r *Request) []multipartPart {
	t.Helper()
	_, params, err := mime.ParseMediaType(r.ContentType)
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	var out []multipartPart
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%v in\n%s", err, r.Body)
		}
		b, _ := io.ReadAll(p)
		out = append(out, multipartPart{p.FormName(), p.FileName(), p.Header.Get("Content-Type"), string(b)})
	}
}

// namedFile is a FilePart.
type namedFile struct{ name, content string }

func (f namedFile) MultipartFile() (string, textproto.MIMEHeader, io.Reader) {
	return f.name, nil, strings.NewReader(f.content)
}

// oddBody is a multipart body as idemgen generates it for members whose
// names a json tag cannot carry: tagged json:"-" and idem:"name", carried
// by MarshalJSON under their names.
type oddBody struct {
	Quoted  string      `json:"-" idem:"quote\"d"`
	Slash   string      `json:"-" idem:"back\\slash"`
	Accent  string      `json:"clé"`
	Zero    string      `json:"-" idem:"zero\u200bwidth"`
	Break   string      `json:"-" idem:"line\nbreak"`
	File    namedFile   `json:"-" idem:"my file"`
	Files   []namedFile `json:"file[]"`
	Meta    *oddMeta    `json:"meta,omitempty"`
	Details *oddMeta    `json:"details,omitempty"`
}

type oddMeta struct {
	Title string   `json:"title"`
	Pages int      `json:"pages"`
	Tags  []string `json:"tags,omitempty"`
}

func (v oddBody) MarshalJSON() ([]byte, error) {
	type plain oddBody
	b, err := json.Marshal(plain(v))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m[`quote"d`], m[`back\slash`], m["zero\u200bwidth"], m["line\nbreak"] = v.Quoted, v.Slash, v.Zero, v.Break
	m["my file"] = "a file, as JSON would write it"
	return json.Marshal(m)
}

// TestMultipartNames: every part arrives under its member's name as
// mime/multipart (the generated server) reads it, whatever the name holds
// (quotes, a backslash, brackets, accents, an invisible character, a line
// break); a member whose name a json tag cannot carry is found by its idem
// tag, a file under it is a file part; a member named in Parts.Form is one
// part holding a form of its members, one in Parts.JSON a part of JSON.
func TestMultipartNames(t *testing.T) {
	body := oddBody{Quoted: "q", Slash: "s", Accent: "a", Zero: "z", Break: "b",
		File: namedFile{"line\nbreak \"quoted\".txt", "one"}, Files: []namedFile{{"x.txt", "two"}, {"y.txt", "three"}},
		Meta: &oddMeta{Title: "Guide one", Pages: 2, Tags: []string{"a", "b&c"}}, Details: &oddMeta{Title: "d", Pages: 1}}
	r := NewRequest("/")
	if err := r.EncodeParts("multipart/form-data", body, Parts{JSON: []string{"details"}, Form: []string{"meta"}}); err != nil {
		t.Fatal(err)
	}
	got := readMultipart(t, r)
	want := []multipartPart{
		{name: `back\slash`, body: "s"},
		{name: "clé", body: "a"},
		{name: "line\nbreak", body: "b"},
		{name: `quote"d`, body: "q"},
		{name: "zero\u200bwidth", body: "z"},
		{name: "meta", contentType: "application/x-www-form-urlencoded", body: "pages=2&tags=a&tags=b%26c&title=Guide+one"},
		{name: "details", contentType: "application/json", body: `{"pages":1,"title":"d"}`},
		{name: "my file", filename: "line\nbreak \"quoted\".txt", contentType: "application/octet-stream", body: "one"},
		{name: "file[]", filename: "x.txt", contentType: "application/octet-stream", body: "two"},
		{name: "file[]", filename: "y.txt", contentType: "application/octet-stream", body: "three"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parts\n%q\nwant\n%q\nbody:\n%s", got, want, r.Body)
	}

	// Without Parts, meta goes in bracket parts (which the server accepts
	// too) and details likewise.
	r = NewRequest("/")
	if err := r.Encode("multipart/form-data", oddBody{Meta: &oddMeta{Title: "T", Pages: 3}}); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, p := range readMultipart(t, r) {
		names[p.name] = p.body
	}
	if names["meta[title]"] != "T" || names["meta[pages]"] != "3" {
		t.Errorf("bracket parts %q", names)
	}
}

// TestKeyFormats: for every key format the runtime lists, NewKey mints a
// key and derivedFormat derives one that the server accepts; a format
// registered here that the runtime does not know ("uuidv9", as a format
// added to the runtime and not here would be) is an error of both, never
// a key of another format.
func TestKeyFormats(t *testing.T) {
	for _, f := range append(idem.PolicyEnums()["keyFormat"], "uuidv9") {
		known := f != "uuidv9"
		k, err := NewKey(f)
		if known && err == nil {
			_, err = idem.ParseKey(k, idem.KeyFormat(f))
		}
		if known && err != nil || !known && (err == nil || !strings.Contains(err.Error(), `unknown key format "uuidv9"`)) {
			t.Errorf("NewKey(%s) = %q, %v", f, k, err)
		}
		df, err := derivedFormat(f)
		if known && err == nil {
			if k, err = df([32]byte{1, 2, 3}); err == nil {
				_, err = idem.ParseKey(k, idem.KeyFormat(f))
			}
		}
		if known && err != nil || !known && (err == nil || df != nil) {
			t.Errorf("derivedFormat(%s): key %q, %v", f, k, err)
		}
	}
}
