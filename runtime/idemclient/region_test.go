package idemclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// regionCall runs one call against two scripted regions, a and b, with
// WithRegions(home); the base URL given to New is a third server that
// must never be called.
func regionCall(t *testing.T, home string, a, b *script, opts ...CallOption) (*Result[thing], error, []Attempt) {
	t.Helper()
	sa, sb := httptest.NewServer(a), httptest.NewServer(b)
	t.Cleanup(sa.Close)
	t.Cleanup(sb.Close)
	base := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the base URL was called: %s", r.URL)
		w.WriteHeader(500)
	}))
	t.Cleanup(base.Close)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	c, err := New(base.URL, WithRetryPolicy(fast), WithHTTPClient(hc), WithBasePath("/api"),
		WithRegions(home, map[string]string{"a": sa.URL, "b": sb.URL + "/api"}))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var as []Attempt
	opts = append(opts, WithAttemptObserver(func(at Attempt) { mu.Lock(); as = append(as, at); mu.Unlock() }))
	req := NewRequest("/things")
	if err := req.JSON("application/json", map[string]any{"amount": 5}); err != nil {
		t.Fatal(err)
	}
	res, err := Do(context.Background(), c, &createOp, req, readThing, opts...)
	return res, err, as
}

func homeIs(region string, step func(w http.ResponseWriter, r *http.Request)) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/things" {
			w.WriteHeader(404)
			return
		}
		w.Header().Set(HomeRegionHeader, region)
		step(w, r)
	}
}

func TestRegionRetriesGoHome(t *testing.T) {
	t.Run("retries stay where the first attempt went", func(t *testing.T) {
		// The first answer is lost (no header came): the key's home is
		// still the region of its first attempt.
		a := &script{steps: []func(http.ResponseWriter, *http.Request){hangUp, homeIs("a", problem(503, idemproblem.ReasonDatabaseDown, "")), homeIs("a", created(true))}}
		b := &script{steps: []func(http.ResponseWriter, *http.Request){homeIs("b", created(false))}}
		res, err, _ := regionCall(t, "a", a, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.attempts()) != 3 || len(b.attempts()) != 0 || res.HomeRegion != "a" || !res.Replayed {
			t.Fatalf("a saw %d attempts, b %d; home %q", len(a.attempts()), len(b.attempts()), res.HomeRegion)
		}
	})
	t.Run("a 421 sends the call home at once", func(t *testing.T) {
		b := &script{steps: []func(http.ResponseWriter, *http.Request){homeIs("a", problem(421, idemproblem.ReasonWrongRegion, "30"))}}
		a := &script{steps: []func(http.ResponseWriter, *http.Request){homeIs("a", created(true))}}
		res, err, as := regionCall(t, "b", a, b)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.attempts()) != 1 || len(a.attempts()) != 1 || res.HomeRegion != "a" || res.Attempts != 2 {
			t.Fatalf("b saw %d, a %d; home %q, attempts %d", len(b.attempts()), len(a.attempts()), res.HomeRegion, res.Attempts)
		}
		if as[0].Wait != 0 || !as[0].Retry {
			t.Fatalf("the 421 was followed after %v (retry %v), want at once", as[0].Wait, as[0].Retry)
		}
		if k := b.attempts()[0].key; k == "" || k != a.attempts()[0].key {
			t.Fatalf("keys %q and %q: the call's key must travel home", k, a.attempts()[0].key)
		}
	})
	t.Run("a server naming another home moves the retries", func(t *testing.T) {
		a := &script{steps: []func(http.ResponseWriter, *http.Request){homeIs("b", problem(409, idemproblem.ReasonInProgress, ""))}}
		b := &script{steps: []func(http.ResponseWriter, *http.Request){homeIs("b", created(true))}}
		res, err, _ := regionCall(t, "a", a, b)
		if err != nil || res.HomeRegion != "b" || len(a.attempts()) != 1 || len(b.attempts()) != 1 {
			t.Fatalf("err %v, home %q, a %d, b %d", err, res.HomeRegion, len(a.attempts()), len(b.attempts()))
		}
	})
	t.Run("a 421 naming no known region is the answer", func(t *testing.T) {
		a := &script{steps: []func(http.ResponseWriter, *http.Request){homeIs("mars", problem(421, idemproblem.ReasonWrongRegion, ""))}}
		b := &script{steps: []func(http.ResponseWriter, *http.Request){homeIs("b", created(false))}}
		_, err, _ := regionCall(t, "a", a, b)
		if err == nil || len(a.attempts()) != 1 || len(b.attempts()) != 0 {
			t.Fatalf("err %v, a %d, b %d", err, len(a.attempts()), len(b.attempts()))
		}
	})
	t.Run("WithHomeRegion", func(t *testing.T) {
		a := &script{steps: []func(http.ResponseWriter, *http.Request){homeIs("a", created(false))}}
		b := &script{steps: []func(http.ResponseWriter, *http.Request){homeIs("b", created(true))}}
		if res, err, _ := regionCall(t, "a", a, b, WithHomeRegion("b")); err != nil || res.HomeRegion != "b" || len(a.attempts()) != 0 {
			t.Fatalf("err %v, home %q, a %d", err, res.HomeRegion, len(a.attempts()))
		}
	})
	t.Run("a home without a URL", func(t *testing.T) {
		if _, err := New("http://x", WithRegions("c", map[string]string{"a": "http://a"})); err == nil {
			t.Fatal("accepted")
		}
		if _, err := New("http://x", WithRegions("a", map[string]string{"a": "ftp://a"})); err == nil {
			t.Fatal("accepted")
		}
	})
}
