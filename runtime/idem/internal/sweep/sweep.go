// Package sweep is the sweeper of package admin (admin.Sweeper), which
// the deprecated idem.NewSweeper also returns: package idem cannot import
// admin, which imports it. Its documentation is admin's.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// DB is what a sweeper needs of a pool (idem.DB is one).
type DB interface {
	store.DBTX
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Config is admin.SweeperConfig, with claims of key type K; NewKey makes
// their keys.
type Config[K any] struct {
	BatchSize    int
	Pages        int
	Budget       float64
	KeepUp       float64
	Interval     time.Duration
	Grace        time.Duration
	UnknownGrace time.Duration
	OnAbandoned  func(ctx context.Context, c Claim[K])
	OnPass       func(ctx context.Context, r Result)
	OnError      func(ctx context.Context, err error)
	LiveInterval time.Duration
	Logger       *slog.Logger
	NewKey       func(tenant, operation, key string, created time.Time) K
}

// minStep is the fewest pages a step reads (unless Pages is smaller).
const minStep = 8

// Result is admin.Result.
type Result struct {
	Deleted        int64
	Abandoned      int64
	Unknown        int64
	UnknownDeleted int64
	Moved          int64
	Pages          int64
	Duration       time.Duration
	Live           *Live
}

// Live is admin.Live.
type Live struct {
	InProgress int64
	Abandoned  int64
	Unknown    int64
	Oldest     time.Duration
}

// Claim is admin.AbandonedClaim.
type Claim[K any] struct {
	Key       K
	Attempts  int
	Recovery  string
	ExpiresAt time.Time
}

// Sweeper is admin.Sweeper.
type Sweeper[K any] struct {
	db       DB
	q        *store.Queries
	cfg      Config[K]
	lastLive atomic.Int64 // unix nanoseconds of the last report of live records
	next     atomic.Int64 // the page the next step starts at

	mu       sync.Mutex
	inserted int64     // the table's inserted rows, as last read
	readAt   time.Time // when
	rate     float64   // rows inserted a second between the last two reads
}

// rateEvery is how often a pass reads the table's inserted rows.
const rateEvery = 5 * time.Second

// insertRate returns the rows the table gains a second, reading
// PostgreSQL's count when the last reading is older than rateEvery (0 until
// two readings were made).
func (s *Sweeper[K]) insertRate(ctx context.Context) (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.readAt.IsZero() && time.Since(s.readAt) < rateEvery {
		return s.rate, nil
	}
	n, err := s.q.TableInserts(ctx)
	if err != nil {
		return 0, fmt.Errorf("idem: sweep: insert rate: %w", err)
	}
	now := time.Now()
	if !s.readAt.IsZero() && n >= s.inserted {
		s.rate = float64(n-s.inserted) / now.Sub(s.readAt).Seconds()
	}
	s.inserted, s.readAt = n, now
	return s.rate, nil
}

// pause is how long to wait after a statement that took d and changed
// rows rows, with the table gaining rate rows a second: long enough for
// statements to take at most the budget's share of the time, but short
// enough to change keepUp times rate rows a second.
func pause(d time.Duration, rows int64, budget, keepUp, rate float64) time.Duration {
	if budget >= 1 {
		return 0
	}
	p := time.Duration(float64(d) * (1 - budget) / budget)
	if keepUp > 0 && rate > 0 && rows > 0 {
		// rows / (d + p) >= keepUp * rate
		k := time.Duration(float64(rows)/(keepUp*rate)*float64(time.Second)) - d
		p = min(p, max(k, 0))
	}
	return p
}

// New is admin.NewSweeper.
func New[K any](db DB, cfg Config[K]) *Sweeper[K] {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1000
	}
	if cfg.Pages <= 0 {
		cfg.Pages = 512
	}
	if cfg.Budget <= 0 || cfg.Budget > 1 {
		cfg.Budget = 0.1
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.KeepUp == 0 {
		cfg.KeepUp = 1.5
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Hour
	}
	return &Sweeper[K]{db: db, q: store.New(db), cfg: cfg}
}

// RunOnce makes one pass: the v2 table's records, if any, then the walk.
func (s *Sweeper[K]) RunOnce(ctx context.Context) (Result, error) {
	start := time.Now()
	res, err := s.runOnce(ctx)
	res.Duration = time.Since(start)
	if err == nil && s.cfg.OnPass != nil {
		s.cfg.OnPass(ctx, res)
	}
	return res, err
}

// pace waits for p, or until ctx is done.
func pace(ctx context.Context, p time.Duration) error {
	if p <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(p)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *Sweeper[K]) runOnce(ctx context.Context) (Result, error) {
	var res Result
	batch := int32(min(s.cfg.BatchSize, 1<<30))
	if err := s.moveLegacy(ctx, batch, &res); err != nil {
		return res, err
	}
	pages, err := s.q.TablePages(ctx)
	if err != nil {
		return res, fmt.Errorf("idem: sweep: table size: %w", err)
	}
	w := walk[K]{s: s, batch: batch, step: int64(min(s.cfg.Pages, minStep))}
	start := s.next.Load()
	if start >= pages {
		start = 0
	}
	// From where the last pass stopped to the end, then from the start to
	// there. Pages added meanwhile hold new records: the next pass reads them.
	if err := w.run(ctx, start, pages, &res); err != nil {
		return res, err
	}
	if err := w.run(ctx, 0, start, &res); err != nil {
		return res, err
	}
	if last := s.lastLive.Load(); s.cfg.LiveInterval >= 0 && (last == 0 || time.Since(time.Unix(0, last)) >= s.cfg.LiveInterval) {
		s.lastLive.Store(time.Now().UnixNano())
		w.live.Oldest = time.Duration(w.oldest * float64(time.Second))
		res.Live = &w.live
	}
	return res, nil
}

// walk is one pass's walk over the table: the size of its next step and
// the live records it counted.
type walk[K any] struct {
	s      *Sweeper[K]
	batch  int32
	step   int64
	live   Live
	oldest float64 // seconds
}

// run sweeps the pages [first, end), one SweepRange statement per step.
func (w *walk[K]) run(ctx context.Context, first, end int64, res *Result) error {
	s := w.s
	for first < end {
		t0 := time.Now()
		r, err := s.q.SweepRange(ctx, store.SweepRangeParams{FirstPage: first, EndPage: min(first+w.step, end), BatchSize: w.batch,
			GraceMs: s.cfg.Grace.Milliseconds(), UnknownGraceMs: s.cfg.UnknownGrace.Milliseconds()})
		if err != nil {
			return fmt.Errorf("idem: sweep: pages %d-%d: %w", first, min(first+w.step, end)-1, err)
		}
		res.Deleted += r.Deleted
		res.UnknownDeleted += r.UnknownDeleted
		res.Abandoned += int64(len(r.AbandonedKeys))
		if s.cfg.OnAbandoned != nil {
			for i, key := range r.AbandonedKeys {
				s.cfg.OnAbandoned(ctx, Claim[K]{
					Key:      s.cfg.NewKey(r.AbandonedTenants[i], r.AbandonedOperations[i], key, r.AbandonedCreated[i].Time),
					Attempts: int(r.AbandonedAttempts[i]), Recovery: r.AbandonedRecoveryPoints[i], ExpiresAt: r.AbandonedExpires[i].Time,
				})
			}
		}
		// The live records of the pages the statement finished, [first,
		// r.NextPage): a page it did not finish is read again by the next
		// step, and counted then.
		w.live.InProgress += r.InProgress
		w.live.Abandoned += r.LiveAbandoned
		w.live.Unknown += r.Unknown
		res.Unknown += r.UnknownExpired
		if r.InProgress+r.Unknown > 0 {
			w.oldest = max(w.oldest, r.OldestSeconds)
		}
		next := r.NextPage
		changed := r.Deleted + r.UnknownDeleted + int64(len(r.AbandonedKeys))
		if next <= first && changed == 0 {
			// More rows of one page were due than a batch takes, and
			// others hold every one of those: leave them to the next pass.
			next = first + 1
		}
		// The next range: as many pages as held a batch of due rows, or
		// twice as many as this one while they hold less than half a batch.
		switch {
		case r.Due >= int64(w.batch):
			w.step = max(next-first, int64(min(s.cfg.Pages, minStep)))
		case r.Due < int64(w.batch)/2:
			w.step = min(w.step*2, int64(s.cfg.Pages))
		}
		res.Pages += next - first
		s.next.Store(next)
		first = next
		d := time.Since(t0)
		rate := 0.0
		if changed > 0 && s.cfg.KeepUp > 0 && s.cfg.Budget < 1 {
			if rate, err = s.insertRate(ctx); err != nil {
				return err
			}
		}
		if err := pace(ctx, pause(d, changed, s.cfg.Budget, s.cfg.KeepUp, rate)); err != nil {
			return err
		}
	}
	return nil
}

// dropLegacy drops the v2 table once it is empty, waiting at most a second
// for the requests that read it (it is tried again on the next pass).
const dropLegacy = `SET LOCAL lock_timeout = '1s'; DROP TABLE IF EXISTS idem_records_v2`

// moveLegacy moves the records of the v2 table that migration 0005 left
// into idem_records, and drops it once it is empty.
func (s *Sweeper[K]) moveLegacy(ctx context.Context, batch int32, res *Result) error {
	present, err := s.q.LegacyTable(ctx)
	if err != nil || !present {
		return err
	}
	for {
		t0 := time.Now()
		m, err := s.q.MoveLegacy(ctx, store.MoveLegacyParams{BatchSize: batch, GraceMs: s.cfg.Grace.Milliseconds()})
		if err != nil {
			return fmt.Errorf("idem: sweep: move v2 records: %w", err)
		}
		res.Moved += m.Moved
		if err := pace(ctx, pause(time.Since(t0), 0, s.cfg.Budget, 0, 0)); err != nil {
			return err
		}
		if m.Taken < int64(batch) {
			break
		}
	}
	tx, err := s.db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("idem: sweep: drop the v2 table: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, dropLegacy); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available: requests read it
			return nil
		}
		return fmt.Errorf("idem: sweep: drop the v2 table: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("idem: sweep: drop the v2 table: %w", err)
	}
	return nil
}

func (s *Sweeper[K]) logger() *slog.Logger {
	if s.cfg.Logger != nil {
		return s.cfg.Logger
	}
	return slog.Default()
}

// Run sweeps at once and then every Interval until ctx is done, when it
// returns nil. A failed pass is reported to OnError and retried at the next
// interval.
func (s *Sweeper[K]) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		res, err := s.RunOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if s.cfg.OnError != nil {
				s.cfg.OnError(ctx, err)
			} else {
				s.logger().ErrorContext(ctx, "idem: sweeper", "error", err)
			}
		case err == nil:
			s.logger().DebugContext(ctx, "idem: sweep", "deleted", res.Deleted, "abandoned", res.Abandoned,
				"unknown", res.Unknown, "moved", res.Moved, "pages", res.Pages, "duration", res.Duration)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}
