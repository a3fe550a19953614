package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
)

// BenchmarkServe runs one request of each variant through benchserver's
// handler in-process, against the database (DATABASE_URL): no client, no
// sockets, so that allocations per request and, under
// `valgrind --tool=callgrind`, instructions per request are the server's
// alone and do not depend on the machine's load. Every variant gets the
// same request (a fresh key, a body of the same shape), so the difference
// between two variants is the difference of their paths:
//
//	scripts/pg.sh run sh -c 'cd bench && go test -run ^$ -bench Serve -benchmem ./cmd/benchserver'
//
// With REDIS_URL set (scripts/redis.sh run), atomic-redis and replay-redis
// are the atomic and replay variants through the engine with the Redis
// fast path (the cache's writes after a response, which run in the
// background, count too), with what the cache did per request; under
// valgrind give the cache time (REDIS_TIMEOUT=1s), or its calls time out
// and fall back to PostgreSQL.
func BenchmarkServe(b *testing.B) {
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		b.Skip("DATABASE_URL is not set")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if err := setup(ctx, pool); err != nil {
		b.Fatal(err)
	}
	redisURL := os.Getenv("REDIS_URL")
	mux, closeMux, err := newMux(pool, slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})), redisURL)
	if err != nil {
		b.Fatal(err)
	}
	defer closeMux()

	body := func(i int) []byte {
		return fmt.Appendf(nil, `{"amount":%d,"currency":"EUR","reference":"bench-%d"}`, 100+i%900, i)
	}
	serve := func(b *testing.B, path, key string, body []byte) {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		if w.Code != http.StatusCreated {
			b.Fatalf("POST %s: status %d: %s", path, w.Code, w.Body)
		}
	}
	// Replays cycle through keys completed before the clock starts.
	completed := func(path string) []string {
		keys := make([]string, 100)
		for i := range keys {
			keys[i] = uuid.Must(uuid.NewV7()).String()
			serve(b, path, keys[i], body(i))
		}
		return keys
	}
	type variant struct {
		name, path string
		replay     []string // nil: a fresh key per request
	}
	variants := []variant{
		{"handwritten", "/handwritten", nil}, {"plain", "/baseline", nil}, {"atomic", "/atomic", nil}, {"lease", "/lease", nil},
		{"replay", "/atomic", completed("/atomic")},
	}
	if redisURL != "" {
		// idemredis connects in the background: until it has, requests
		// fall back to PostgreSQL.
		for start := time.Now(); cacheResults[idem.CacheMiss].Load() == 0; {
			if time.Since(start) > time.Minute {
				b.Fatal("the cache did not answer in a minute")
			}
			serve(b, "/redis/atomic", uuid.Must(uuid.NewV7()).String(), body(0))
			time.Sleep(10 * time.Millisecond)
		}
		variants = append(variants, variant{"atomic-redis", "/redis/atomic", nil},
			variant{"replay-redis", "/redis/atomic", completed("/redis/atomic")})
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			hits, fallbacks := cacheResults[idem.CacheHit].Load(), cacheResults[idem.CacheFallback].Load()
			i := 0
			for ; b.Loop(); i++ {
				key, n := uuid.Must(uuid.NewV7()).String(), i
				if v.replay != nil {
					key, n = v.replay[i%len(v.replay)], i%len(v.replay)
				}
				serve(b, v.path, key, body(n))
			}
			if strings.HasSuffix(v.name, "-redis") {
				// What the cache did: a measure of a cache that fell back
				// (a time-out, under valgrind say) is not the fast path's.
				b.ReportMetric(float64(cacheResults[idem.CacheHit].Load()-hits)/float64(i), "cache-hits/op")
				b.ReportMetric(float64(cacheResults[idem.CacheFallback].Load()-fallbacks)/float64(i), "cache-fallbacks/op")
			}
		})
	}
}
