package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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
	// OnError receives Run's failed passes; nil logs with log/slog.
	OnError func(ctx context.Context, err error)
}

// SweepResult counts what one RunOnce did.
type SweepResult struct {
	Expired int64 // final records turned into EXPIRED tombstones
	Deleted int64 // tombstones deleted
}

// Sweeper retires idempotency records: final records (COMPLETED,
// FAILED_REPLAYABLE, FAILED_RETRYABLE) past their expiry become EXPIRED
// tombstones without a stored response, and tombstones past the grace period
// are deleted, in bounded batches. IN_PROGRESS and UNKNOWN records are never
// touched. Several sweepers may run at once (batches skip locked rows).
type Sweeper struct {
	q   *store.Queries
	cfg SweeperConfig
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

// RunOnce sweeps until a batch comes back short, first expiring, then deleting.
func (s *Sweeper) RunOnce(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	batch := int32(min(s.cfg.BatchSize, 1<<30))
	for {
		n, err := s.q.ExpireRecords(ctx, batch)
		if err != nil {
			return res, fmt.Errorf("idem: sweep: expire records: %w", err)
		}
		res.Expired += n
		if n < int64(batch) {
			break
		}
	}
	for {
		n, err := s.q.DeleteExpired(ctx, store.DeleteExpiredParams{GraceMs: s.cfg.Grace.Milliseconds(), BatchSize: batch})
		if err != nil {
			return res, fmt.Errorf("idem: sweep: delete expired: %w", err)
		}
		res.Deleted += n
		if n < int64(batch) {
			break
		}
	}
	return res, nil
}

// Run sweeps at once and then every Interval until ctx is done, when it
// returns nil. A failed pass is reported to OnError and retried at the next
// interval.
func (s *Sweeper) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := s.RunOnce(ctx); err != nil && ctx.Err() == nil {
			if s.cfg.OnError != nil {
				s.cfg.OnError(ctx, err)
			} else {
				slog.ErrorContext(ctx, "idem: sweeper", "error", err)
			}
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
