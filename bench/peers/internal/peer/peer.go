// Package peer is what the generated peer servers (ogen's, oapi-codegen's)
// share: the database pool, the business write every variant of the bench
// makes, and the process benchload starts and reads.
package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// insert is benchserver's business write (bench/cmd/benchserver): one row in
// bench_payments, a table benchserver creates before benchload starts the
// peers.
const insert = `INSERT INTO bench_payments (idempotency_key, amount, currency, reference)
VALUES ($1, $2, $3, $4) RETURNING id`

// Write inserts one payment in a transaction of its own and returns its id.
func Write(ctx context.Context, pool *pgxpool.Pool, amount int64, currency, reference string) (id int64, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, insert, nil, amount, currency, reference).Scan(&id)
	})
	return id, err
}

// Main connects to DATABASE_URL (POOL_SIZE connections at most), serves
// the handler newHandler returns on ADDR, with GET /_stats (the process's
// allocation count, which benchload reads around every run), until SIGINT
// or SIGTERM. name prefixes its errors.
func Main(name string, newHandler func(*pgxpool.Pool) (http.Handler, error)) {
	if err := run(newHandler); err != nil {
		log.Fatalf("%s: %v", name, err)
	}
}

func run(newHandler func(*pgxpool.Pool) (http.Handler, error)) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	if n, err := strconv.Atoi(os.Getenv("POOL_SIZE")); err == nil && n > 0 {
		cfg.MaxConns = int32(n)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	h, err := newHandler(pool)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET /_stats", func(w http.ResponseWriter, _ *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"Mallocs": m.Mallocs})
	})
	srv := &http.Server{Addr: os.Getenv("ADDR"), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
