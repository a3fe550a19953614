package idemclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The cost of a call through Do — key minting, the retry loop, reading and
// decoding — against the same request sent with net/http by hand, to the
// same local server answering 201 with a small JSON body. Run with
// `go test -run '^$' -bench . -benchmem ./runtime/idemclient`; the ratio of
// the two is in BENCHMARKS.md.

func benchServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"id":"pay_0123456789abcdef","amount":1999,"currency":"EUR"}`))
	}))
	b.Cleanup(srv.Close)
	return srv
}

var benchBody = []byte(`{"amount":1999,"currency":"EUR","description":"bench"}`)

func BenchmarkRawHTTP(b *testing.B) {
	srv := benchServer(b)
	hc := srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", srv.URL+"/things", bytes.NewReader(benchBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "0190a8e2-7c3b-7d4e-8f00-000000000001")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var t thing
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 || json.Unmarshal(body, &t) != nil {
			b.Fatal(resp.Status)
		}
	}
}

func BenchmarkDo(b *testing.B) {
	srv := benchServer(b)
	c, err := New(srv.URL, WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := NewRequest("/things")
		req.Raw("application/json", benchBody)
		if _, err := Do(context.Background(), c, &createOp, req, readThing); err != nil {
			b.Fatal(err)
		}
	}
}
