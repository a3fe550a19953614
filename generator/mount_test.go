package generator

import "testing"

// mountSpec has a root operation (its route is the path itself, not the
// subtree) and one with a path parameter, under the server path /v1.
const mountSpec = `openapi: 3.0.3
info: {title: mount, version: "1"}
servers: [{url: "https://api.example.com/v1/"}]
paths:
  /:
    get:
      operationId: root
      responses:
        "200": {description: ok}
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        "200": {description: ok}
`

// mountTest drives the generated handler under its default base path (the
// server's), under WithBasePath's, and through Routes.
const mountTest = `package mount

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func status(h http.Handler, target string) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
	return rec.Code
}

func TestMount(t *testing.T) {
	if BasePath != "/v1" {
		t.Fatalf("BasePath %q", BasePath)
	}
	mw := WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Mw", "1"); next.ServeHTTP(w, r) })
	})
	for _, tc := range []struct {
		name   string
		h      http.Handler
		routed []string // answered by the operations (501: Unimplemented)
		absent []string // 404
	}{
		{"default", NewHandler(Unimplemented{}, nil), []string{"/v1/", "/v1/items/5"}, []string{"/", "/v1/other", "/items/5", "/api/items/5"}},
		{"WithBasePath", NewHandler(Unimplemented{}, nil, WithBasePath("/api/")), []string{"/api/", "/api/items/5"}, []string{"/v1/items/5", "/items/5", "/api/x"}},
		{"no base path", NewHandler(Unimplemented{}, nil, WithBasePath("")), []string{"/", "/items/5"}, []string{"/v1/items/5", "/x"}},
	} {
		for _, p := range tc.routed {
			if got := status(tc.h, p); got != http.StatusNotImplemented {
				t.Errorf("%s: GET %s: %d, want 501", tc.name, p, got)
			}
		}
		for _, p := range tc.absent {
			if got := status(tc.h, p); got != http.StatusNotFound {
				t.Errorf("%s: GET %s: %d, want 404", tc.name, p, got)
			}
		}
	}

	routes := Routes(Unimplemented{}, nil, mw)
	want := []Route{{OperationID: "root", Method: "GET", Pattern: "/v1/"}, {OperationID: "getItem", Method: "GET", Pattern: "/v1/items/{id}"}}
	if len(routes) != len(want) {
		t.Fatalf("routes %v", routes)
	}
	mux := http.NewServeMux()
	for i, rt := range routes {
		if rt.OperationID != want[i].OperationID || rt.Method != want[i].Method || rt.Pattern != want[i].Pattern {
			t.Errorf("route %d: %s %s %s, want %s %s %s", i, rt.OperationID, rt.Method, rt.Pattern, want[i].OperationID, want[i].Method, want[i].Pattern)
		}
		p := rt.Pattern
		if p[len(p)-1] == '/' {
			p += "{$}"
		}
		mux.Handle(rt.Method+" "+p, rt.Handler)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/items/7", nil))
	if rec.Code != http.StatusNotImplemented || rec.Header().Get("X-Mw") != "1" {
		t.Errorf("a route's handler: %d, X-Mw %q; want 501 through the middleware", rec.Code, rec.Header().Get("X-Mw"))
	}
	if rt := Routes(Unimplemented{}, nil, WithBasePath(""))[0]; rt.Pattern != "/" {
		t.Errorf("root route without base path: %q", rt.Pattern)
	}
}
`

// TestGeneratedMount builds a generated package and runs mountTest in it:
// the routes are under the spec's server path by default and under
// WithBasePath's when given, the root operation answers its path and not
// the subtree below it, and Routes hands out the same routes, middleware
// applied.
func TestGeneratedMount(t *testing.T) {
	if testing.Short() {
		t.Skip("builds generated code; skipped with -short")
	}
	files, _, err := Generate(Config{Spec: "openapi.yaml", SpecData: []byte(mountSpec), Package: "mount"})
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, File{Name: "mount_test.go", Content: []byte(mountTest)})
	modulePackage(t, "mount", files)
	moduleResult(t, "mount")
}
