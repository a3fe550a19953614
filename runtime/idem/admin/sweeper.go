package admin

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

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// SweeperConfig configures a Sweeper. The zero value is usable.
type SweeperConfig struct {
	// BatchSize bounds the rows one statement changes; zero means 1000.
	BatchSize int
	// Pages is the most pages of the table one statement reads (8 KiB
	// each); zero means 512 (4 MiB). A step's range is sized from the
	// step before: as many pages as held BatchSize rows due, or twice as
	// many as the last while they hold less than half of that, so that a
	// statement changes about BatchSize rows where records are expired
	// and reads Pages pages where they are not.
	Pages int
	// Budget is the share of a pass's time spent running statements: after
	// each one the sweeper pauses so long that the statements take at most
	// this share (unless KeepUp needs more), so that traffic keeps the
	// database (docs/design.md, "Expiry"). Zero means 0.1; 1 never pauses.
	Budget float64
	// KeepUp makes a pass that finds records due delete at least KeepUp
	// times as many records a second as the table gains (PostgreSQL's
	// count of inserted rows, read every few seconds), pausing less than
	// Budget asks where that is needed: on a busy server a statement's
	// time grows with the load while its work does not, and the budget
	// alone would then let the expired records pile up. Zero means 1.5; a
	// negative value paces by Budget alone.
	KeepUp float64
	// Interval is the pause between passes of Run; zero means one minute.
	Interval time.Duration
	// Grace is how long records are kept after their expiry, so that
	// onExpired=reject still recognises a key (no request replays them:
	// expiry is judged by expires_at); zero means one hour.
	Grace time.Duration
	// UnknownGrace is how long an UNKNOWN record nobody resolved is kept
	// after its expiry before it is deleted. Zero keeps it until someone
	// resolves it (`idemgen records resolve`), which is the default because
	// an UNKNOWN record is an outcome nobody knows.
	UnknownGrace time.Duration
	// OnAbandoned is told of every lease claim a pass finds abandoned (see
	// Sweeper) as it becomes UNKNOWN: alert on it, or queue it for a person.
	OnAbandoned func(ctx context.Context, c AbandonedClaim)
	// OnPass receives the result of every pass of Run and RunOnce (metrics).
	OnPass func(ctx context.Context, r SweepResult)
	// OnError receives Run's failed passes; nil logs them with Logger.
	OnError func(ctx context.Context, err error)
	// LiveInterval is how often a pass reports the live records it counted
	// on its walk (SweepResult.Live): zero means every pass, a negative
	// value never.
	LiveInterval time.Duration
	// Logger receives failed passes when OnError is nil, and a Debug line
	// per pass; nil means slog.Default().
	Logger *slog.Logger
}

// minStep is the fewest pages a step reads (unless Pages is smaller).
const minStep = 8

// SweepResult counts what one RunOnce did.
type SweepResult struct {
	// Deleted counts records deleted past their expiry and the grace.
	Deleted int64
	// Abandoned counts lease claims found abandoned past their expiry and
	// made UNKNOWN by this pass.
	Abandoned int64
	// Unknown counts the UNKNOWN records past their expiry that wait for a
	// resolution after this pass (abandoned claims, and recovery hooks that
	// could not tell).
	Unknown int64
	// UnknownDeleted counts UNKNOWN records deleted after UnknownGrace.
	UnknownDeleted int64
	// Moved counts records moved over from the v2 table that migration
	// 0005 left (see schema.Migrate), while it exists.
	Moved int64
	// Pages counts the table pages the pass walked (all of them, unless
	// it was cut short).
	Pages int64
	// Duration is how long the pass took, pauses included.
	Duration time.Duration
	// Live counts every live record, when this pass reports them (see
	// SweeperConfig.LiveInterval).
	Live *LiveRecords
}

// LiveRecords counts the records a person may have to look at.
type LiveRecords struct {
	InProgress int64         // IN_PROGRESS claims: running, or abandoned
	Abandoned  int64         // of them, those whose lease lapsed
	Unknown    int64         // UNKNOWN outcomes, expired or not
	Oldest     time.Duration // age of the oldest of them
}

// AbandonedClaim is a lease claim whose holder died and whose client never
// retried: its key expired with its outcome unknown.
type AbandonedClaim struct {
	Key       idem.Key // Since is the record's creation
	Attempts  int
	Recovery  string // the last recovery point saved, "" if none
	ExpiresAt time.Time
}

// Sweeper retires idempotency records. A pass walks the table in physical
// order, one statement per range of pages (no index on the expiry is kept
// up to date on every insert for it), pausing between statements to stay
// within SweeperConfig.Budget. A pass starts where the last one stopped (a
// pass cut short by its context or an error is resumed by the next one,
// not restarted) and wraps around, so it reads every page once:
//
//   - final records (COMPLETED, FAILED_REPLAYABLE, FAILED_RETRYABLE, and
//     EXPIRED ones, resolved so by hand) past their expiry and the grace
//     are deleted;
//   - a lease-mode claim (IN_PROGRESS) past its key's expiry whose lease
//     lapsed was abandoned: its process died and no client retried. What it
//     did outside the database is unknown, so it becomes UNKNOWN, counted
//     (SweepResult) and reported (OnAbandoned); it is never deleted on the
//     spot;
//   - UNKNOWN records are deleted only once resolved (resolution makes them
//     final or EXPIRED, and the rules above apply) or, if UnknownGrace is
//     set, that long after their expiry.
//
// A live claim (its lease held, or not yet expired) is never touched, and
// a row another transaction changed while a statement ran is taken only if
// it is still due (a row another transaction holds is waited for). Atomic
// mode leaves no claims: its record is written once, with the outcome.
// Several sweepers may run at once (a row one deletes, the others find
// gone), though each walks the whole table.
//
// The sweeper's statements commit without waiting for the WAL to reach the
// disk (synchronous_commit off, for that statement only): a step a
// database crash loses is done again by the next pass, and OnAbandoned may
// then hear of a claim twice. db should be a pool, not a transaction of the
// caller's (whose commit would then not wait either).
//
// While the v2 table that migration 0005 renamed exists, a pass first
// moves its records over, in batches, and drops it once it is empty.
type Sweeper struct {
	db       idem.DB
	q        *store.Queries
	cfg      SweeperConfig
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
func (s *Sweeper) insertRate(ctx context.Context) (float64, error) {
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

// NewSweeper returns a sweeper over db.
func NewSweeper(db idem.DB, cfg SweeperConfig) *Sweeper {
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
	return &Sweeper{db: db, q: store.New(db), cfg: cfg}
}

// RunOnce makes one pass: the v2 table's records, if any, then the walk.
func (s *Sweeper) RunOnce(ctx context.Context) (SweepResult, error) {
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

func (s *Sweeper) runOnce(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	batch := int32(min(s.cfg.BatchSize, 1<<30))
	if err := s.moveLegacy(ctx, batch, &res); err != nil {
		return res, err
	}
	pages, err := s.q.TablePages(ctx)
	if err != nil {
		return res, fmt.Errorf("idem: sweep: table size: %w", err)
	}
	w := walk{s: s, batch: batch, step: int64(min(s.cfg.Pages, minStep))}
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
type walk struct {
	s      *Sweeper
	batch  int32
	step   int64
	live   LiveRecords
	oldest float64 // seconds
}

// run sweeps the pages [first, end), one SweepRange statement per step.
func (w *walk) run(ctx context.Context, first, end int64, res *SweepResult) error {
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
				s.cfg.OnAbandoned(ctx, AbandonedClaim{
					Key:      idem.Key{Tenant: r.AbandonedTenants[i], Operation: r.AbandonedOperations[i], Value: key, Since: r.AbandonedCreated[i].Time},
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
func (s *Sweeper) moveLegacy(ctx context.Context, batch int32, res *SweepResult) error {
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

func (s *Sweeper) logger() *slog.Logger {
	if s.cfg.Logger != nil {
		return s.cfg.Logger
	}
	return slog.Default()
}

// Run sweeps at once and then every Interval until ctx is done, when it
// returns nil. A failed pass is reported to OnError and retried at the next
// interval.
func (s *Sweeper) Run(ctx context.Context) error {
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
