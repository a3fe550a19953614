package idem_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
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
		{"/v1", "GET", "/v1/nothing", 404, idem.CodeNotFound, "", "application/problem+json"},
		{"/v1", "GET", "/v1", 404, idem.CodeNotFound, "", "application/problem+json"},
		{"/v1", "DELETE", "/v1/things/1", 405, idem.CodeMethodNotAllowed, "GET, HEAD", "application/problem+json"},
		{"/v1", "GET", "/v1/things", 405, idem.CodeMethodNotAllowed, "POST", "application/problem+json"},
		{"/v1", "GET", "/elsewhere", 404, "", "", "text/plain; charset=utf-8"},
		{"/v1", "GET", "/v10/things/1", 404, "", "", "text/plain; charset=utf-8"},
		{"", "GET", "/elsewhere", 404, idem.CodeNotFound, "", "application/problem+json"},
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
