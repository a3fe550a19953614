package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/idemgen/idemgen/examples/payments/internal/telemetry"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemprom"
	"github.com/idemgen/idemgen/runtime/idemseal"
)

// ops is what the service tells the people who run it: Prometheus metrics,
// OpenTelemetry traces, the engine's log lines and its audit records; and
// the keys that seal stored responses at rest.
type ops struct {
	log     *slog.Logger
	reg     *prometheus.Registry
	metrics *idemprom.Metrics
	tracing *telemetry.Tracing
	sealer  idem.Sealer // nil: stored responses in plaintext
}

func newOps(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool) (*ops, error) {
	tr, err := telemetry.SetupTracing(ctx, "payments")
	if err != nil {
		return nil, err
	}
	o := &ops{log: log, reg: prometheus.NewRegistry(), metrics: idemprom.New(idemprom.Options{}), tracing: tr}
	if o.sealer, err = sealerFromEnv(log); err != nil {
		return nil, err
	}
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
	cfg.Sealer = o.sealer
	return cfg
}

// sealerFromEnv reads the keys that seal stored responses and recovery
// data: the file IDEM_SEAL_KEYS_FILE, else IDEM_SEAL_KEYS; ID:BASE64 of a
// 32-byte key each, the current key first (docs/runbook.md, "Key
// rotation"). Neither set: nothing is sealed. Only key ids are logged.
func sealerFromEnv(log *slog.Logger) (idem.Sealer, error) {
	var ring *idemseal.Ring
	if f := os.Getenv("IDEM_SEAL_KEYS_FILE"); f != "" {
		r, err := idemseal.RingFromFile(f)
		if err != nil {
			return nil, fmt.Errorf("IDEM_SEAL_KEYS_FILE: %w", err)
		}
		ring = r
	} else {
		r, ok, err := idemseal.RingFromEnv("IDEM_SEAL_KEYS")
		if err != nil {
			return nil, err
		}
		if !ok {
			log.Info("stored responses are not sealed (set IDEM_SEAL_KEYS or IDEM_SEAL_KEYS_FILE to seal them)")
			return nil, nil
		}
		ring = r
	}
	ids := ring.IDs()
	log.Info("sealing stored responses", "current_key", ids[0], "retired_keys", ids[1:])
	return idemseal.New(ring), nil
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
