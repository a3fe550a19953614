// Command bookkeeper consumes the payments service's events from NATS
// JetStream and books them in the ledger, once each (package bookkeeper).
//
// Environment:
//
//	DATABASE_URL   PostgreSQL connection string (required); the ledger
//	               tables live next to the service's
//	NATS_URL       NATS server with JetStream (required)
//	ACK_WAIT       redelivery delay of an unacknowledged message (default 30s)
//	OTEL_TRACES_EXPORTER  none (default), stdout or otlp: see internal/telemetry
//
// It applies idemgen's migrations and the example's, makes sure the stream
// and its durable consumer exist, and consumes until SIGTERM or SIGINT. Run
// as many as you like: JetStream spreads the messages, the inbox keeps a
// message from being booked twice.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemgen/idemgen/examples/payments"
	"github.com/idemgen/idemgen/examples/payments/bookkeeper"
	"github.com/idemgen/idemgen/examples/payments/internal/telemetry"
	"github.com/idemgen/idemgen/runtime/idem/schema"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, log); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("bookkeeper: " + err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	dbURL, natsURL := os.Getenv("DATABASE_URL"), os.Getenv("NATS_URL")
	if dbURL == "" || natsURL == "" {
		return errors.New("DATABASE_URL and NATS_URL must be set")
	}
	ackWait := 30 * time.Second
	if s := os.Getenv("ACK_WAIT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("ACK_WAIT=%q: want a positive duration such as 30s", s)
		}
		ackWait = d
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer pool.Close()
	if err := schema.Migrate(ctx, pool); err != nil {
		return err
	}
	if err := schema.MigrateFS(ctx, pool, payments.Migrations, "payments_schema_migrations"); err != nil {
		return err
	}
	nc, err := payments.ConnectNATS(ctx, natsURL, bookkeeper.Name)
	if err != nil {
		return fmt.Errorf("NATS_URL: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := payments.EnsureStream(ctx, js, 1, 2*time.Minute); err != nil {
		return err
	}
	cons, err := bookkeeper.EnsureConsumer(ctx, js, ackWait)
	if err != nil {
		return err
	}
	tr, err := telemetry.SetupTracing(ctx, "bookkeeper")
	if err != nil {
		return err
	}
	defer tr.Shutdown(context.WithoutCancel(ctx))
	apply := bookkeeper.Apply
	if tr.Tracer != nil {
		apply = tr.Tracer.Handler(apply) // a process span in the trace of the request that sent the event
	}
	c, err := bookkeeper.New(pool, apply, bookkeeper.Options{Log: log})
	if err != nil {
		return err
	}
	log.Info("consuming", "stream", payments.Stream, "consumer", bookkeeper.Name)
	return c.Consume(ctx, cons)
}
