package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemgen/idemgen/conformance"
	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/service"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

const tenantHeader = "X-Tenant"

// conformanceServer serves the payments example over real HTTP and a real
// PostgreSQL, with records scoped by the X-Tenant header, behind wrap (a
// deliberately broken middleware, or nil).
func conformanceServer(t *testing.T, scoped bool, wrap func(http.Handler) http.Handler) (*httptest.Server, *gateway.Simulator) {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{Migrations: payments.Migrations, MaxConns: 32})
	gw := gateway.New()
	svc := service.New(db.Pool, gw, nil)
	cfg := idem.Config{
		Operations: api.IdempotentOperations,
		Recover:    svc.RecoveryHooks(),
		Hooks:      idem.Hooks{OnError: func(context.Context, *idem.Operation, error) {}},
	}
	if scoped {
		cfg.Scope = func(r *http.Request) (string, error) { return r.Header.Get(tenantHeader), nil }
	}
	engine, err := idem.New(db.Pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = api.NewHandler(svc, engine)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, gw
}

func runConformance(t *testing.T, url string, tenants bool, ops ...string) *conformance.Report {
	t.Helper()
	return runConformanceSettle(t, url, tenants, 0, ops...)
}

// runConformanceSettle is runConformance with Config.Settle. Zero is the
// default (30s from the first answer to retry): on a busy machine a
// request here took 15s, and the checks retry what the contract says to
// retry until the answer is final.
func runConformanceSettle(t *testing.T, url string, tenants bool, settle time.Duration, ops ...string) *conformance.Report {
	t.Helper()
	cfg := conformance.Config{Spec: "../openapi.yaml", URL: url, Operations: ops, Concurrency: 8, Settle: settle}
	if tenants {
		cfg.TenantHeader, cfg.Tenants = tenantHeader, []string{"acme", "globex"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	rep, err := conformance.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = rep.WriteText(&b)
	t.Logf("conformance report:\n%s", b.String())
	return rep
}

// TestConformancePasses: the payments example keeps the contract, every
// check of every idempotent operation passes.
func TestConformancePasses(t *testing.T) {
	t.Parallel()
	srv, gw := conformanceServer(t, true, nil)
	// A gateway slow enough that the concurrent check's duplicates arrive
	// while the first request is in flight.
	gw.Set(gateway.Switches{Latency: 60 * time.Millisecond})
	rep := runConformance(t, srv.URL, true)
	if !rep.OK() {
		t.Fatalf("the payments example fails %d checks", rep.Failed)
	}
	for _, op := range []string{"createPayment", "capturePayment", "createRefund"} {
		for _, check := range []string{"missing-key", "malformed-key/format", "malformed-key/too-long", "malformed-key/repeated",
			"first-execution", "key-echo", "content-digest", "replay", "replay/last-modified", "replay/canonical-json",
			"conflict", "quoted-key", "tenants", "concurrent"} {
			if res := rep.Find(op, check); res == nil || res.Outcome != conformance.Pass {
				t.Errorf("%s %s: %+v, want PASS", op, check, res)
			}
		}
	}
	if res := rep.Find("quotePayment", "idempotent"); res == nil || res.Outcome != conformance.Skip {
		t.Errorf("the opted-out quotePayment: %+v, want SKIP", res)
	}
}

// TestConformanceCatchesBrokenServers: each deliberately broken server
// fails the check that names its defect, with the evidence saying what is
// wrong. Every check of the list in package conformance has a server here
// that only it catches as described.
func TestConformanceCatchesBrokenServers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		scoped  bool // records scoped by tenant
		wrap    func(http.Handler) http.Handler
		latency time.Duration
		fails   string   // the check that must fail
		because []string // in its evidence
	}{
		{"no replay", true, newKeyEveryTime, 0, "replay", []string{"Idempotent-Replayed: true is missing", "the replay had an effect"}},
		{"replays another body's response", true, firstBodyWins, 0, "conflict", []string{"want 409 CONFLICTING_IDEMPOTENT_REQUEST, got 201"}},
		{"executes duplicates concurrently", true, duplicatesInFlightRun, 100 * time.Millisecond, "concurrent",
			[]string{"requests were executed", "the duplicates had several effects"}},
		{"echoes no key", true, dropKeyEcho, 0, "key-echo", []string{`echoed Idempotency-Key ""`}},
		{"shares keys across tenants", false, nil, 0, "tenants", []string{"got a replay for a key only tenant acme used"}},
		{"runs requests without a key", true, keyWhenMissing, 0, "missing-key",
			[]string{"want 400 IDEMPOTENCY_KEY_REQUIRED, got 201", "the request without a key had an effect"}},
		{"accepts a key not in its format", true, anyKeyFormat, 0, "malformed-key/format", []string{"want 400 IDEMPOTENCY_KEY_MALFORMED, got 201"}},
		{"takes the first of a repeated key header", true, firstKeyOfMany, 0, "malformed-key/repeated", []string{"want 400 IDEMPOTENCY_KEY_MALFORMED, got 201"}},
		{"marks a first execution as replayed", true, alwaysReplayed, 0, "first-execution", []string{"a fresh key was answered as a replay"}},
		{"accepts a key one character too long", true, trimLongKeys, 0, "malformed-key/too-long", []string{"want 400 IDEMPOTENCY_KEY_MALFORMED, got 201"}},
		{"sends no Content-Digest", true, dropHeader("Content-Digest"), 0, "content-digest", []string{`has Content-Digest ""`}},
		{"replays a Last-Modified from the future", true, futureLastModified, 0, "replay/last-modified", []string{"is after Date"}},
		{"replays without a declared header", true, dropOnReplay("X-Gateway-Charge-Id"), 0, "replay",
			[]string{`declared response header X-Gateway-Charge-Id is "" on the replay`}},
		{"fingerprints the raw bytes", true, keyPerRawBody, 0, "replay/canonical-json", []string{"Idempotent-Replayed: true is missing"}},
		{"takes a quoted key for another key", true, quotedKeyApart, 0, "quoted-key", []string{"Idempotent-Replayed: true is missing"}},
		{"leaves duplicates in flight", true, inFlightForever, 0, "concurrent", []string{"still in flight after"}},
	}
	// A server that never answers a key finally is retried by every check
	// until Settle has passed: 3s keeps it short, whatever the load, as no
	// answer of it ever becomes final.
	settle := map[string]time.Duration{"leaves duplicates in flight": 3 * time.Second}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, gw := conformanceServer(t, tc.scoped, tc.wrap)
			gw.Set(gateway.Switches{Latency: tc.latency})
			rep := runConformanceSettle(t, srv.URL, true, settle[tc.name], "createPayment")
			if rep.OK() {
				t.Fatal("the broken server passed")
			}
			res := rep.Find("createPayment", tc.fails)
			if res == nil || res.Outcome != conformance.Fail {
				t.Fatalf("check %s: %+v, want FAIL", tc.fails, res)
			}
			if len(res.Exchanges) == 0 {
				t.Errorf("check %s failed without exchanges as evidence", tc.fails)
			}
			for _, b := range tc.because {
				if !strings.Contains(res.Evidence, b) {
					t.Errorf("check %s failed without the evidence %q: %s", tc.fails, b, res.Evidence)
				}
			}
		})
	}
}

// keyRewriter rewrites a request's idempotency key and restores the
// original in the echo, so only the server's record keeping is broken.
func keyRewriter(next http.Handler, rewrite func(r *http.Request, key string) (string, func())) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys := r.Header.Values("Idempotency-Key")
		if len(keys) != 1 {
			next.ServeHTTP(w, r) // missing or repeated: the engine answers
			return
		}
		key := keys[0]
		newKey, done := rewrite(r, key)
		defer done()
		r.Header.Set("Idempotency-Key", newKey)
		next.ServeHTTP(&echoWriter{ResponseWriter: w, key: key}, r)
	})
}

type echoWriter struct {
	http.ResponseWriter
	key string
}

func (e *echoWriter) WriteHeader(status int) {
	if e.Header().Get("Idempotency-Key") != "" {
		e.Header().Set("Idempotency-Key", e.key)
	}
	e.ResponseWriter.WriteHeader(status)
}

// newKeyEveryTime runs every request under a key of its own: nothing is
// ever replayed.
func newKeyEveryTime(next http.Handler) http.Handler {
	return keyRewriter(next, func(r *http.Request, key string) (string, func()) {
		if _, err := uuid.Parse(strings.Trim(key, `"`)); err != nil {
			return key, func() {} // keep the key errors as they are
		}
		return uuid.NewString(), func() {}
	})
}

// duplicatesInFlightRun gives a request whose key is already in flight a key
// of its own: sequential retries replay, concurrent duplicates all run.
func duplicatesInFlightRun(next http.Handler) http.Handler {
	var mu sync.Mutex
	inFlight := map[string]int{}
	return keyRewriter(next, func(r *http.Request, key string) (string, func()) {
		mu.Lock()
		defer mu.Unlock()
		inFlight[key]++
		done := func() {
			mu.Lock()
			inFlight[key]--
			mu.Unlock()
		}
		if inFlight[key] > 1 {
			return uuid.NewString(), done
		}
		return key, done
	})
}

// firstBodyWins answers every request under a key with the first body that
// key was sent with: no fingerprint.
func firstBodyWins(next http.Handler) http.Handler {
	var mu sync.Mutex
	first := map[string][]byte{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if b, ok := first[key]; ok && key != "" {
			body = b
		} else {
			first[key] = body
		}
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		next.ServeHTTP(w, r)
	})
}

// dropKeyEcho removes the key from every response.
func dropKeyEcho(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&noEchoWriter{w}, r)
	})
}

type noEchoWriter struct{ http.ResponseWriter }

func (n *noEchoWriter) WriteHeader(status int) {
	n.Header().Del("Idempotency-Key")
	n.ResponseWriter.WriteHeader(status)
}

// TestConformanceFollowsTheProfile: under profile ietf a reused key with
// another payload is 422. The service and the spec both declaring ietf
// conform; a service answering ietf to a spec declaring the default
// profile fails the conflict check.
func TestConformanceFollowsTheProfile(t *testing.T) {
	// Not parallel: the generated handlers serve with the package's
	// operation table, switched to ietf for this test and back. The other
	// tests of the package are parallel, and Go runs them only after the
	// serial ones have ended (cleanups included).
	for _, op := range api.IdempotentOperations {
		op.Policy.Profile = idem.ProfileIETF
	}
	t.Cleanup(func() {
		for _, op := range api.IdempotentOperations {
			op.Policy.Profile = idem.ProfileDefault
		}
	})
	srv, _ := conformanceServer(t, false, nil)
	spec, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ietfSpec := bytes.Replace(spec, []byte("\nx-idempotent:\n"), []byte("\nx-idempotent:\n  profile: ietf\n"), 1)
	if bytes.Equal(ietfSpec, spec) {
		t.Fatal("no root x-idempotent in openapi.yaml to add the profile to")
	}
	run := func(data []byte) *conformance.Report {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rep, err := conformance.Run(ctx, conformance.Config{Spec: "openapi.yaml", SpecData: data, URL: srv.URL, Operations: []string{"createRefund"}, Concurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := run(ietfSpec); !rep.OK() {
		var b strings.Builder
		_ = rep.WriteText(&b)
		t.Fatalf("an ietf service against an ietf spec:\n%s", b.String())
	}
	res := run(spec).Find("createRefund", "conflict")
	if res == nil || res.Outcome != conformance.Fail || !strings.Contains(res.Evidence, "want 409") {
		t.Fatalf("an ietf service against a default spec: %+v, want the conflict check to fail wanting 409", res)
	}
}

// keyWhenMissing gives a request without a key a fresh one: the server runs
// it instead of refusing it.
func keyWhenMissing(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") == "" {
			r.Header.Set("Idempotency-Key", uuid.NewString())
		}
		next.ServeHTTP(w, r)
	})
}

// anyKeyFormat runs a key that is not a UUID under a UUID derived from
// it: the server takes any key, whatever the declared keyFormat.
func anyKeyFormat(next http.Handler) http.Handler {
	return keyRewriter(next, func(r *http.Request, key string) (string, func()) {
		if _, err := uuid.Parse(key); err == nil || strings.HasPrefix(key, `"`) {
			return key, func() {}
		}
		return uuid.NewSHA1(uuid.NameSpaceOID, []byte(key)).String(), func() {}
	})
}

// firstKeyOfMany takes the first of several Idempotency-Key headers.
func firstKeyOfMany(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if keys := r.Header.Values("Idempotency-Key"); len(keys) > 1 {
			r.Header.Set("Idempotency-Key", keys[0])
		}
		next.ServeHTTP(w, r)
	})
}

// alwaysReplayed marks every response Idempotent-Replayed: true.
func alwaysReplayed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&headerWriter{ResponseWriter: w, edit: func(h http.Header) { h.Set("Idempotent-Replayed", "true") }}, r)
	})
}

// trimLongKeys cuts a key of 37 characters to the UUID it starts with: the
// server accepts keys longer than their format.
func trimLongKeys(next http.Handler) http.Handler {
	return keyRewriter(next, func(r *http.Request, key string) (string, func()) {
		if len(key) == 37 {
			return key[:36], func() {}
		}
		return key, func() {}
	})
}

// dropHeader removes a response header.
func dropHeader(name string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(&headerWriter{ResponseWriter: w, edit: func(h http.Header) { h.Del(name) }}, r)
		})
	}
}

// dropOnReplay leaves header name out of every replay: a declared header
// that was not stored.
func dropOnReplay(name string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(&headerWriter{ResponseWriter: w, edit: func(h http.Header) {
				if h.Get("Idempotent-Replayed") == "true" {
					h.Del(name)
				}
			}}, r)
		})
	}
}

// futureLastModified dates every replay an hour after its Date.
func futureLastModified(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&headerWriter{ResponseWriter: w, edit: func(h http.Header) {
			if h.Get("Last-Modified") != "" {
				h.Set("Last-Modified", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
			}
		}}, r)
	})
}

type headerWriter struct {
	http.ResponseWriter
	edit func(http.Header)
}

func (h *headerWriter) WriteHeader(status int) {
	h.edit(h.Header())
	h.ResponseWriter.WriteHeader(status)
}

// keyPerRawBody runs each request under a key derived from its key and its
// body's bytes: the same JSON written differently is another request.
func keyPerRawBody(next http.Handler) http.Handler {
	return keyRewriter(next, func(r *http.Request, key string) (string, func()) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		return uuid.NewSHA1(uuid.NameSpaceOID, append([]byte(key), body...)).String(), func() {}
	})
}

// quotedKeyApart runs a key sent as a quoted string under a key of its own.
func quotedKeyApart(next http.Handler) http.Handler {
	return keyRewriter(next, func(r *http.Request, key string) (string, func()) {
		if strings.HasPrefix(key, `"`) {
			return uuid.NewSHA1(uuid.NameSpaceOID, []byte(key)).String(), func() {}
		}
		return key, func() {}
	})
}

// inFlightForever answers every request after the first of a key with 409
// IDEMPOTENT_REQUEST_IN_PROGRESS: a claim that never completes.
func inFlightForever(next http.Handler) http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		again := seen[key]
		seen[key] = true
		mu.Unlock()
		if key == "" || !again {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"type":"about:blank","title":"Conflict","status":409,"code":"ERR409_SERVER_STATE_CONFLICT","reason":"IDEMPOTENT_REQUEST_IN_PROGRESS"}`)
	})
}

// TestConformanceCommand runs `idemgen conformance` as a command, the way
// CI would: exit status 0 and a -json report without a failure for the
// payments example; exit status 1 and the FAIL line of the defect for a
// broken server.
func TestConformanceCommand(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "idemgen")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/idemgen/idemgen/cmd/idemgen").CombinedOutput(); err != nil {
		t.Fatalf("go build idemgen: %v\n%s", err, out)
	}
	run := func(url string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"conformance", "-spec", "../openapi.yaml", "-url", url, "-operation", "createPayment",
			"-tenant-header", tenantHeader, "-tenants", "acme,globex", "-n", "6"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if stderr.Len() > 0 {
			t.Errorf("stderr: %s", stderr.String())
		}
		return code, string(out)
	}

	srv, gw := conformanceServer(t, true, nil)
	gw.Set(gateway.Switches{Latency: 60 * time.Millisecond})
	code, out := run(srv.URL, "-json")
	var rep struct {
		Passed, Failed int
		Results        []struct {
			Operation, Check, Outcome, Evidence string
			Exchanges                           []struct{ Status int }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-json output: %v\n%s", err, out)
	}
	if code != 0 || rep.Failed != 0 || rep.Passed == 0 {
		t.Fatalf("the payments example: exit %d, %d passed, %d failed; want exit 0 and no failure\n%s", code, rep.Passed, rep.Failed, out)
	}
	checks := map[string]string{}
	for _, r := range rep.Results {
		checks[r.Check] = r.Outcome
		if r.Outcome == "PASS" && len(r.Exchanges) == 0 {
			t.Errorf("%s passed without exchanges in the -json report", r.Check)
		}
	}
	for _, c := range []string{"missing-key", "replay", "conflict", "tenants", "concurrent"} {
		if checks[c] != "PASS" {
			t.Errorf("-json: check %s is %q, want PASS", c, checks[c])
		}
	}

	broken, _ := conformanceServer(t, true, dropKeyEcho)
	code, out = run(broken.URL)
	if code != 1 || !regexp.MustCompile(`(?m)^FAIL  createPayment  key-echo +`).MatchString(out) || !strings.Contains(out, "DOES NOT CONFORM") {
		t.Fatalf("a server that echoes no key: exit %d; want 1, a FAIL line for key-echo and the verdict\n%s", code, out)
	}
	if !regexp.MustCompile(`(?m)^PASS  createPayment  replay +`).MatchString(out) {
		t.Errorf("the broken server's replay, which works, did not pass:\n%s", out)
	}
}
