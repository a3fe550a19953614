package idem_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestRouted: under the base path, a path no operation declares is 404
// problem+json and a declared path with another method is 405 problem+json
// with Allow; outside it, net/http's plain 404; routed requests pass.
func TestRouted(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/things/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) })
	mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(298) })
	for _, tc := range []struct {
		base, method, path string
		status             int
		code, allow, ctype string
	}{
		{"/v1", "GET", "/v1/things/1", 299, "", "", ""},
		{"/v1", "HEAD", "/v1/things/1", 299, "", "", ""},
		{"/v1", "POST", "/v1/things", 298, "", "", ""},
		{"/v1", "GET", "/v1/nothing", 404, idemproblem.CodeNotFound, "", "application/problem+json"},
		{"/v1", "GET", "/v1", 404, idemproblem.CodeNotFound, "", "application/problem+json"},
		{"/v1", "DELETE", "/v1/things/1", 405, idemproblem.CodeMethodNotAllowed, "GET, HEAD", "application/problem+json"},
		{"/v1", "GET", "/v1/things", 405, idemproblem.CodeMethodNotAllowed, "POST", "application/problem+json"},
		{"/v1", "GET", "/elsewhere", 404, "", "", "text/plain; charset=utf-8"},
		{"/v1", "GET", "/v10/things/1", 404, "", "", "text/plain; charset=utf-8"},
		{"", "GET", "/elsewhere", 404, idemproblem.CodeNotFound, "", "application/problem+json"},
	} {
		w := httptest.NewRecorder()
		idem.Routed(mux, tc.base).ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		var p struct{ Code, Reason string }
		_ = json.Unmarshal(w.Body.Bytes(), &p)
		if w.Code != tc.status || p.Code != tc.code || w.Header().Get("Allow") != tc.allow || (tc.ctype != "" && w.Header().Get("Content-Type") != tc.ctype) {
			t.Errorf("base %q: %s %s: %d %q Allow %q %s; want %d %q Allow %q %s", tc.base, tc.method, tc.path,
				w.Code, p.Code, w.Header().Get("Allow"), w.Header().Get("Content-Type"), tc.status, tc.code, tc.allow, tc.ctype)
		}
	}
}

// TestEngineRouted: the engine's Routed answers 404 and 405 in the
// profile's body (Stripe's error object under ProfileStripe, with
// Stripe-Should-Retry: false), and through Config.Errors when the service
// set it; the 405 keeps its Allow header either way.
func TestEngineRouted(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/things/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) })
	db := pgtest.New(t, pgtest.Options{})
	eng, err := idem.New(db, idem.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mapped, err := idem.New(db, idem.Config{Errors: func(_ *http.Request, p *idemproblem.Problem) *idem.Response {
		return &idem.Response{Header: http.Header{"Content-Type": {"application/vnd.acme+json"}},
			Body: []byte(`{"acme":"` + p.Reason + `"}`)}
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		h             http.Handler
		method, path  string
		status        int
		body, ctype   string
		allow, sretry string
	}{
		{"stripe 404", eng.Routed(mux, "/v1", idem.ProfileStripe), "GET", "/v1/nothing", 404,
			`{"error":{"type":"invalid_request_error","code":"no_such_operation","message":"no operation of this API has this path"}}`,
			"application/json", "", "false"},
		{"stripe 405", eng.Routed(mux, "/v1", idem.ProfileStripe), "POST", "/v1/things/1", 405,
			`{"error":{"type":"invalid_request_error","code":"method_not_allowed","message":"POST is not an operation of /v1/things/1; allowed: GET, HEAD"}}`,
			"application/json", "GET, HEAD", "false"},
		{"mapper 404", mapped.Routed(mux, "/v1", idem.ProfileStripe), "GET", "/v1/nothing", 404,
			`{"acme":"NO_SUCH_OPERATION"}`, "application/vnd.acme+json", "", "false"},
		{"mapper 405", mapped.Routed(mux, "/v1", idem.ProfileDefault), "DELETE", "/v1/things/1", 405,
			`{"acme":"METHOD_NOT_ALLOWED"}`, "application/vnd.acme+json", "GET, HEAD", ""},
		{"nil engine", (*idem.Engine)(nil).Routed(mux, "/v1", idem.ProfileIETF), "GET", "/v1/nothing", 404,
			`{"type":"about:blank","title":"Not Found","status":404,"detail":"no operation of this API has this path","code":"ERR404_NOT_FOUND","reason":"NO_SUCH_OPERATION"}`,
			"application/problem+json", "", ""},
		{"outside the base path", eng.Routed(mux, "/v1", idem.ProfileStripe), "GET", "/elsewhere", 404,
			"404 page not found\n", "text/plain; charset=utf-8", "", ""},
	} {
		w := httptest.NewRecorder()
		tc.h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		h := w.Header()
		if w.Code != tc.status || w.Body.String() != tc.body || h.Get("Content-Type") != tc.ctype ||
			h.Get("Allow") != tc.allow || h.Get("Stripe-Should-Retry") != tc.sretry {
			t.Errorf("%s: %d %s (%s, Allow %q, Stripe-Should-Retry %q); want %d %s (%s, Allow %q, Stripe-Should-Retry %q)",
				tc.name, w.Code, w.Body, h.Get("Content-Type"), h.Get("Allow"), h.Get("Stripe-Should-Retry"),
				tc.status, tc.body, tc.ctype, tc.allow, tc.sretry)
		}
	}
}
