package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestUnbuildableIsSkipped: an operation whose valid request the value
// generator cannot build (a pattern that allows 3 characters with
// minLength 5) has its checks skipped, each saying why and how to supply a
// body, and no request sent; the service is not failed for it.
func TestUnbuildableIsSkipped(t *testing.T) {
	spec := `openapi: 3.0.3
info: {title: t, version: "1"}
x-idempotent: {}
paths:
  /codes:
    post:
      operationId: createCode
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [code], properties: {code: {type: string, pattern: '^[A-Z]{3}$', minLength: 5}}}
      responses: {"201": {description: ok}}
`
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	rep, err := Run(context.Background(), Config{Spec: "openapi.yaml", SpecData: []byte(spec), URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 || rep.Skipped == 0 || sent.Load() != 0 {
		t.Errorf("%d failed, %d skipped, %d requests sent; want every check skipped, none sent", rep.Failed, rep.Skipped, sent.Load())
	}
	const why = `no valid request can be generated: generating a body from the request schema: code: pattern "^[A-Z]{3}$" with minLength 5: the value generated, "AAA", has 3 characters; supply one for createCode`
	said := map[string]bool{}
	for _, res := range rep.Results {
		if res.Outcome != Skip {
			t.Errorf("%s: %s %s; want SKIP", res.Check, res.Outcome, res.Evidence)
		}
		said[res.Check] = res.Evidence == why
	}
	for _, check := range []string{"missing-key", "malformed-key/format", "first-execution", "quoted-key", "concurrent"} {
		if !said[check] {
			t.Errorf("%s does not say %q", check, why)
		}
	}
}
