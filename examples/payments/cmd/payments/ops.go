package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/idemgen/idemgen/examples/payments/internal/telemetry"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemprom"
)

// ops is what the service tells the people who run it: Prometheus metrics,
// OpenTelemetry traces, the engine's log lines and its audit records.
type ops struct {
	log     *slog.Logger
	reg     *prometheus.Registry
	metrics *idemprom.Metrics
	tracing *telemetry.Tracing
}

func newOps(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool) (*ops, error) {
	tr, err := telemetry.SetupTracing(ctx, "payments")
	if err != nil {
		return nil, err
	}
	o := &ops{log: log, reg: prometheus.NewRegistry(), metrics: idemprom.New(idemprom.Options{}), tracing: tr}
	o.reg.MustRegister(
		o.metrics,
		idemprom.NewOutboxCollector(pool, "", 2*time.Second),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	log.Info("telemetry", "metrics", "/metrics", "traces", tr.Exporter)
	return o, nil
}

// engineConfig adds the observers, the logger and the audit hook to cfg.
func (o *ops) engineConfig(cfg idem.Config) idem.Config {
	cfg.Observers = append(cfg.Observers, o.metrics)
	if o.tracing.Tracer != nil {
		cfg.Observers = append(cfg.Observers, o.tracing.Tracer)
	}
	cfg.Logger = o.log
	cfg.Hooks.OnAudit = o.audit
	return cfg
}

// audit logs every replay of a stored response and every refused reuse of
// a key: where it came from and when the response was stored, never the
// key (docs/runbook.md says how to watch them).
func (o *ops) audit(ctx context.Context, a idem.Audit) {
	attrs := []slog.Attr{
		slog.String("kind", string(a.Kind)), slog.String("operation", a.Operation),
		slog.String("key_hash", a.KeyHash), slog.String("tenant", a.Tenant),
		slog.String("remote", a.RemoteAddr), slog.Int("status", a.Status),
	}
	if !a.StoredAt.IsZero() {
		attrs = append(attrs, slog.Duration("age", a.Time.Sub(a.StoredAt).Round(time.Second)))
	}
	o.log.LogAttrs(ctx, slog.LevelInfo, "idem: audit", attrs...)
}

// metricsHandler serves the registry in the Prometheus text format.
func (o *ops) metricsHandler() http.Handler {
	return promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{Registry: o.reg})
}

func (o *ops) shutdown(ctx context.Context) {
	if err := o.tracing.Shutdown(ctx); err != nil {
		o.log.Warn("telemetry: flush traces", "err", err)
	}
}
