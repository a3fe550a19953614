package generator

import (
	"strings"
	"testing"
)

// headersSpec declares response headers on an idempotent operation: by
// status, by range and by default, Set-Cookie and Authorization among them.
const headersSpec = `openapi: 3.0.3
info: {title: t, version: '1'}
x-idempotent: {}
paths:
  /orders:
    post:
      operationId: createOrder
      responses:
        '201':
          description: created
          headers:
            X-Rate-Limit: {schema: {type: integer}}
            Location: {schema: {type: string}}
            Set-Cookie: {schema: {type: string}}
        '202': {description: accepted}
        '204': {description: no content}
        4XX:
          description: client error
          headers:
            x-request-charge-id: {schema: {type: string}}
            Authorization: {schema: {type: string}}
        default:
          description: other
          headers:
            X-Trace: {schema: {type: string}}
    get:
      operationId: listOrders
      responses:
        '200':
          description: ok
          headers:
            Set-Cookie: {schema: {type: string}}
`

// TestDeclaredResponseHeaders: the generated operation table passes the
// declared response headers to the engine by response key, Set-Cookie and
// Authorization left out with a warning naming the operation and header; a
// key that declares none is listed empty where a range or default would
// otherwise apply. A non-idempotent operation gets no warning.
func TestDeclaredResponseHeaders(t *testing.T) {
	files, warns, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(headersSpec), Package: "api", Output: "api"})
	if err != nil {
		t.Fatal(err)
	}
	var server string
	for _, f := range files {
		if strings.HasSuffix(f.Name, "server.gen.go") {
			server = string(f.Content)
		}
	}
	want := `ResponseHeaders: map[string][]string{"201": {"Location", "X-Rate-Limit"}, "202": nil, "204": nil, "4XX": {"X-Request-Charge-Id"}, "default": {"X-Trace"}},`
	if !strings.Contains(server, want) {
		t.Errorf("server.gen.go lacks\n%s\nin\n%s", want, section(server, "var opCreateOrder"))
	}
	// StoredHeaders resolves a status as OpenAPI does (the conformance
	// checker compares these on a replay).
	spec, err := Load(Config{Spec: "openapi.yaml", SpecData: []byte(headersSpec), Package: "api", Output: "api"})
	if err != nil {
		t.Fatal(err)
	}
	var op *Operation
	for _, o := range spec.Model.Operations {
		if o.ID == "createOrder" {
			op = o
		}
	}
	for status, want := range map[int]string{201: "Location X-Rate-Limit", 202: "", 404: "X-Request-Charge-Id", 500: "X-Trace"} {
		if got := strings.Join(op.StoredHeaders(status), " "); got != want {
			t.Errorf("StoredHeaders(%d) = %q, want %q", status, got, want)
		}
	}
	var got []string
	for _, w := range warns {
		if strings.Contains(w.Message, "never stores") {
			got = append(got, w.String())
		}
	}
	wantWarns := []string{
		`operation "createOrder"`, "response 201 declares header Set-Cookie",
		"response 4XX declares header Authorization",
	}
	joined := strings.Join(got, "\n")
	for _, w := range wantWarns {
		if !strings.Contains(joined, w) {
			t.Errorf("warnings lack %q:\n%s", w, joined)
		}
	}
	if len(got) != 2 {
		t.Errorf("%d warnings about unstored headers, want 2 (none for the non-idempotent listOrders):\n%s", len(got), joined)
	}
}

// section returns the lines of s from the one starting with prefix to the
// next blank line.
func section(s, prefix string) string {
	i := strings.Index(s, prefix)
	if i < 0 {
		return s
	}
	s = s[i:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	return s
}
