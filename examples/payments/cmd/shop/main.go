// Command shop runs the shop, the second service of the payments example:
// it places orders and pays for them through the payments service
// (examples/payments/shop).
//
// Environment:
//
//	DATABASE_URL            the shop's PostgreSQL (required): its orders and
//	                        idempotency records, apart from the payments
//	                        service's
//	PAYMENTS_URL            the payments service (required)
//	ADDR                    listen address (default 127.0.0.1:8081)
//	IDEM_DOWNSTREAM_SECRET  the secret the keys of the payment calls are
//	                        derived under (idem.Config.DownstreamSecret), in
//	                        base64: at least 16 random bytes, the same in
//	                        every replica; unset: a public key (the keys
//	                        still cannot be traced back to a UUID order key)
//
// It serves POST /orders and GET /healthz. SIGTERM or SIGINT stops it
// gracefully.
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	payapi "github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/examples/payments/shop"
	"github.com/idemgen/idemgen/examples/payments/shop/api"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/idemclient"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error("shop: " + err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	dbURL, paymentsURL := os.Getenv("DATABASE_URL"), os.Getenv("PAYMENTS_URL")
	if dbURL == "" || paymentsURL == "" {
		return errors.New("DATABASE_URL and PAYMENTS_URL must be set")
	}
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:8081"
	}
	secret, err := base64.StdEncoding.DecodeString(os.Getenv("IDEM_DOWNSTREAM_SECRET"))
	if err != nil {
		return fmt.Errorf("IDEM_DOWNSTREAM_SECRET: not base64: %w", err)
	}

	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer pool.Close()
	if err := schema.Migrate(ctx, pool); err != nil {
		return err
	}
	if err := schema.MigrateFS(ctx, pool, shop.Migrations, "shop_schema_migrations"); err != nil {
		return err
	}

	payments, err := payapi.NewClient(paymentsURL, idemclient.WithHTTPClient(&http.Client{Timeout: 15 * time.Second}))
	if err != nil {
		return fmt.Errorf("PAYMENTS_URL: %w", err)
	}
	engine, err := idem.New(pool, idem.Config{
		Operations:       api.IdempotentOperations,
		DownstreamSecret: secret, // the payment calls' keys derive from each order's key under it
		Logger:           log,
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", api.NewHandler(shop.New(payments, log), engine, api.WithErrorHook(func(r *http.Request, err error) {
		log.Error("handler error", "method", r.Method, "path", r.URL.Path, "err", err)
	})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := pool.Ping(ctx); err != nil {
			http.Error(w, "database unavailable", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.MaxBytesHandler(mux, 64<<10), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 15 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 60 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "payments", paymentsURL)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return srv.Shutdown(shutCtx)
}
