// Command orders is the service docs/tutorial.md builds, step by step: a
// shop's orders (atomic mode, a business rule under a savepoint) and their
// shipments (lease mode, a carrier called outside the transaction, a
// recovery hook), per tenant, with production settings.
//
//	DATABASE_URL  PostgreSQL (required)
//	CARRIER_URL   the carrier's API (required)
//	REDIS_URL     a Redis for the idempotency cache (optional: none when unset)
//	ADDR          listen address (default 127.0.0.1:8080)
//
// It applies its migrations with goose, serves the API, GET /metrics (its
// own Prometheus registry) and GET /healthz, sweeps expired records, and
// stops gracefully on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/idemgen/idemgen/examples/tutorial/api"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/idemprom"
	"github.com/idemgen/idemgen/runtime/idemredis"
)

func main() {
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		slog.Error("orders: " + err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	carrierURL := os.Getenv("CARRIER_URL")
	if carrierURL == "" {
		return errors.New("CARRIER_URL is not set")
	}
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		return err
	}
	cache, closeCache, err := cacheFromEnv(os.Getenv("REDIS_URL"))
	if err != nil {
		return err
	}
	defer closeCache()

	registry, metrics := newMetrics()
	svc := &Service{db: pool, carrier: &Carrier{URL: carrierURL, HTTP: &http.Client{Timeout: 10 * time.Second}}}
	h, err := newHandler(pool, svc, cache, metrics)
	if err != nil {
		return err
	}
	// The sweeper deletes records past their ttl and makes abandoned lease
	// claims UNKNOWN; its passes feed the metrics the alerts read.
	sweeper := admin.NewSweeper(pool, admin.SweeperConfig{OnPass: metrics.ObserveSweep})
	go sweeper.Run(ctx)

	srv := newServer(addr, newMux(pool, h, registry))
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	slog.Info("orders: listening", "addr", addr, "cache", cache != nil)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newHandler builds the engine over pool and the generated handler, behind
// the tenant middleware. cache may be nil: no cache.
func newHandler(pool *pgxpool.Pool, svc *Service, cache idem.Cache, metrics *idemprom.Metrics) (http.Handler, error) {
	engine, err := idem.New(pool, idem.Config{
		Operations: api.IdempotentOperations, // each operation's x-idempotent policy
		Scope:      scope,                    // records per tenant
		Recover:    map[string]idem.RecoverFunc{"createShipment": svc.RecoverCreateShipment},
		Cache:      cache,
		Observers:  []idem.Observer{metrics},
	})
	if err != nil {
		return nil, err
	}
	return withTenants(api.NewHandler(svc, engine)), nil
}

// cacheFromEnv returns the Redis cache when url is set, and nil, an
// interface holding nothing, when it is not. Never a nil *idemredis.Cache
// in the interface: Config.Cache would then not be nil, and the engine
// would call a cache that is not there.
func cacheFromEnv(url string) (idem.Cache, func(), error) {
	if url == "" {
		return nil, func() {}, nil
	}
	c, err := idemredis.New(url, idemredis.Options{Prefix: "orders:"}) // a prefix of its own on a shared Redis
	if err != nil {
		return nil, nil, err
	}
	return c, c.Close, nil
}

// newMetrics registers the engine's metrics, and the Go runtime's and the
// process's, on a registry of the service's own (not the global one, which
// any imported package may write to).
func newMetrics() (*prometheus.Registry, *idemprom.Metrics) {
	registry := prometheus.NewRegistry()
	metrics := idemprom.New(idemprom.Options{})
	registry.MustRegister(metrics, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return registry, metrics
}

// newMux serves the API, the metrics of registry and a health check.
func newMux(pool *pgxpool.Pool, h http.Handler, registry *prometheus.Registry) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := pool.Ping(r.Context()); err != nil {
			http.Error(w, "database unavailable", http.StatusServiceUnavailable)
		}
	})
	return mux
}

// newServer bounds every phase of a connection: a client that sends its
// headers or its body slowly, or never reads the response, cannot hold a
// connection (and its database work) forever.
func newServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
}
