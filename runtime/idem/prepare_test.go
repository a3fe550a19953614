package idem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
)

// TestPreparedCanonical drives the engine with a prepare that returns its
// own canonical form, as generated code does: the fingerprint is over that
// form and not over the raw request, Content-Digest stays over the raw
// body, and prepare's client errors (415, a 400 listing every violation)
// leave no record.
func TestPreparedCanonical(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{})
	var runs int
	mux := http.NewServeMux()
	mux.HandleFunc(e.op.Method+" "+e.op.Pattern, func(w http.ResponseWriter, r *http.Request) {
		e.eng.Serve(w, r, e.op, func(body []byte) (idem.Prepared, error) {
			switch r.Header.Get("X-Outcome") {
			case "415":
				return idem.Prepared{}, fmt.Errorf("%w: text/plain", idem.ErrUnsupportedMediaType)
			case "400":
				return idem.Prepared{}, &idemproblem.ValidationError{Violations: []idemproblem.Violation{
					{In: "body", Pointer: "#/quantity", Rule: "minimum", Detail: "must be at least 1"},
					{In: "header", Parameter: "X-Account", Rule: "maxLength", Detail: "must be at most 8 characters"},
				}}
			}
			// The canonical form here is the X-Canonical header: the body is
			// not part of it, the header is.
			canon := []byte(r.Header.Get("X-Canonical"))
			return idem.Prepared{Canonical: canon, Handler: func(ctx context.Context, tx pgx.Tx) (*idem.Response, error) {
				runs++
				return &idem.Response{Status: 201, Header: http.Header{"Content-Type": {"application/json"}},
					Body: fmt.Appendf(nil, `{"run":%d}`, runs)}, nil
			}}, nil
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	send := func(key, canonical, body string, hdr ...string) result {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/accounts/a/payments", bytes.NewReader([]byte(body)))
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-Canonical", canonical)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return result{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}

	k := newKey()
	first := send(k, "alice", `{"a":1}`)
	if first.Status != 201 || first.Header.Get("Content-Digest") == "" {
		t.Fatalf("first: %d, Content-Digest %q", first.Status, first.Header.Get("Content-Digest"))
	}
	// Another raw body, the same canonical form: a replay, whose
	// Content-Digest is still that of the raw body it answers.
	again := send(k, "alice", `{"a": 2}`)
	if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("same canonical form: %d, replayed %q", again.Status, again.Header.Get("Idempotent-Replayed"))
	}
	if again.Header.Get("Content-Digest") == first.Header.Get("Content-Digest") {
		t.Error("Content-Digest of the replay is not over the retry's raw body")
	}
	// The same raw body, another canonical form: a conflict.
	if r := send(k, "bob", `{"a":1}`); r.Status != 409 {
		t.Fatalf("another canonical form: %d, want 409", r.Status)
	}
	if runs != 1 {
		t.Fatalf("handler ran %d times", runs)
	}

	before := e.records()
	for _, outcome := range []string{"415", "400"} {
		r := send(newKey(), "alice", `{"amount":1}`, "X-Outcome", outcome)
		switch outcome {
		case "415":
			r.wantProblem(t, 415, idemproblem.CodeMediaType, idemproblem.ReasonMediaType)
		case "400":
			r.wantProblem(t, 400, idemproblem.CodeInvalidRequest, idemproblem.ReasonInvalidRequest)
			errs, _ := r.problem(t)["errors"].([]any)
			if len(errs) != 2 {
				t.Fatalf("400 lists %d violations, want 2: %s", len(errs), r.Body)
			}
			v, _ := errs[1].(map[string]any)
			if v["in"] != "header" || v["parameter"] != "X-Account" || v["rule"] != "maxLength" {
				t.Errorf("second violation %v", v)
			}
		}
	}
	if n := e.records(); n != before {
		t.Fatalf("client errors left %d records", n-before)
	}
}

func TestValidationErrorText(t *testing.T) {
	t.Parallel()
	err := error(&idemproblem.ValidationError{Violations: []idemproblem.Violation{
		{In: "body", Pointer: "#/items/0/quantity", Rule: "minimum", Detail: "must be at least 1"},
		{In: "query", Parameter: "limit", Rule: "maximum", Detail: "must be at most 100"},
		{In: "body", Pointer: "#", Rule: "type", Detail: "must be an object"},
	}})
	want := `request invalid: body #/items/0/quantity: must be at least 1; query parameter "limit": must be at most 100; body: must be an object`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	if !idem.IsRequestError(fmt.Errorf("wrapped: %w", err)) || !idem.IsRequestError(fmt.Errorf("%w: x", idem.ErrUnsupportedMediaType)) {
		t.Error("IsRequestError does not recognise validation and media type errors")
	}
	if idem.IsRequestError(errors.New("other")) {
		t.Error("IsRequestError recognises any error")
	}
}
