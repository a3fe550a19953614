package idemprom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgen/idemgen/runtime/events"
	"github.com/idemgen/idemgen/runtime/idem"
)

// OutboxCollector reports the transactional outbox's backlog
// (runtime/events) at each scrape, with one query: idem_outbox_pending,
// idem_outbox_lag_seconds (how long the oldest pending event has waited, by
// the database clock) and idem_outbox_dead. idem_outbox_up is 0 when the
// query failed (the other three are then absent).
type OutboxCollector struct {
	db                     idem.DB
	timeout                time.Duration
	pending, lag, dead, up *prometheus.Desc
}

// NewOutboxCollector returns a collector over db; each scrape's query is
// bounded by timeout (5s when zero).
func NewOutboxCollector(db idem.DB, namespace string, timeout time.Duration) *OutboxCollector {
	if namespace == "" {
		namespace = "idem"
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	name := func(n string) string { return prometheus.BuildFQName(namespace, "outbox", n) }
	return &OutboxCollector{
		db: db, timeout: timeout,
		pending: prometheus.NewDesc(name("pending"), "Events waiting in the outbox to be published.", nil, nil),
		lag:     prometheus.NewDesc(name("lag_seconds"), "How long the oldest pending event has waited.", nil, nil),
		dead:    prometheus.NewDesc(name("dead"), "Dead-lettered events waiting for events.Requeue.", nil, nil),
		up:      prometheus.NewDesc(name("up"), "1 when the outbox could be read at this scrape.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *OutboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.lag
	ch <- c.dead
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *OutboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, err := events.ReadOutboxStats(ctx, c.db)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, st.OldestPending.Seconds())
	ch <- prometheus.MustNewConstMetric(c.dead, prometheus.GaugeValue, float64(st.Dead))
}
