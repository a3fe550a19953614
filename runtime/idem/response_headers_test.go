package idem_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestDeclaredResponseHeadersReplay: the response headers an operation
// declares (Operation.ResponseHeaders, by status) are stored and replayed as
// the first response had them, over HTTP against PostgreSQL; a header it
// does not declare is not replayed unless Config.StoredHeaders lists it;
// Set-Cookie is never replayed, declared or not. The most specific response
// key applies: an exact status, then its range, then default.
func TestDeclaredResponseHeadersReplay(t *testing.T) {
	t.Parallel()
	declared := map[string][]string{
		"201":     {"X-Rate-Limit", "x-request-charge-id", "Set-Cookie", "Link"},
		"2XX":     {"X-Range"},
		"default": {"X-Default"},
	}
	// Every response sets every header; what the replay keeps is the test.
	all := http.Header{
		"Content-Type":        {"application/json"},
		"X-Rate-Limit":        {"99"},
		"X-Request-Charge-Id": {"ch_1 ;  v=2"},
		"Link":                {"</a>; rel=next", "</b>; rel=prev"},
		"Set-Cookie":          {"session=secret"},
		"X-Range":             {"r"},
		"X-Default":           {"d"},
		"X-Undeclared":        {"u"},
	}
	cases := []struct {
		name   string
		status int
		extra  []string // Config.StoredHeaders
		want   []string // replayed besides Content-Type
	}{
		{"exact status", 201, nil, []string{"X-Rate-Limit", "X-Request-Charge-Id", "Link"}},
		{"range", 202, nil, []string{"X-Range"}},
		{"default", 422, nil, []string{"X-Default"}},
		{"allowlisted", 201, []string{"X-Undeclared"}, []string{"X-Rate-Limit", "X-Request-Charge-Id", "Link", "X-Undeclared"}},
	}
	for _, mode := range modes {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", mode, c.name), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, testPolicy(mode), idem.Config{StoredHeaders: c.extra})
				e.op.ResponseHeaders = declared
				e.handle("headers", func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
					return &idem.Response{Status: c.status, Header: all.Clone(), Body: []byte(`{"ok":true}`)}, nil
				})
				key := newKey()
				first := e.post(key, `{"amount": 1, "behave": "headers"}`)
				if first.Status != c.status {
					t.Fatalf("first: %d %s", first.Status, first.Body)
				}
				for k, v := range all {
					if !reflect.DeepEqual(first.Header[k], v) {
						t.Errorf("first %s = %q, want %q", k, first.Header[k], v)
					}
				}
				// Not in the record either: the replay's own filter is a second line.
				if n := e.count(`SELECT count(*) FROM idem_records WHERE response_headers::text LIKE '%session=secret%'`); n != 0 {
					t.Errorf("%d records store the declared Set-Cookie", n)
				}
				again := e.post(key, `{"amount": 1, "behave": "headers"}`)
				if again.Status != c.status || again.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("replay: %d %v", again.Status, again.Header)
				}
				want := map[string]bool{"Content-Type": true}
				for _, k := range c.want {
					want[k] = true
				}
				for k, v := range all {
					if want[k] {
						if !reflect.DeepEqual(again.Header[k], v) {
							t.Errorf("replay %s = %q, want %q as first sent", k, again.Header[k], v)
						}
					} else if again.Header[k] != nil {
						t.Errorf("replay carries %s = %q, which is not stored for %d", k, again.Header[k], c.status)
					}
				}
				if n := e.runs.Load(); n != 1 {
					t.Errorf("handler ran %d times", n)
				}
			})
		}
	}
}

// TestResponseHeadersValidated: New refuses a response key that is no
// status, range or default, and a header name that is not a token.
func TestResponseHeadersValidated(t *testing.T) {
	for _, c := range []struct {
		rh   map[string][]string
		want string
	}{
		{map[string][]string{"20X": {"X-A"}}, `"20X" is not a status`},
		{map[string][]string{"201": {"X A"}}, `responseHeaders[201]: "X A" is not a valid header name`},
	} {
		op := testOp(testPolicy(idem.ModeAtomic))
		op.ResponseHeaders = c.rh
		err := op.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error with %q", c.rh, err, c.want)
		}
	}
	op := testOp(testPolicy(idem.ModeAtomic))
	op.ResponseHeaders = map[string][]string{"201": {"X-A"}, "4XX": {"X-B"}, "default": nil}
	if err := op.Validate(); err != nil {
		t.Errorf("valid response headers: %v", err)
	}
}
