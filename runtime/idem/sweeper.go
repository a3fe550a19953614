package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// SweeperConfig configures a Sweeper. The zero value is usable.
type SweeperConfig struct {
	// BatchSize bounds each statement; zero means 1000.
	BatchSize int
	// Interval is the pause between runs of Run; zero means one minute.
	Interval time.Duration
	// Grace is how long EXPIRED tombstones are kept after expiry, so
	// onExpired=reject still recognises a key; zero means one hour.
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
	// LiveInterval is how often a pass also counts live records
	// (SweepResult.Live): zero means every pass, a negative value never.
	// Counting walks the table (about 0.35 s per million records on two
	// cores): with tens of millions of records, count every few minutes.
	LiveInterval time.Duration
	// Logger receives failed passes when OnError is nil, and a Debug line
	// per pass; nil means slog.Default().
	Logger *slog.Logger
}

// SweepResult counts what one RunOnce did.
type SweepResult struct {
	Expired int64 // final records turned into EXPIRED tombstones
	Deleted int64 // tombstones deleted
	// Abandoned counts lease claims found abandoned past their expiry and
	// made UNKNOWN by this pass.
	Abandoned int64
	// Unknown counts the UNKNOWN records past their expiry that wait for a
	// resolution after this pass (abandoned claims, and recovery hooks that
	// could not tell).
	Unknown int64
	// UnknownDeleted counts UNKNOWN records deleted after UnknownGrace.
	UnknownDeleted int64
	// Duration is how long the pass took.
	Duration time.Duration
	// Live counts every live record, when this pass took the count (see
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
	Key       Key // Since is the record's creation
	Attempts  int
	Recovery  string // the last recovery point saved, "" if none
	ExpiresAt time.Time
}

// Sweeper retires idempotency records, in bounded batches:
//
//   - final records (COMPLETED, FAILED_REPLAYABLE, FAILED_RETRYABLE) past
//     their expiry become EXPIRED tombstones without a stored response, and
//     tombstones past Grace are deleted;
//   - a lease-mode claim (IN_PROGRESS) past its key's expiry whose lease
//     lapsed was abandoned: its process died and no client retried. What it
//     did outside the database is unknown, so it becomes UNKNOWN, counted
//     (SweepResult) and reported (OnAbandoned); it is never deleted on the
//     spot;
//   - UNKNOWN records are deleted only once resolved (resolution makes them
//     final or EXPIRED, and the rules above apply) or, if UnknownGrace is
//     set, that long after their expiry.
//
// A live claim (its lease held, or not yet expired) is never touched.
// Atomic mode leaves no claims: its record is written once, with the
// outcome. Several sweepers may run at once (batches skip locked rows).
type Sweeper struct {
	q        *store.Queries
	cfg      SweeperConfig
	lastLive atomic.Int64 // unix nanoseconds of the last count of live records
}

// NewSweeper returns a sweeper over db.
func NewSweeper(db DB, cfg SweeperConfig) *Sweeper {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1000
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Hour
	}
	return &Sweeper{q: store.New(db), cfg: cfg}
}

// RunOnce sweeps until a batch comes back short: abandoned claims, then
// expiry, then deletion.
func (s *Sweeper) RunOnce(ctx context.Context) (SweepResult, error) {
	start := time.Now()
	res, err := s.runOnce(ctx)
	res.Duration = time.Since(start)
	if err == nil && s.cfg.OnPass != nil {
		s.cfg.OnPass(ctx, res)
	}
	return res, err
}

func (s *Sweeper) runOnce(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	batch := int32(min(s.cfg.BatchSize, 1<<30))
	for {
		rows, err := s.q.AbandonClaims(ctx, batch)
		if err != nil {
			return res, fmt.Errorf("idem: sweep: abandoned claims: %w", err)
		}
		res.Abandoned += int64(len(rows))
		if s.cfg.OnAbandoned != nil {
			for _, r := range rows {
				s.cfg.OnAbandoned(ctx, AbandonedClaim{
					Key:      Key{Tenant: r.Tenant, Operation: r.Operation, Value: r.IdempotencyKey, Since: r.CreatedAt.Time},
					Attempts: int(r.Attempts), Recovery: r.RecoveryPoint.String, ExpiresAt: r.ExpiresAt.Time,
				})
			}
		}
		if len(rows) < int(batch) {
			break
		}
	}
	// Each batch of the two phases starts where the one before ended in the
	// expiry index (see ExpireRecords in queries/records.sql).
	after := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for {
		r, err := s.q.ExpireRecords(ctx, store.ExpireRecordsParams{After: after, BatchSize: batch})
		if err != nil {
			return res, fmt.Errorf("idem: sweep: expire records: %w", err)
		}
		res.Expired += r.Expired
		if r.Expired < int64(batch) {
			break
		}
		after = r.LastExpiry
	}
	after = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for {
		r, err := s.q.DeleteExpired(ctx, store.DeleteExpiredParams{After: after, GraceMs: s.cfg.Grace.Milliseconds(), BatchSize: batch})
		if err != nil {
			return res, fmt.Errorf("idem: sweep: delete expired: %w", err)
		}
		res.Deleted += r.Deleted
		if r.Deleted < int64(batch) {
			break
		}
		after = r.LastExpiry
	}
	for s.cfg.UnknownGrace > 0 {
		n, err := s.q.DeleteUnknown(ctx, store.DeleteUnknownParams{GraceMs: s.cfg.UnknownGrace.Milliseconds(), BatchSize: batch})
		if err != nil {
			return res, fmt.Errorf("idem: sweep: delete unresolved: %w", err)
		}
		res.UnknownDeleted += n
		if n < int64(batch) {
			break
		}
	}
	n, err := s.q.CountUnknown(ctx)
	if err != nil {
		return res, fmt.Errorf("idem: sweep: count unresolved: %w", err)
	}
	res.Unknown = n
	if last := s.lastLive.Load(); s.cfg.LiveInterval >= 0 && (last == 0 || time.Since(time.Unix(0, last)) >= s.cfg.LiveInterval) {
		c, err := s.q.CountLive(ctx)
		if err != nil {
			return res, fmt.Errorf("idem: sweep: count live records: %w", err)
		}
		s.lastLive.Store(time.Now().UnixNano())
		res.Live = &LiveRecords{InProgress: c.InProgress, Abandoned: c.Abandoned, Unknown: c.Unknown,
			Oldest: time.Duration(c.OldestSeconds * float64(time.Second))}
	}
	return res, nil
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
			s.logger().DebugContext(ctx, "idem: sweep", "expired", res.Expired, "deleted", res.Deleted,
				"abandoned", res.Abandoned, "unknown", res.Unknown, "duration", res.Duration)
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
