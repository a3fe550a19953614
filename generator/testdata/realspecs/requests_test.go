package api_test

// Compiled beside the package generated from a real spec and run by
// generator.TestRealSpecs (checkGeneratedServer): for every operation, a
// request the spec describes as valid (built by the conformance package's
// value generator) is sent over real HTTP to NewHandler(Unimplemented{},
// engine) on a real PostgreSQL and must reach the handler (501); malformed
// bodies and wrong-typed query parameters must get 400 problem+json and
// leave no idempotency record.
// realspec_setup_test.go, written by the generator test, gives the spec's
// file, its security hooks and its idempotent operations.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	api "example.com/generated/api"
	"github.com/idemgen/idemgen/conformance"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// maxReported bounds the failures listed in the test's message.
const maxReported = 40

func TestValidRequests(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", specFile))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := conformance.Requests(specFile, data)
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.New(t, pgtest.Options{})
	engine, err := idem.New(db.Pool, idem.Config{Operations: idempotentOperations, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("idem.New refuses the generated operations: %v", err)
	}
	srv := httptest.NewServer(api.NewHandler(api.Unimplemented{}, engine, options...))
	defer srv.Close()

	send := func(q conformance.Request, body []byte, key string) (int, string, string) {
		req, err := http.NewRequest(q.Method, srv.URL+api.BasePath+q.Target, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for name, vals := range q.Header {
			req.Header[name] = vals
		}
		if key != "" {
			req.Header.Set(q.KeyHeader, key)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", q.Method, q.Target, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 400))
		return res.StatusCode, res.Header.Get("Content-Type"), strings.TrimSpace(string(b))
	}
	records := func(key string) int {
		var n int
		if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM idem_records WHERE idempotency_key = $1", key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	reached, refused, excepted := 0, 0, 0
	for _, q := range reqs {
		if reason, ok := exceptions[q.Operation]; ok {
			excepted++
			t.Logf("known exception %s: %s", q.Operation, reason)
			continue
		}
		if q.Err != nil {
			fail("%s: no valid request: %v", q.Operation, q.Err)
			continue
		}
		key := ""
		if q.KeyHeader != "" {
			key = q.NewKey()
		}
		status, _, body := send(q, q.Body, key)
		if status != http.StatusNotImplemented {
			fail("%s: %d %s\n\t%s %s (%s) %s", q.Operation, status, body, q.Method, cut(q.Target), q.Header.Get("Content-Type"), cut(string(q.Body)))
			continue
		}
		reached++
		for _, m := range q.Malformed {
			key := ""
			if q.KeyHeader != "" {
				key = q.NewKey()
			}
			bad := q
			bad.Target = m.Target
			status, ctype, body := send(bad, m.Body, key)
			switch {
			case status != http.StatusBadRequest || !strings.HasPrefix(ctype, "application/problem+json"):
				fail("%s, %s: %d %s %s, want 400 problem+json\n\t%s %s %s", q.Operation, m.What, status, ctype, body, q.Method, cut(m.Target), cut(string(m.Body)))
			case key != "" && records(key) != 0:
				fail("%s, %s: 400 left %d idempotency records", q.Operation, m.What, records(key))
			default:
				refused++
			}
		}
	}
	t.Logf("%s: %d operations: %d valid requests reached the handler, %d malformed requests refused, %d known exceptions, %d failures",
		specFile, len(reqs), reached, refused, excepted, len(failures))
	if len(failures) > 0 {
		shown := failures
		if len(shown) > maxReported {
			shown = shown[:maxReported]
		}
		msg := strings.Join(shown, "\n")
		if len(failures) > len(shown) {
			msg += fmt.Sprintf("\n… and %d more", len(failures)-len(shown))
		}
		t.Errorf("%d of %d operations fail:\n%s", len(failures), len(reqs), msg)
	}
}

// cut shortens a target or body for the report.
func cut(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
