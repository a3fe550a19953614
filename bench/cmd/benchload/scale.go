package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem/admin"
)

// scalePoint is the cost of a first execution and of a replay with records
// records in idem_records.
type scalePoint struct {
	records                  int64
	load                     time.Duration // loading the rows added for this point
	baseline, atomic, replay []run
	// What the database did for the atomic and replay runs (all rounds).
	atomicDB, replayDB counters
}

// scaleScenarios are what each point of the scale curve (and each side of
// a paired run) measures.
func scaleScenarios() []scenario {
	return []scenario{
		{name: "baseline", path: "/baseline", want: []int{201}},
		{name: "atomic", path: "/atomic", key: newKey, want: []int{201}},
		{name: "replay", path: "/atomic", key: func(w *worker) string { return w.keys[w.n%len(w.keys)] }, want: []int{201}},
	}
}

// add files a run of one of scaleScenarios under its scenario, with what
// the database did meanwhile.
func (p *scalePoint) add(scenario string, res run, db counters) {
	switch scenario {
	case "baseline":
		p.baseline = append(p.baseline, res)
	case "atomic":
		p.atomic = append(p.atomic, res)
		p.atomicDB = p.atomicDB.add(db)
	default:
		p.replay = append(p.replay, res)
		p.replayDB = p.replayDB.add(db)
	}
}

// runs are the point's runs of one of scaleScenarios.
func (p scalePoint) runs(scenario string) []run {
	switch scenario {
	case "baseline":
		return p.baseline
	case "atomic":
		return p.atomic
	}
	return p.replay
}

// measureCounted measures s at c=32 on b.srv and reads what the database
// behind conn did meanwhile.
func (b *bench) measureCounted(ctx context.Context, conn *pgx.Conn, s scenario, d time.Duration, keys []string, round int) (run, counters, error) {
	c0, err := readCounters(ctx, conn)
	if err != nil {
		return run{}, counters{}, err
	}
	res, err := b.measure(s, 32, d, keys, round)
	if err != nil {
		return run{}, counters{}, err
	}
	c1, err := readCounters(ctx, conn)
	if err != nil {
		return run{}, counters{}, err
	}
	return res, c1.sub(c0), nil
}

// loadRecords adds completed records under random UUID keys, numbered from
// first to last, straight into the table with generate_series (one
// statement per million rows). expires sets their expiry: an SQL
// expression, in which g is the row's number.
func loadRecords(ctx context.Context, conn *pgx.Conn, prefix string, first, last int64, expires string) error {
	for lo := first; lo <= last; lo += 1_000_000 {
		hi := min(lo+999_999, last)
		_, err := conn.Exec(ctx, `
			INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
				response_status, response_headers, response_body, completed_at, expires_at)
			SELECT idem_record_id('', 'createAtomic', md5($1 || g)::uuid::text), '', 'createAtomic', md5($1 || g)::uuid::text, 'COMPLETED', sha256(int8send(g)), 'bench',
				201, '{"Content-Type": ["application/json"]}',
				convert_to('{"id":' || g || ',"amount":100,"currency":"EUR","reference":"loaded"}', 'UTF8'),
				now(), `+expires+`
			FROM generate_series($2::bigint, $3::bigint) g`, prefix, lo, hi)
		if err != nil {
			return err
		}
	}
	_, err := conn.Exec(ctx, "VACUUM (ANALYZE) idem_records")
	if err == nil {
		_, err = conn.Exec(ctx, "CHECKPOINT")
	}
	return err
}

func countRecords(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var n int64
	err := conn.QueryRow(ctx, "SELECT count(*) FROM idem_records").Scan(&n)
	return n, err
}

// scaleCurve grows idem_records to each size in turn (after removing what
// the earlier scenarios left besides the replay keys) and measures the
// baseline, a first execution and a replay at c=32, rounds times each. With
// reuse it keeps what the table holds (the records an earlier run loaded,
// numbered on from there), and settles it before the first point.
func (b *bench) scaleCurve(sizes []int, d time.Duration, rounds int, reuse bool) ([]scalePoint, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	scenarios := scaleScenarios()
	// One uncounted second of each scenario first, as the other scenarios
	// have: a backend's first requests (its caches, its first touch of
	// shared memory) would otherwise land in the first point's first round.
	for _, sc := range scenarios {
		if _, err := b.measure(sc, 32, time.Second, b.replayKeys, 0); err != nil {
			return nil, fmt.Errorf("warm-up %s: %w", sc.name, err)
		}
	}
	// The scenarios before left records of their own; drop them (the replay
	// keys stay) so that the first point has the record count it names.
	next := int64(1)
	if reuse {
		// Numbered on after the rows loaded before (their keys are
		// md5('scale' || n)); the few records other runs left are noise
		// next to a table worth reusing.
		if err := conn.QueryRow(ctx, "SELECT count(*) + 1 FROM idem_records").Scan(&next); err != nil {
			return nil, err
		}
		for _, stmt := range []string{"VACUUM (ANALYZE) idem_records", "CHECKPOINT"} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				return nil, fmt.Errorf("settle: %s: %w", stmt, err)
			}
		}
	} else {
		if _, err := conn.Exec(ctx, "DELETE FROM idem_records WHERE NOT (idempotency_key = ANY($1))", b.replayKeys); err != nil {
			return nil, err
		}
		if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) idem_records"); err != nil {
			return nil, err
		}
	}
	var points []scalePoint
	for _, size := range sizes {
		have, err := countRecords(ctx, conn)
		if err != nil {
			return nil, err
		}
		p := scalePoint{records: max(have, int64(size))}
		if add := int64(size) - have; add > 0 {
			t0 := time.Now()
			if err := loadRecords(ctx, conn, "scale", next, next+add-1, "now() + interval '23 hours'"); err != nil {
				return nil, fmt.Errorf("load %d records: %w", add, err)
			}
			next += add
			p.load = time.Since(t0)
			// A table that grew to this size over days has been vacuumed
			// and checkpointed along the way: settle the bulk load the same
			// way, so that autovacuum's first pass over the new rows (hint
			// bits, visibility map, statistics) and the write-back of the
			// load's dirty pages do not run inside the measured rounds.
			for _, stmt := range []string{"VACUUM (ANALYZE) idem_records", "CHECKPOINT"} {
				if _, err := conn.Exec(ctx, stmt); err != nil {
					return nil, fmt.Errorf("settle %d records: %s: %w", p.records, stmt, err)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "scale: %d records (loaded in %v)\n", p.records, p.load.Round(time.Second))
		for r := range max(rounds, 1) {
			for i := range scenarios {
				s := scenarios[(i+r)%len(scenarios)]
				res, db, err := b.measureCounted(ctx, conn, s, d, b.replayKeys, r+1)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(os.Stderr, "scale %d %s r%d: %.0f req/s; per request %s; load %s\n",
					p.records, s.name, r+1, res.rps(), db.per(res.n), loadAvg())
				p.add(s.name, res, db)
			}
		}
		points = append(points, p)
	}
	return points, nil
}

// counters are the database's cumulative work: the WAL written (bytes,
// by position), its full-page images, and idem_records' buffer hits and
// reads (heap and indexes). The statistics are flushed by each backend at
// most once a second, so a run's figures carry some of the one before.
type counters struct {
	wal               int64
	fpi               int64
	heapHit, heapRead int64
	idxHit, idxRead   int64
	faults            int64 // minor page faults of the database's client backends (Linux)
}

func readCounters(ctx context.Context, conn *pgx.Conn) (counters, error) {
	// One statement, one transaction: the statistics it reads are fresh
	// (a backend keeps its snapshot of them until its transaction ends).
	var c counters
	err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'::pg_lsn, (SELECT wal_fpi FROM pg_stat_wal),
		coalesce(heap_blks_hit, 0), coalesce(heap_blks_read, 0), coalesce(idx_blks_hit, 0), coalesce(idx_blks_read, 0)
		FROM pg_statio_user_tables WHERE relname = 'idem_records'`).Scan(&c.wal, &c.fpi, &c.heapHit, &c.heapRead, &c.idxHit, &c.idxRead)
	if err != nil {
		return c, err
	}
	c.faults, err = backendFaults(ctx, conn)
	return c, err
}

// backendFaults sums the minor page faults of the database's client
// backends (field 10 of /proc/PID/stat; 0 where /proc cannot be read, as
// on a database on another machine).
func backendFaults(ctx context.Context, conn *pgx.Conn) (int64, error) {
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'")
	if err != nil {
		return 0, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, err
	}
	var n int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The command name (field 2) is in parentheses and may hold spaces.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 7 {
			v, _ := strconv.ParseInt(f[7], 10, 64)
			n += v
		}
	}
	return n, nil
}

func (c counters) sub(o counters) counters {
	return counters{c.wal - o.wal, c.fpi - o.fpi, c.heapHit - o.heapHit, c.heapRead - o.heapRead, c.idxHit - o.idxHit, c.idxRead - o.idxRead, c.faults - o.faults}
}

func (c counters) add(o counters) counters {
	return counters{c.wal + o.wal, c.fpi + o.fpi, c.heapHit + o.heapHit, c.heapRead + o.heapRead, c.idxHit + o.idxHit, c.idxRead + o.idxRead, c.faults + o.faults}
}

func (c counters) per(n int) string {
	f := func(x int64) float64 { return float64(x) / float64(max(n, 1)) }
	return fmt.Sprintf("page faults %.2f, WAL %.0f B, FPI %.2f, heap hit %.2f read %.2f, index hit %.2f read %.2f",
		f(c.faults), f(c.wal), f(c.fpi), f(c.heapHit), f(c.heapRead), f(c.idxHit), f(c.idxRead))
}

// sweepResult is the sweeper retiring expired records while traffic runs.
type sweepResult struct {
	rows, batch int
	budget      float64
	loadTime    time.Duration
	deleted     int64
	sweeping    time.Duration // time the sweeper ran, pauses included
	left        int64         // expired records left after the run
	pages       int64         // pages the sweeper walked
	skipped     int64         // emptied pages walked before the windows (reuse)
	skipTime    time.Duration
	// Traffic (atomic, c=32) alone and with the sweeper running, in
	// alternating windows (alone first in odd rounds, sweeping first in
	// even ones), and the records deleted in each sweeping window.
	alone, during []run
	deletedIn     []int64
	loads         []string // load average after each round
}

// sweepUnderTraffic loads rows expired records (past the sweeper's grace;
// none when reuse: an earlier run left them), then alternates windows of
// atomic traffic at c=32 alone and with the sweeper running over the
// backlog. One Sweeper, on a pool of one connection, runs in the sweeping
// windows only: its pass is canceled at a window's end (the statement it is
// running finishes), and the next window's pass resumes where it stopped
// (the Sweeper keeps its place).
func (b *bench) sweepUnderTraffic(rows, rounds int, d time.Duration, budget float64, batch int, reuse bool) (*sweepResult, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	// One expiry per millisecond, as a service writing a thousand records a
	// second leaves them (a bulk load with one timestamp for every row is
	// no service's table).
	t0 := time.Now()
	if !reuse {
		// What the scenarios before left goes first (the replay keys
		// stay): the backlog then starts at the table's first page, where
		// a service's oldest records are.
		if _, err := conn.Exec(ctx, "DELETE FROM idem_records WHERE NOT (idempotency_key = ANY($1))", b.replayKeys); err != nil {
			return nil, err
		}
		if _, err := conn.Exec(ctx, "VACUUM idem_records"); err != nil {
			return nil, err
		}
		if err := loadRecords(ctx, conn, "sweep", 1, int64(rows), "now() - interval '2 hours' - g * interval '1 millisecond'"); err != nil {
			return nil, fmt.Errorf("load %d expired records: %w", rows, err)
		}
	}
	if reuse {
		// What earlier runs deleted is vacuumed away first, as autovacuum
		// does in a service: the walk would otherwise prune those pages.
		if _, err := conn.Exec(ctx, "VACUUM idem_records"); err != nil {
			return nil, err
		}
	}
	cfg, err := pgxpool.ParseConfig(b.db)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	res := &sweepResult{rows: rows, batch: batch, budget: budget, loadTime: time.Since(t0)}
	if res.batch <= 0 {
		res.batch = 1000 // SweeperConfig's default
	}
	if res.budget <= 0 {
		res.budget = 0.1 // SweeperConfig's default
	}
	fmt.Fprintf(os.Stderr, "sweep: %d expired records loaded in %v\n", rows, res.loadTime.Round(time.Second))
	traffic := scenario{name: "atomic", path: "/atomic", key: newKey, want: []int{201}}
	var deleted atomic.Int64
	s := admin.NewSweeper(finishing{pool, &deleted}, admin.SweeperConfig{BatchSize: batch, Grace: time.Hour, Budget: budget, LiveInterval: -1})
	if reuse {
		// Earlier runs emptied the table's head: the pass walks it first,
		// without traffic, until it deletes its first records (the windows
		// then measure the sweeper on the backlog, not on empty pages).
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		var wr admin.SweepResult
		go func() {
			defer close(done)
			wr, _ = s.RunOnce(wctx)
		}()
		t0 := time.Now()
		for deleted.Load() == 0 && time.Since(t0) < 10*time.Minute {
			time.Sleep(100 * time.Millisecond)
		}
		stop()
		<-done
		res.skipped, res.skipTime = wr.Pages, time.Since(t0)
		fmt.Fprintf(os.Stderr, "sweep: the pass walked %d emptied pages in %v before the windows\n", wr.Pages, res.skipTime.Round(time.Second))
	}
	// One uncounted second of traffic first (the run's first requests).
	if _, err := b.measure(traffic, 32, time.Second, b.replayKeys, 0); err != nil {
		return nil, err
	}
	for r := 0; r < rounds; r++ {
		var alone, during run
		for i := 0; i < 2; i++ {
			if (i == 0) == (r%2 == 0) {
				if alone, err = b.measure(traffic, 32, d, b.replayKeys, r+1); err != nil {
					return nil, err
				}
				continue
			}
			// The sweeper runs for the window and is stopped at its end,
			// after the statement it is running (outside the window); the
			// next window's pass resumes where this one stopped.
			sctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			var sr admin.SweepResult
			var serr error
			go func() {
				defer close(done)
				sr, serr = s.RunOnce(sctx)
			}()
			t0 := time.Now()
			during, err = b.measure(traffic, 32, d, b.replayKeys, r+1)
			stop()
			<-done
			res.sweeping += time.Since(t0)
			if err != nil {
				return nil, err
			}
			if serr != nil && !errors.Is(serr, context.Canceled) {
				return nil, serr
			}
			res.deleted += sr.Deleted
			res.pages += sr.Pages
			res.deletedIn = append(res.deletedIn, sr.Deleted)
		}
		res.alone, res.during = append(res.alone, alone), append(res.during, during)
		res.loads = append(res.loads, loadAvg())
		fmt.Fprintf(os.Stderr, "sweep round %d: alone %.0f req/s p99 %.2fms; sweeping %.0f req/s p99 %.2fms, %d records deleted; load %s\n",
			r+1, alone.rps(), ms(alone.pct(99)), during.rps(), ms(during.pct(99)), res.deletedIn[r], res.loads[r])
	}
	var left int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM idem_records WHERE expires_at < now() - interval '1 hour'").Scan(&left); err != nil {
		return nil, err
	}
	res.left = left
	return res, nil
}

// finishing lets the sweeper's statements finish when its pass is canceled
// (the pass then stops in its pause), so that a window's end loses no work,
// and counts the records they delete as their results arrive.
type finishing struct {
	*pgxpool.Pool
	deleted *atomic.Int64
}

func (f finishing) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	row := f.Pool.QueryRow(context.WithoutCancel(ctx), sql, args...)
	if strings.Contains(sql, "name: SweepRange") {
		return countingRow{row, f.deleted}
	}
	return row
}

// countingRow adds a SweepRange result's first column (deleted) to n.
type countingRow struct {
	pgx.Row
	n *atomic.Int64
}

func (r countingRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if p, ok := dest[0].(*int64); ok && err == nil {
		r.n.Add(*p)
	}
	return err
}
