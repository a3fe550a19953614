// Command payments runs the payments example service.
//
// Environment:
//
//	DATABASE_URL   PostgreSQL connection string (required)
//	ADDR           listen address (default 127.0.0.1:8080)
//	GATEWAY_URL    payment gateway simulator served by gateway.Handler; when
//	               unset, an in-process simulator is used (its charges are
//	               then lost with the process)
//	NATS_URL       NATS server with JetStream: when set, the process also
//	               runs the outbox relay, publishing the events the service
//	               enqueues (payments.payment.created) to the PAYMENTS
//	               stream. Unset: events wait in the outbox.
//
// HTTP limits (durations as in time.ParseDuration, 0 for none):
//
//	HTTP_READ_HEADER_TIMEOUT  time to read a request's headers (default 5s)
//	HTTP_READ_TIMEOUT         time to read a whole request, body included (default 15s)
//	HTTP_WRITE_TIMEOUT        time from the end of the headers to the end of
//	                          the response (default 30s: the gateway's 10 s
//	                          timeout, a lease takeover and the database)
//	HTTP_IDLE_TIMEOUT         how long a keep-alive connection may idle (default 60s)
//	HTTP_MAX_HEADER_BYTES     request line and headers (default 32768)
//	HTTP_MAX_BODY_BYTES       request body, every route (default 65536: a
//	                          payment is a few hundred bytes)
//
// Operations (see docs/runbook.md):
//
//	METRICS_ADDR          serve GET /metrics (Prometheus) on this address
//	                      instead of on ADDR
//	OTEL_TRACES_EXPORTER  none (default), stdout or otlp (with the standard
//	                      OTEL_EXPORTER_OTLP_* variables); see
//	                      internal/telemetry
//	IDEM_SEAL_KEYS        seal stored responses and recovery data at rest
//	                      (AES-256-GCM): ID:BASE64,... the current key
//	                      first, then retired ones still needed to open
//	                      older records; unset: plaintext
//	IDEM_SEAL_KEYS_FILE   the same keys from a file, one per line
//	SWEEP_INTERVAL        how often the sweeper retires expired records and
//	                      counts live and UNKNOWN ones for /metrics (default 1m)
//
// On start it applies idemgen's migrations and its own, then serves the API
// generated from openapi.yaml plus GET /healthz and GET /metrics. The engine
// logs one line per request (Info, or Warn for a conflict, a lost lease or
// an unknown outcome) and an "idem: audit" line per replay and conflict,
// with key hashes, never keys. Clients never see internal
// errors (addresses, connection strings, driver messages): they get a
// problem+json, and the cause goes to the log. SIGTERM or SIGINT stops it
// gracefully: in-flight requests finish, new ones are refused.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/api"
	"github.com/idemgen/idemgen/examples/payments/gateway"
	"github.com/idemgen/idemgen/examples/payments/service"
	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/natsjs"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error("payments: " + err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		return errors.New("DATABASE_URL is not set")
	}
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	limits, err := limitsFromEnv()
	if err != nil {
		return err
	}

	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	cfg.MaxConns = 32
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer pool.Close()

	// Migrations: idemgen's (the idem_records table), then the service's
	// own, each set recorded in its own table. Safe with many replicas.
	if err := schema.Migrate(ctx, pool); err != nil {
		return err
	}
	if err := schema.MigrateFS(ctx, pool, payments.Migrations, "payments_schema_migrations"); err != nil {
		return err
	}

	var gw gateway.Gateway
	if u := os.Getenv("GATEWAY_URL"); u != "" {
		gw = gateway.NewClient(u, &http.Client{Timeout: 10 * time.Second})
		log.Info("payment gateway", "url", u)
	} else {
		gw = gateway.New()
		log.Info("payment gateway: in-process simulator (set GATEWAY_URL to use an external one)")
	}

	o, err := newOps(ctx, log, pool)
	if err != nil {
		return err
	}
	defer o.shutdown(context.WithoutCancel(ctx))

	svc := service.New(pool, gw, log)
	engine, err := idem.New(pool, o.engineConfig(idem.Config{
		Operations:   api.IdempotentOperations,
		Recover:      svc.RecoveryHooks(), // createPayment asks the gateway after a crash
		MaxBodyBytes: limits.maxBody,
	}))
	if err != nil {
		return err
	}

	// The sweeper retires expired idempotency records in the background.
	// Each pass also counts live claims and UNKNOWN records for /metrics.
	sweepEvery := time.Minute
	if v := os.Getenv("SWEEP_INTERVAL"); v != "" {
		if sweepEvery, err = time.ParseDuration(v); err != nil || sweepEvery <= 0 {
			return fmt.Errorf("SWEEP_INTERVAL=%q: want a positive duration such as 1m", v)
		}
	}
	sweeper := admin.NewSweeper(pool, admin.SweeperConfig{Interval: sweepEvery, OnPass: o.metrics.ObserveSweep, Logger: log})
	go func() {
		if err := sweeper.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("sweeper stopped", "err", err)
		}
	}()

	if u := os.Getenv("NATS_URL"); u != "" {
		nc, err := startRelay(ctx, log, pool, u, o)
		if err != nil {
			return err
		}
		defer nc.Close()
	}

	mux := http.NewServeMux()
	mux.Handle("/", api.NewHandler(svc, engine, api.WithErrorHook(func(r *http.Request, err error) {
		log.Error("handler error", "method", r.Method, "path", r.URL.Path, "err", err)
	})))
	mux.Handle("GET /healthz", healthz(pool, log))
	if a := os.Getenv("METRICS_ADDR"); a != "" {
		// Metrics on a port of their own, kept off the public listener.
		msrv := &http.Server{Addr: a, Handler: o.metricsHandler(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := msrv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics listener", "err", err)
			}
		}()
		defer msrv.Close()
	} else {
		mux.Handle("GET /metrics", o.metricsHandler())
	}
	var handler http.Handler = mux
	if o.tracing.Tracer != nil {
		// The HTTP server span, continuing a client's traceparent; the
		// engine's spans are its children.
		handler = otelhttp.NewHandler(mux, "payments")
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := newServer(handler, limits)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// startRelay runs the outbox relay in the background until ctx ends: it
// wakes on the outbox's NOTIFY (polling every second as the fallback) and
// publishes to JetStream with the event id as Nats-Msg-Id. Every replica of
// the service may run one; they claim disjoint batches.
func startRelay(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, natsURL string, o *ops) (*nats.Conn, error) {
	nc, err := payments.ConnectNATS(ctx, natsURL, "payments-relay")
	if err != nil {
		return nil, fmt.Errorf("NATS_URL: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if _, err := payments.EnsureStream(ctx, js, 1, 2*time.Minute); err != nil {
		nc.Close()
		return nil, err
	}
	var pub events.Publisher = natsjs.NewPublisher(js, natsjs.PublisherConfig{
		ExpectStream: payments.Stream,
		OnDuplicate: func(ev cloudevents.Event) {
			log.Info("relay: the stream dropped a re-published event", "id", ev.ID())
		},
	})
	if o.tracing.Tracer != nil {
		pub = o.tracing.Tracer.Publisher(pub) // a publish span in each event's trace
	}
	relay := events.NewRelay(pool, pub, events.RelayConfig{
		MinBackoff: 200 * time.Millisecond,
		MaxBackoff: 10 * time.Second,
		Listen: func(ctx context.Context) (*pgx.Conn, error) {
			return pgx.Connect(ctx, pool.Config().ConnString())
		},
		OnError: func(err error) { log.Warn("relay", "err", err) },
		OnPublishError: func(ev cloudevents.Event, failures int, dead bool, err error) {
			log.Warn("relay: publish failed", "id", ev.ID(), "failures", failures, "dead", dead, "err", err)
		},
	})
	go func() {
		if err := relay.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("relay stopped", "err", err)
		}
	}()
	log.Info("outbox relay", "nats", natsURL, "stream", payments.Stream)
	return nc, nil
}
