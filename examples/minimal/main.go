// Command rooms serves the API of openapi.yaml with idemgen: every POST is
// idempotent, its record kept in PostgreSQL beside the bookings.
//
//	DATABASE_URL  PostgreSQL connection string (required)
//	ADDR          listen address (default 127.0.0.1:8080)
//
// It applies its migrations, serves the API, GET /metrics (Prometheus) and
// GET /healthz, logs one line per request, and stops gracefully on SIGINT or
// SIGTERM.
package main

import (
	"context"
	"embed"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/idemgen/idemgen/examples/minimal/api"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/idemprom"
)

//go:generate go tool idemgen generate

// migrations are the service's own tables, applied after idemgen's.
//
//go:embed migrations/*.sql
var migrations embed.FS

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		slog.Error("rooms: " + err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer pool.Close()
	// idemgen's tables first (idem_records and friends), then ours; each
	// set is recorded in its own table, and many replicas may start at once.
	if err := schema.Migrate(ctx, pool); err != nil {
		return err
	}
	if err := schema.MigrateFS(ctx, pool, migrations, "rooms_schema_migrations"); err != nil {
		return err
	}

	metrics := idemprom.New(idemprom.Options{})
	prometheus.MustRegister(metrics)
	h, err := newHandler(pool, metrics)
	if err != nil {
		return err
	}
	// The sweeper deletes records past their ttl, in small batches.
	sweeper := admin.NewSweeper(pool, admin.SweeperConfig{Interval: time.Minute, OnPass: metrics.ObserveSweep})
	go sweeper.Run(ctx)

	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle("GET /metrics", promhttp.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	srv := newServer(addr, mux)
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.WithoutCancel(ctx))
	}()
	slog.Info("rooms: listening", "addr", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newServer serves h on addr within the bounds a server facing clients
// needs (docs/operations.md, "The HTTP server"): without them one client
// that sends its headers or its body slowly, or never, holds a connection
// and a goroutine for as long as it likes.
func newServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,  // the request line and headers
		ReadTimeout:       15 * time.Second, // the whole request, body included
		WriteTimeout:      30 * time.Second, // from the end of the headers to the end of the response: longer than the slowest handler
		IdleTimeout:       60 * time.Second, // a kept-alive connection between requests
		MaxHeaderBytes:    32 << 10,         // the request line and headers, in bytes
	}
}

// newHandler builds the idempotency engine over pool and the handler
// idemgen generated for openapi.yaml.
func newHandler(pool *pgxpool.Pool, metrics *idemprom.Metrics) (http.Handler, error) {
	engine, err := idem.New(pool, idem.Config{
		Operations: api.IdempotentOperations, // each operation's x-idempotent policy
		Observers:  []idem.Observer{metrics},
	})
	if err != nil {
		return nil, err
	}
	return api.NewHandler(&Service{db: pool}, engine), nil
}
