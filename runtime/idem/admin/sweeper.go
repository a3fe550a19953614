package admin

import (
	"context"
	"log/slog"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/internal/sweep"
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
	s *sweep.Sweeper[idem.Key]
}

// NewSweeper returns a sweeper over db.
func NewSweeper(db idem.DB, cfg SweeperConfig) *Sweeper {
	c := sweep.Config[idem.Key]{
		BatchSize: cfg.BatchSize, Pages: cfg.Pages, Budget: cfg.Budget, KeepUp: cfg.KeepUp,
		Interval: cfg.Interval, Grace: cfg.Grace, UnknownGrace: cfg.UnknownGrace,
		OnError: cfg.OnError, LiveInterval: cfg.LiveInterval, Logger: cfg.Logger, NewKey: claimKey,
	}
	if cfg.OnAbandoned != nil {
		c.OnAbandoned = func(ctx context.Context, a sweep.Claim[idem.Key]) { cfg.OnAbandoned(ctx, AbandonedClaim(a)) }
	}
	if cfg.OnPass != nil {
		c.OnPass = func(ctx context.Context, r sweep.Result) { cfg.OnPass(ctx, result(r)) }
	}
	return &Sweeper{s: sweep.New(db, c)}
}

// claimKey is the key of an abandoned claim: Since is the record's creation.
func claimKey(tenant, operation, key string, created time.Time) idem.Key {
	return idem.Key{Tenant: tenant, Operation: operation, Value: key, Since: created}
}

// result is r as a SweepResult.
func result(r sweep.Result) SweepResult {
	res := SweepResult{Deleted: r.Deleted, Abandoned: r.Abandoned, Unknown: r.Unknown, UnknownDeleted: r.UnknownDeleted,
		Moved: r.Moved, Pages: r.Pages, Duration: r.Duration}
	if r.Live != nil {
		l := LiveRecords(*r.Live)
		res.Live = &l
	}
	return res
}

// RunOnce makes one pass: the v2 table's records, if any, then the walk.
func (s *Sweeper) RunOnce(ctx context.Context) (SweepResult, error) {
	r, err := s.s.RunOnce(ctx)
	return result(r), err
}

// Run sweeps at once and then every Interval until ctx is done, when it
// returns nil. A failed pass is reported to OnError and retried at the next
// interval.
func (s *Sweeper) Run(ctx context.Context) error { return s.s.Run(ctx) }
