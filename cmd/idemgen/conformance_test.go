package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
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

const accountsSpec = `openapi: 3.0.3
info: {title: t, version: '1'}
x-idempotent: {}
paths:
  /users:
    post:
      operationId: createUser
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [email]
              properties:
                email: {type: string, format: email}
      responses:
        '201': {description: created, content: {application/json: {schema: {type: object}}}}
        '409': {description: taken, content: {application/problem+json: {schema: {type: object}}}}
  /users/{userId}/notes:
    post:
      operationId: createNote
      parameters: [{name: userId, in: path, required: true, schema: {type: string}}]
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [text], properties: {text: {type: string}}}
      responses:
        '201': {description: created, content: {application/json: {schema: {type: object}}}}
`

// accounts is a server with a business rule and no idempotency: an email
// is taken by the first key that sends it (another key gets 409
// problem+json saying so); it records the paths and the emails' keys.
type accounts struct {
	mu     sync.Mutex
	emails map[string]string
	paths  []string
	taken  int
}

func (a *accounts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.paths = append(a.paths, r.URL.Path)
	var body struct{ Email string }
	_ = json.Unmarshal(b, &body)
	// The conflict check's other body (a generated email, the same in every
	// run) is refused by an idempotent server before its handler runs; this
	// one has no idempotency, so it leaves the rule to the bodies the run
	// was given.
	if key := strings.Trim(r.Header.Get("Idempotency-Key"), `"`); r.URL.Path == "/users" && key != "" && !strings.HasPrefix(body.Email, "conformance") {
		if _, ok := a.emails[body.Email]; !ok {
			a.emails[body.Email] = key
		}
		if a.emails[body.Email] != key {
			a.taken++
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(409)
			fmt.Fprintf(w, `{"title":"taken","status":409,"detail":"email %s is taken"}`, body.Email)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(201)
	fmt.Fprintf(w, `{"id":"u%d"}`, len(a.paths))
}

// TestConformanceBodyTemplates: a -body template takes a new value in every
// request built, so the service's uniqueness rule never refuses one; a
// -fixtures file gives an operation's body and parameters; a fixed body
// makes the service refuse, the plain-text report says what it said, and
// the checks of the operation whose parent it cannot create are skipped,
// no id invented.
func TestConformanceBodyTemplates(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "openapi.yaml")
	write(t, specPath, accountsSpec)
	tmpl := filepath.Join(dir, "user.json")
	write(t, tmpl, `{"email": "u-{{seq}}-{{run}}-{{rand}}@example.com", "id": "{{uuid}}"}`)
	fixed := filepath.Join(dir, "fixed.json")
	write(t, fixed, `{"email": "ann@example.com"}`)
	fixtures := filepath.Join(dir, "fixtures.yaml")
	write(t, fixtures, "createUser:\n  bodyFile: user.json\ncreateNote:\n  params: {userId: u42}\n  body: '{\"text\": \"note {{seq}}\"}'\n")

	serve := func(args ...string) (*accounts, int, string) {
		a := &accounts{emails: map[string]string{}}
		srv := httptest.NewServer(a)
		defer srv.Close()
		code, out, stderr := runCmd(t, append([]string{"conformance", "-spec", specPath, "-url", srv.URL, "-n", "2"}, args...)...)
		if stderr != "" {
			t.Fatalf("%q: stderr %s", args, stderr)
		}
		return a, code, out
	}

	a, code, out := serve("-body", "createUser="+tmpl)
	if code != 1 || a.taken != 0 || len(a.emails) < 10 {
		t.Errorf("-body template: exit %d, %d refusals, %d emails; want 1 (no idempotency), no refusal, a new email per request\n%s", code, a.taken, len(a.emails), out)
	}
	for email := range a.emails {
		if !strings.HasPrefix(email, "u-") || !strings.HasSuffix(email, "@example.com") || strings.Contains(email, "{{") || strings.Count(email, "-") != 3 {
			t.Errorf("email %q", email)
		}
	}

	a, _, out = serve("-fixtures", fixtures)
	if a.taken != 0 || !slices.Contains(a.paths, "/users/u42/notes") || slices.ContainsFunc(a.paths, func(p string) bool { return strings.HasPrefix(p, "/users/u") && p != "/users/u42/notes" }) {
		t.Errorf("-fixtures: %d refusals, paths %v\n%s", a.taken, a.paths, out)
	}

	a, code, out = serve("-body", "createUser="+fixed)
	if code != 1 || a.taken == 0 {
		t.Fatalf("a fixed body: exit %d, %d refusals\n%s", code, a.taken, out)
	}
	if !strings.Contains(out, "409: email ann@example.com is taken") {
		t.Errorf("the report does not say why the service refused:\n%s", out)
	}
	if !strings.Contains(out, `SKIP  createNote  first-execution         prerequisite failed: path parameter "userId": creating it with createUser answered 409: email ann@example.com is taken`) {
		t.Errorf("createNote's checks are not skipped for the failed prerequisite:\n%s", out)
	}
	if slices.ContainsFunc(a.paths, func(p string) bool { return strings.HasSuffix(p, "/notes") }) {
		t.Errorf("a note was requested for an account that was never created: %v", a.paths)
	}

	bad := filepath.Join(dir, "bad.json")
	write(t, bad, `{"email": "{{nope}}"}`)
	for _, args := range [][]string{{"-body", "createUser=" + bad}, {"-fixtures", filepath.Join(dir, "none.yaml")}} {
		code, _, stderr := runCmd(t, append([]string{"conformance", "-spec", specPath, "-url", "http://127.0.0.1:1"}, args...)...)
		if code != 1 || !strings.HasPrefix(stderr, "idemgen: conformance: ") || !strings.Contains(stderr, "{{nope}}") && !strings.Contains(stderr, "none.yaml") {
			t.Errorf("%q: exit %d, %s", args, code, stderr)
		}
	}
}
