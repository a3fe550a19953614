// Package idemprom exports the idempotency engine's metrics to Prometheus
// (github.com/prometheus/client_golang). It lives outside runtime/idem so a
// service that does not want Prometheus does not compile it.
//
//	m := idemprom.New(idemprom.Options{})
//	prometheus.MustRegister(m)
//	engine, _ := idem.New(pool, idem.Config{Observers: []idem.Observer{m}, ...})
//	sweeper := admin.NewSweeper(pool, admin.SweeperConfig{OnPass: m.ObserveSweep})   // live-record gauges
//	prometheus.MustRegister(idemprom.NewOutboxCollector(pool))   // with runtime/events
//
// Metrics (labels in braces; tenant only with Options.TenantLabel):
//
//	idem_requests_total{operation,outcome}            counter: every request, by idem.Outcome.Label
//	idem_requests_in_flight{operation}                gauge: requests this process is serving
//	idem_phase_duration_seconds{operation,phase}      histogram: read, claim, handler, recover, store, replay
//	idem_request_duration_seconds{operation}          histogram: the whole request
//	idem_stored_response_bytes{operation}             histogram: bodies stored for replay
//	idem_replay_age_seconds{operation}                histogram: how old a replayed response was
//	idem_new_keys_total{operation[,tenant]}           counter: first executions of a key
//	idem_conflicts_total{operation[,tenant]}          counter: a key reused with another request
//	idem_records{state}                               gauge: live IN_PROGRESS and UNKNOWN records, per sweep
//	idem_records_abandoned                            gauge: IN_PROGRESS claims whose lease lapsed, per sweep
//	idem_oldest_live_record_seconds                   gauge: age of the oldest of them, per sweep
//	idem_sweeper_rows_total{action}                   counter: records deleted, unresolved ones deleted, v2 records moved
//	idem_abandoned_claims_total                       counter: claims past their expiry made UNKNOWN
//	idem_records_unresolved                           gauge: UNKNOWN records past their expiry, per sweep
//	idem_sweeper_pass_duration_seconds                histogram: one sweeper pass
//	idem_cache_requests_total{operation,result}       counter: what Config.Cache did for the requests that asked it (hit, miss, fallback, invalid)
//	idem_cache_hit_ratio                              gauge: hits / keyed requests that asked the cache, since start
//	idem_cache_errors_total{operation}                counter: cache calls that failed (the engine went on without)
//	idem_db_violations_total{operation}               counter: record writes that lost to a duplicate on the primary key
//	idem_outbox_pending, idem_outbox_dead             gauges, read at scrape (OutboxCollector)
//	idem_outbox_lag_seconds                           gauge: age of the oldest pending event
//
// Label values are bounded: operations come from the operation table, and
// outcomes from a closed set. Keys are never labels; tenants only when asked
// for, and then at most Options.MaxTenants distinct values (the rest count
// under "_other"). With Namespace "idempotency" the cache metrics are named
// as operators of the founding design know them (idempotency_cache_hit_ratio,
// idempotency_db_violations_total).
package idemprom

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
)

// Options tune New.
type Options struct {
	// Namespace prefixes every metric name ("idem" gives idem_requests_total
	// and is the default).
	Namespace string
	// TenantLabel adds a tenant label to idem_new_keys_total and
	// idem_conflicts_total, to see which tenant abuses keys. Off by default:
	// tenants can be many.
	TenantLabel bool
	// MaxTenants bounds the tenant label's values; 100 by default.
	MaxTenants int
}

// Metrics holds the engine's metrics. It is an idem.Observer and a
// prometheus.Collector.
type Metrics struct {
	opts        Options
	requests    *prometheus.CounterVec
	inFlight    *prometheus.GaugeVec
	phases      *prometheus.HistogramVec
	duration    *prometheus.HistogramVec
	stored      *prometheus.HistogramVec
	replayAge   *prometheus.HistogramVec
	newKeys     *prometheus.CounterVec
	conflicts   *prometheus.CounterVec
	live        *prometheus.GaugeVec
	abandoned   prometheus.Gauge
	oldest      prometheus.Gauge
	swept       *prometheus.CounterVec
	madeUnknown prometheus.Counter
	unresolved  prometheus.Gauge
	sweepDur    prometheus.Histogram
	cache       *prometheus.CounterVec
	cacheRatio  prometheus.GaugeFunc
	cacheErrs   *prometheus.CounterVec
	violations  *prometheus.CounterVec

	cacheHits, cacheAsked atomic.Int64

	mu      sync.Mutex
	tenants sync.Map // tenant -> struct{}, at most MaxTenants
	nTenant int      // guarded by mu
}

var (
	_ idem.Observer        = (*Metrics)(nil)
	_ idem.CacheObserver   = (*Metrics)(nil)
	_ prometheus.Collector = (*Metrics)(nil)
)

// LatencyBuckets are the phase and request histograms' buckets, in seconds:
// a claim or a replay takes about a millisecond, a handler that calls out
// up to tens of seconds.
var LatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// New returns the metrics; register them with a prometheus.Registerer.
func New(opts Options) *Metrics {
	if opts.Namespace == "" {
		opts.Namespace = "idem"
	}
	if opts.MaxTenants <= 0 {
		opts.MaxTenants = 100
	}
	ns := opts.Namespace
	abuse := []string{"operation"}
	if opts.TenantLabel {
		abuse = append(abuse, "tenant")
	}
	m := &Metrics{
		opts: opts,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "Idempotent requests by operation and outcome (executed, replayed, conflict, in_flight, expired_executed, lease_lost, released, failed_retryable, unknown, ...)."},
			[]string{"operation", "outcome"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "requests_in_flight",
			Help: "Idempotent requests this process is serving now."}, []string{"operation"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "phase_duration_seconds",
			Help: "Duration of each phase of a keyed request: read, claim, handler, recover, store (with COMMIT), replay.", Buckets: LatencyBuckets},
			[]string{"operation", "phase"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "request_duration_seconds",
			Help: "Duration of an idempotent request inside the engine.", Buckets: LatencyBuckets},
			[]string{"operation"}),
		stored: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "stored_response_bytes",
			Help: "Size of the response bodies stored for replay.", Buckets: prometheus.ExponentialBuckets(64, 4, 9)},
			[]string{"operation"}),
		replayAge: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "replay_age_seconds",
			Help:    "How long ago a replayed response was stored: old keys replayed in numbers are worth a look.",
			Buckets: []float64{60, 300, 900, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 18 * 3600, 24 * 3600}},
			[]string{"operation"}),
		newKeys: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "new_keys_total",
			Help: "Keys executed for the first time (or anew after they expired)."}, abuse),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "conflicts_total",
			Help: "Requests refused because their key was used before with another request."}, abuse),
		live: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "records",
			Help: "Live records by state (IN_PROGRESS, UNKNOWN), counted by the sweeper."}, []string{"state"}),
		abandoned: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "records_abandoned",
			Help: "IN_PROGRESS claims whose lease lapsed and that no retry took over, counted by the sweeper."}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "oldest_live_record_seconds",
			Help: "Age of the oldest IN_PROGRESS or UNKNOWN record, by the sweeper's last pass."}),
		swept: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "sweeper_rows_total",
			Help: "Records the sweeper deleted past their expiry and grace (deleted), deleted unresolved after UnknownGrace (unknown_deleted), and moved from the v2 table (moved)."}, []string{"action"}),
		madeUnknown: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "abandoned_claims_total",
			Help: "Lease claims the sweeper found abandoned past their key's expiry and made UNKNOWN."}),
		unresolved: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "records_unresolved",
			Help: "UNKNOWN records past their expiry, waiting for a resolution (idemgen records resolve)."}),
		sweepDur: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "sweeper_pass_duration_seconds",
			Help: "Duration of one sweeper pass.", Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300}}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cache_requests_total",
			Help: "Keyed requests by what the cache (idem.Config.Cache) did: hit (answered, or the outcome of a duplicate waited for), miss (PostgreSQL served), fallback (the cache failed; PostgreSQL served)."},
			[]string{"operation", "result"}),
		cacheErrs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cache_errors_total",
			Help: "Cache calls that failed or returned what the engine did not write; the engine went on without the cache."},
			[]string{"operation"}),
		violations: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "db_violations_total",
			Help: "Record writes that lost to a concurrent duplicate on PostgreSQL's primary key: duplicates neither the cache nor the process held back (their handler ran and rolled back)."},
			[]string{"operation"}),
	}
	m.cacheRatio = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "cache_hit_ratio",
		Help: "Cache hits over keyed requests that asked the cache, since the process started (0 before any)."},
		func() float64 {
			asked := m.cacheAsked.Load()
			if asked == 0 {
				return 0
			}
			return float64(m.cacheHits.Load()) / float64(asked)
		})
	return m
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.inFlight, m.phases, m.duration, m.stored, m.replayAge, m.newKeys,
		m.conflicts, m.live, m.abandoned, m.oldest, m.swept, m.madeUnknown, m.unresolved, m.sweepDur,
		m.cache, m.cacheRatio, m.cacheErrs, m.violations}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// Request implements idem.Observer: it counts the outcome once the response
// is written.
func (m *Metrics) Request(ctx context.Context, op *idem.Operation) (context.Context, func(idem.Outcome)) {
	g := m.inFlight.WithLabelValues(op.ID)
	g.Inc()
	return ctx, func(o idem.Outcome) {
		g.Dec()
		m.ObserveOutcome(op, o)
	}
}

// ObserveOutcome records one request's outcome; Request calls it. Use it
// directly from Hooks.OnOutcome when the metrics are not an Observer.
func (m *Metrics) ObserveOutcome(op *idem.Operation, o idem.Outcome) {
	label := o.Label()
	m.requests.WithLabelValues(op.ID, label).Inc()
	m.duration.WithLabelValues(op.ID).Observe(o.Duration.Seconds())
	switch label {
	case "executed", "expired_executed", "recovered":
		if o.State == idem.StateCompleted || o.State == idem.StateFailedReplayable {
			m.stored.WithLabelValues(op.ID).Observe(float64(o.Bytes))
		}
	case "replayed":
		if !o.StoredAt.IsZero() {
			m.replayAge.WithLabelValues(op.ID).Observe(time.Since(o.StoredAt).Seconds())
		}
	case "conflict":
		m.conflicts.WithLabelValues(m.abuseLabels(op, o)...).Inc()
	}
	if o.Attempt == 1 || (o.Expired && o.Attempt > 0) {
		m.newKeys.WithLabelValues(m.abuseLabels(op, o)...).Inc()
	}
	if o.Cache != "" {
		m.cache.WithLabelValues(op.ID, string(o.Cache)).Inc()
		m.cacheAsked.Add(1)
		if o.Cache == idem.CacheHit {
			m.cacheHits.Add(1)
		}
	}
	if o.Raced {
		m.violations.WithLabelValues(op.ID).Inc()
	}
}

// CacheError implements idem.CacheObserver: it counts a failed cache call.
func (m *Metrics) CacheError(_ context.Context, op *idem.Operation, _ error) {
	m.cacheErrs.WithLabelValues(op.ID).Inc()
}

func (m *Metrics) abuseLabels(op *idem.Operation, o idem.Outcome) []string {
	if !m.opts.TenantLabel {
		return []string{op.ID}
	}
	return []string{op.ID, m.tenant(o.Tenant)}
}

// tenant returns t, or "_other" once MaxTenants distinct tenants were seen.
func (m *Metrics) tenant(t string) string {
	if _, ok := m.tenants.Load(t); ok {
		return t
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tenants.Load(t); ok {
		return t
	}
	if m.nTenant >= m.opts.MaxTenants {
		return "_other"
	}
	m.tenants.Store(t, struct{}{})
	m.nTenant++
	return t
}

// Phase implements idem.Observer: it times the phase.
func (m *Metrics) Phase(ctx context.Context, op *idem.Operation, p idem.Phase) (context.Context, func(error)) {
	start := time.Now()
	h := m.phases.WithLabelValues(op.ID, string(p))
	return ctx, func(error) { h.Observe(time.Since(start).Seconds()) }
}

// ObserveSweep records one sweeper pass: pass it as
// admin.SweeperConfig.OnPass.
func (m *Metrics) ObserveSweep(_ context.Context, r admin.SweepResult) {
	m.swept.WithLabelValues("moved").Add(float64(r.Moved))
	m.swept.WithLabelValues("deleted").Add(float64(r.Deleted))
	m.swept.WithLabelValues("unknown_deleted").Add(float64(r.UnknownDeleted))
	m.madeUnknown.Add(float64(r.Abandoned))
	m.unresolved.Set(float64(r.Unknown))
	m.sweepDur.Observe(r.Duration.Seconds())
	if l := r.Live; l != nil {
		m.live.WithLabelValues(string(idem.StateInProgress)).Set(float64(l.InProgress))
		m.live.WithLabelValues(string(idem.StateUnknown)).Set(float64(l.Unknown))
		m.abandoned.Set(float64(l.Abandoned))
		m.oldest.Set(l.Oldest.Seconds())
	}
}
