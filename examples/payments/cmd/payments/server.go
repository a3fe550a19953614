package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// limits bound what one client can make the server hold: time and memory
// per connection. Without them, 400 connections each trickling a 1 MiB body
// grew the process from 28 to 493 MB (BenchmarkSlowUploads in
// examples/payments/e2e/slowupload_test.go measures it).
type limits struct {
	readHeader, read, write, idle time.Duration
	maxHeader                     int
	maxBody                       int64
}

func limitsFromEnv() (limits, error) {
	l := limits{
		readHeader: 5 * time.Second,
		read:       15 * time.Second,
		write:      30 * time.Second,
		idle:       60 * time.Second,
		maxHeader:  32 << 10,
		maxBody:    64 << 10,
	}
	for name, d := range map[string]*time.Duration{
		"HTTP_READ_HEADER_TIMEOUT": &l.readHeader, "HTTP_READ_TIMEOUT": &l.read,
		"HTTP_WRITE_TIMEOUT": &l.write, "HTTP_IDLE_TIMEOUT": &l.idle,
	} {
		if v := os.Getenv(name); v != "" {
			p, err := time.ParseDuration(v)
			if err != nil || p < 0 {
				return l, fmt.Errorf("%s=%q: want a duration such as 15s, or 0 for none", name, v)
			}
			*d = p
		}
	}
	for name, n := range map[string]*int64{"HTTP_MAX_BODY_BYTES": &l.maxBody} {
		if v := os.Getenv(name); v != "" {
			p, err := strconv.ParseInt(v, 10, 64)
			if err != nil || p <= 0 {
				return l, fmt.Errorf("%s=%q: want a positive number of bytes", name, v)
			}
			*n = p
		}
	}
	if v := os.Getenv("HTTP_MAX_HEADER_BYTES"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p <= 0 {
			return l, fmt.Errorf("HTTP_MAX_HEADER_BYTES=%q: want a positive number of bytes", v)
		}
		l.maxHeader = p
	}
	return l, nil
}

// newServer serves h within l. Bodies are bounded on every route (the
// idempotency engine bounds its own with the same limit and answers 413
// problem+json).
func newServer(h http.Handler, l limits) *http.Server {
	return &http.Server{
		Handler:           http.MaxBytesHandler(h, l.maxBody),
		ReadHeaderTimeout: l.readHeader,
		ReadTimeout:       l.read,
		WriteTimeout:      l.write,
		IdleTimeout:       l.idle,
		MaxHeaderBytes:    l.maxHeader,
	}
}

// healthz answers 200 "ok" when the database answers a ping within two
// seconds, else 503 problem+json. Why it failed (a DSN, an address, the
// driver's message) goes to the log only.
func healthz(pool *pgxpool.Pool, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := pool.Ping(ctx); err != nil {
			log.WarnContext(r.Context(), "healthz: database ping", "err", err)
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"the database does not answer"}`)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintln(w, "ok")
	})
}
