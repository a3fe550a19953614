package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/examples/payments/internal/harness"
)

// send posts body to path with the given Content-Type ("" for none) and
// Idempotency-Key, as a client that controls every byte would.
func (s *stack) send(t *testing.T, path, key, contentType, body string) *harness.Exchange {
	t.Helper()
	req, err := http.NewRequest("POST", s.srv.URL+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ex := &harness.Exchange{Method: "POST", Path: path, Key: key, Body: []byte(body), Status: resp.StatusCode, Header: resp.Header}
	ex.RespBody, _ = io.ReadAll(resp.Body)
	return ex
}

func (s *stack) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := s.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// violations decodes the errors member of a 400 problem.
func violations(t *testing.T, ex *harness.Exchange) []map[string]string {
	t.Helper()
	wantProblem(t, ex, 400, "ERR400_INVALID_REQUEST", "REQUEST_INVALID")
	var p struct {
		Errors []map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(ex.RespBody, &p); err != nil {
		t.Fatal(err)
	}
	return p.Errors
}

// TestStrictJSONMembers is issue 11 case 1: case-variant and duplicate
// members are refused with a 400 naming the member, so two requests that
// encoding/json would read differently never share a fingerprint.
func TestStrictJSONMembers(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	key := harness.NewKey()
	for _, body := range []string{
		`{"amount":1,"AMOUNT":2,"currency":"EUR"}`,
		`{"AMOUNT":2,"amount":1,"currency":"EUR"}`,
		`{"Amount":2,"currency":"EUR"}`,
	} {
		ex := s.send(t, "/payments", key, "application/json", body)
		vs := violations(t, ex)
		if len(vs) == 0 || !strings.Contains(vs[0]["detail"], `declared member "amount" only in case`) {
			t.Fatalf("%s: violations %v", body, vs)
		}
	}
	ex := s.send(t, "/payments", key, "application/json", `{"amount":1,"amount":2,"currency":"EUR"}`)
	if vs := violations(t, ex); len(vs) != 1 || vs[0]["rule"] != "syntax" || !strings.Contains(vs[0]["detail"], `duplicate member "amount"`) {
		t.Fatalf("duplicate member: %v", vs)
	}
	if n := s.count(t, "idem_records") + s.count(t, "payments"); n != 0 {
		t.Fatalf("refused requests left %d rows", n)
	}
	// The key is free: the corrected request runs once, and a retry of it
	// is replayed.
	wantStatus(t, s.send(t, "/payments", key, "application/json", `{"amount":1,"currency":"EUR"}`), 201)
	if ex := s.send(t, "/payments", key, "application/json", `{"currency":"EUR","amount":1}`); !ex.Replayed() {
		t.Fatalf("retry not replayed: %d %s", ex.Status, ex.RespBody)
	}
}

// TestSchemaConstraintsEnforced is issue 11 cases 6 and 8: every violation of
// the schema in one 400, with JSON pointers and rules and no Go internals,
// decided before any record is written.
func TestSchemaConstraintsEnforced(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	cases := []struct {
		body, pointer, rule string
	}{
		{`{"amount":1,"currency":"EUR","evil":true}`, "#/evil", "additionalProperties"},
		{`{"amount":0,"currency":"EUR"}`, "#/amount", "minimum"},
		{`{"amount":100000001,"currency":"EUR"}`, "#/amount", "maximum"},
		{`{"amount":1,"currency":"eur"}`, "#/currency", "pattern"},
		{`{"amount":1,"currency":"EUR","description":"` + strings.Repeat("é", 201) + `"}`, "#/description", "maxLength"},
		{`{"amount":1,"currency":"EUR","metadata":{"clientSentAt":"yesterday"}}`, "#/metadata/clientSentAt", "format"},
		{`{"amount":"1","currency":"EUR"}`, "#/amount", "type"},
		{`{"currency":"EUR"}`, "#/amount", "required"},
	}
	for _, c := range cases {
		vs := violations(t, s.send(t, "/payments", harness.NewKey(), "application/json", c.body))
		if len(vs) != 1 || vs[0]["in"] != "body" || vs[0]["pointer"] != c.pointer || vs[0]["rule"] != c.rule {
			t.Errorf("%s: violations %v, want one at %s (%s)", c.body, vs, c.pointer, c.rule)
		}
	}
	// All at once: one problem lists every one.
	ex := s.send(t, "/payments", harness.NewKey(), "application/json",
		`{"amount":0,"currency":"eur","description":"`+strings.Repeat("x", 201)+`","evil":true,"metadata":{"orderId":7}}`)
	if vs := violations(t, ex); len(vs) != 5 {
		t.Errorf("want 5 violations, got %d: %v", len(vs), vs)
	}
	for _, leak := range []string{"Go struct", "int64", "unmarshal", "json:"} {
		if bytes.Contains(ex.RespBody, []byte(leak)) {
			t.Errorf("400 body leaks %q: %s", leak, ex.RespBody)
		}
	}
	// A wrong type below an array says where and what, in JSON terms.
	ex = s.send(t, "/payments/p1/refunds", harness.NewKey(), "application/json", `{"amount":1.5}`)
	if vs := violations(t, ex); len(vs) != 1 || vs[0]["detail"] != "must be an integer" {
		t.Errorf("refund amount 1.5: %v", vs)
	}
	if n := s.count(t, "idem_records") + s.count(t, "payments"); n != 0 {
		t.Fatalf("refused requests left %d rows", n)
	}
}

// TestMediaTypes is issue 11 case 5: the media type's parameters that do not
// change meaning do not change the fingerprint, and a media type the
// operation does not declare is 415 with no record.
func TestMediaTypes(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	key := harness.NewKey()
	body := `{"amount":7,"currency":"EUR"}`
	wantStatus(t, s.send(t, "/payments", key, "application/json", body), 201)
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON", ""} {
		if ex := s.send(t, "/payments", key, ct, body); ex.Status != 201 || !ex.Replayed() {
			t.Errorf("Content-Type %q: %d %s, want a replay", ct, ex.Status, ex.RespBody)
		}
	}
	for _, ct := range []string{"text/plain", "application/xml", "application/json; charset=iso-8859-1"} {
		ex := s.send(t, "/payments", harness.NewKey(), ct, body)
		wantProblem(t, ex, 415, "ERR415_UNSUPPORTED_MEDIA_TYPE", "UNSUPPORTED_MEDIA_TYPE")
	}
	if n := s.count(t, "payments"); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
	if n := s.count(t, "idem_records"); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
}

// TestHostilePathValues is issue 12's hostile scope values: a path parameter
// PostgreSQL's text cannot hold (a NUL byte) or that is not UTF-8 used to
// reach the capture's handler, which failed with a 500 after the engine had
// written a FAILED_RETRYABLE record kept for a day. It is a 400 naming the
// parameter, before any statement: no record, no payment.
func TestHostilePathValues(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/payments/%00", `{"amount":1000}`},
		{"PATCH", "/payments/%ff", `{"amount":1000}`},
		{"PATCH", "/payments/pay%00ment", `{"amount":1000}`},
		{"POST", "/payments/%c3%28/refunds", `{"amount":1}`},
	} {
		req, err := http.NewRequest(c.method, s.srv.URL+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", harness.NewKey())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		ex := &harness.Exchange{Method: c.method, Path: c.path, Status: resp.StatusCode, Header: resp.Header}
		ex.RespBody, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		p, ok := ex.Problem()
		if ex.Status != 400 || !ok || p.Code != "ERR400_INVALID_REQUEST" || !strings.Contains(p.Detail, `path parameter "paymentId"`) {
			t.Errorf("%s %s: got %s, want a 400 problem naming path parameter \"paymentId\"", c.method, c.path, ex.Format())
		}
	}
	if n := s.count(t, "idem_records") + s.count(t, "payments"); n != 0 {
		t.Fatalf("refused requests left %d rows", n)
	}
}
