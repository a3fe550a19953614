package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const conformanceSpec = `openapi: 3.0.3
info: {title: t, version: '1'}
x-idempotent: {}
paths:
  /orders:
    post:
      operationId: createOrder
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [sku, quantity]
              properties:
                sku: {type: string, pattern: '^[A-Z]{2}-[0-9]{4}$'}
                quantity: {type: integer, minimum: 1, maximum: 10}
      responses:
        '201': {description: created, content: {application/json: {schema: {type: object}}}}
`

func TestConformanceUsage(t *testing.T) {
	for _, args := range [][]string{
		{"conformance"},
		{"conformance", "-spec", "x.yaml"},
		{"conformance", "-url", "http://x"},
		{"conformance", "-spec", "x.yaml", "-url", "http://x", "extra"},
		{"conformance", "-spec", "x.yaml", "-url", "http://x", "-tenants", "a,b"},
		{"conformance", "-spec", "x.yaml", "-url", "http://x", "-tenant-header", "T", "-tenants", "a"},
		{"conformance", "-spec", "x.yaml", "-url", "http://x", "-param", "novalue"},
		{"conformance", "-spec", "x.yaml", "-url", "http://x", "-body", "file.json"},
		{"conformance", "-spec", "x.yaml", "-url", "http://x", "-n", "0"},
	} {
		code, _, stderr := runCmd(t, args...)
		if code != 2 || !strings.HasPrefix(stderr, "idemgen: ") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and an idemgen: message", args, code, stderr)
		}
	}
	if code, out, _ := runCmd(t, "conformance", "-h"); code != 0 || !strings.Contains(out, "-tenant-header") {
		t.Errorf("conformance -h: exit %d, %q", code, out)
	}
}

func TestConformanceErrors(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "openapi.yaml")
	write(t, specPath, conformanceSpec)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-spec", filepath.Join(dir, "missing.yaml"), "-url", "http://127.0.0.1:1"}, "missing.yaml"},
		{[]string{"-spec", specPath, "-url", "ftp://host"}, `URL "ftp://host"`},
		{[]string{"-spec", specPath, "-url", "http://127.0.0.1:1", "-operation", "nope"}, "no operation nope"},
		{[]string{"-spec", specPath, "-url", "http://127.0.0.1:1", "-body", "createOrder=" + filepath.Join(dir, "none.json")}, "none.json"},
	} {
		code, _, stderr := runCmd(t, append([]string{"conformance"}, tc.args...)...)
		if code != 1 || !strings.HasPrefix(stderr, "idemgen: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 1 and a message naming %s", tc.args, code, stderr, tc.want)
		}
	}
}

// TestConformanceFailsAServerWithoutIdempotency runs the command against a
// server that executes every request and knows nothing of keys: exit 1,
// FAIL lines, and the same verdicts in -json.
func TestConformanceFailsAServerWithoutIdempotency(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = fmt.Fprintf(w, `{"id":%d}`, n)
	}))
	defer srv.Close()
	dir := t.TempDir()
	specPath := filepath.Join(dir, "openapi.yaml")
	write(t, specPath, conformanceSpec)

	code, out, stderr := runCmd(t, "conformance", "-spec", specPath, "-url", srv.URL, "-n", "3")
	if code != 1 || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 1 and nothing on stderr\n%s", code, stderr, out)
	}
	for _, check := range []string{"missing-key", "malformed-key/format", "malformed-key/repeated", "key-echo", "content-digest", "replay", "conflict", "concurrent"} {
		if !strings.Contains(out, "FAIL  createOrder  "+check+" ") {
			t.Errorf("no FAIL line for %s:\n%s", check, out)
		}
	}
	if !strings.Contains(out, "DOES NOT CONFORM") {
		t.Errorf("no summary verdict:\n%s", out)
	}
	// The generated body satisfies the schema's pattern and bounds.
	var body struct {
		SKU      string `json:"sku"`
		Quantity int    `json:"quantity"`
	}
	mu.Lock()
	first := bodies[0]
	mu.Unlock()
	if err := json.Unmarshal([]byte(first), &body); err != nil || len(body.SKU) != 7 || body.SKU[2] != '-' || body.Quantity < 1 || body.Quantity > 10 {
		t.Errorf("generated body %s (%v)", first, err)
	}

	code, out, _ = runCmd(t, "conformance", "-spec", specPath, "-url", srv.URL, "-n", "2", "-json")
	var rep struct {
		Failed  int
		Results []struct {
			Check     string
			Outcome   string
			Exchanges []struct{ Status int }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.Failed == 0 {
		t.Fatalf("-json: exit %d, %v, failed %d\n%s", code, err, rep.Failed, out)
	}
	for _, r := range rep.Results {
		if r.Outcome == "FAIL" && len(r.Exchanges) == 0 {
			t.Errorf("%s failed without exchanges as evidence", r.Check)
		}
	}
}

// recorder is a server that runs every request and records its body.
type recorder struct {
	mu     sync.Mutex
	bodies []string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.bodies = append(rc.bodies, string(b))
	n := len(rc.bodies)
	rc.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(201)
	_, _ = fmt.Fprintf(w, `{"id":%d}`, n)
}

func (rc *recorder) first() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bodies) == 0 {
		return ""
	}
	return rc.bodies[0]
}

// TestConformanceBodies: the request body is the spec's example when it
// satisfies the schema, one generated from the schema when it does not,
// and the -body file when one is given.
func TestConformanceBodies(t *testing.T) {
	dir := t.TempDir()
	withExample := func(example string) string {
		p := filepath.Join(dir, "ex"+fmt.Sprint(len(example))+".yaml")
		write(t, p, strings.Replace(conformanceSpec, "              required: [sku, quantity]\n",
			"              required: [sku, quantity]\n              example: "+example+"\n", 1))
		return p
	}
	specPath := filepath.Join(dir, "openapi.yaml")
	write(t, specPath, conformanceSpec)
	bodyPath := filepath.Join(dir, "body.json")
	write(t, bodyPath, `{"sku": "ZZ-0001", "quantity": 2}`)
	for _, tc := range []struct {
		name string
		args []string
		want func(string) bool
	}{
		{"the spec's example", []string{"-spec", withExample(`{sku: QX-4242, quantity: 7}`)},
			func(b string) bool { return b == `{"quantity":7,"sku":"QX-4242"}` }},
		{"an example outside the schema is not used", []string{"-spec", withExample(`{sku: QX-4242, quantity: 70}`)},
			func(b string) bool { return !strings.Contains(b, "QX-4242") && strings.Contains(b, `"sku"`) }},
		{"-body ID=FILE", []string{"-spec", specPath, "-body", "createOrder=" + bodyPath},
			func(b string) bool { return b == `{"sku": "ZZ-0001", "quantity": 2}` }},
		{"-body FILE with one -operation", []string{"-spec", specPath, "-operation", "createOrder", "-body", bodyPath},
			func(b string) bool { return b == `{"sku": "ZZ-0001", "quantity": 2}` }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &recorder{}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			code, out, stderr := runCmd(t, append([]string{"conformance", "-url", srv.URL, "-n", "1"}, tc.args...)...)
			if code != 1 || stderr != "" {
				t.Fatalf("exit %d, stderr %q\n%s", code, stderr, out)
			}
			if b := rc.first(); !tc.want(b) {
				t.Errorf("first body sent: %s", b)
			}
		})
	}
}
