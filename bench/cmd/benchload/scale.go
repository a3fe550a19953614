package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
)

// scalePoint is the cost of a first execution and of a replay with records
// records in idem_records.
type scalePoint struct {
	records                  int64
	load                     time.Duration // loading the rows added for this point
	baseline, atomic, replay []run
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
// baseline, a first execution and a replay at c=32, two rounds each.
func (b *bench) scaleCurve(sizes []int, d time.Duration) ([]scalePoint, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	scenarios := []scenario{
		{name: "baseline", path: "/baseline", want: []int{201}},
		{name: "atomic", path: "/atomic", key: newKey, want: []int{201}},
		{name: "replay", path: "/atomic", key: func(w *worker) string { return w.keys[w.n%len(w.keys)] }, want: []int{201}},
	}
	// The scenarios before left records of their own; drop them (the replay
	// keys stay) so that the first point has the record count it names.
	if _, err := conn.Exec(ctx, "DELETE FROM idem_records WHERE NOT (idempotency_key = ANY($1))", b.replayKeys); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) idem_records"); err != nil {
		return nil, err
	}
	var points []scalePoint
	next := int64(1)
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
		}
		fmt.Fprintf(os.Stderr, "scale: %d records (loaded in %v)\n", p.records, p.load.Round(time.Second))
		for r := 0; r < 2; r++ {
			for i := range scenarios {
				s := scenarios[(i+r)%len(scenarios)]
				res, err := b.measure(s, 32, d, b.replayKeys, r+1)
				if err != nil {
					return nil, err
				}
				switch s.name {
				case "baseline":
					p.baseline = append(p.baseline, res)
				case "atomic":
					p.atomic = append(p.atomic, res)
				default:
					p.replay = append(p.replay, res)
				}
			}
		}
		points = append(points, p)
	}
	return points, nil
}

// sweepResult is the sweeper retiring expired records while traffic runs.
type sweepResult struct {
	rows, batch int
	budget      float64
	loadTime    time.Duration
	deleted     int64
	sweeping    time.Duration // time the sweeper ran, pauses included
	left        int64         // expired records left after the run
	// Traffic (atomic, c=32) alone and with the sweeper running, in
	// alternating windows.
	alone, during []run
}

// sweepUnderTraffic loads rows expired records (past the sweeper's grace;
// none when reuse: an earlier run left them), then alternates windows of
// atomic traffic at c=32 alone and with the sweeper running over the
// backlog. One pass runs throughout, on a pool of one connection: holding
// that connection pauses it (after the statement it is running) for the
// windows without it.
func (b *bench) sweepUnderTraffic(rows, rounds int, d time.Duration, budget float64, reuse bool) (*sweepResult, error) {
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
	res := &sweepResult{rows: rows, batch: 5000, budget: budget, loadTime: time.Since(t0)}
	fmt.Fprintf(os.Stderr, "sweep: %d expired records loaded in %v\n", rows, res.loadTime.Round(time.Second))
	traffic := scenario{name: "atomic", path: "/atomic", key: newKey, want: []int{201}}
	var deleted atomic.Int64
	s := idem.NewSweeper(pool, idem.SweeperConfig{BatchSize: res.batch, Grace: time.Hour, Budget: budget, LiveInterval: -1})
	// One uncounted second of traffic first (the run's first requests).
	if _, err := b.measure(traffic, 32, time.Second, b.replayKeys, 0); err != nil {
		return nil, err
	}
	// The sweeper starts paused.
	held, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	var serr error
	go func() {
		defer close(done)
		var sr idem.SweepResult
		sr, serr = s.RunOnce(sctx)
		deleted.Store(sr.Deleted)
	}()
	for r := 0; r < rounds; r++ {
		alone, err := b.measure(traffic, 32, d, b.replayKeys, r+1)
		if err != nil {
			return nil, err
		}
		held.Release()
		t0 := time.Now()
		during, err := b.measure(traffic, 32, d, b.replayKeys, r+1)
		if err != nil {
			return nil, err
		}
		if held, err = pool.Acquire(ctx); err != nil {
			return nil, err
		}
		res.sweeping += time.Since(t0)
		res.alone, res.during = append(res.alone, alone), append(res.during, during)
		fmt.Fprintf(os.Stderr, "sweep round %d: alone %.0f req/s p99 %.2fms; sweeping %.0f req/s p99 %.2fms\n",
			r+1, alone.rps(), ms(alone.pct(99)), during.rps(), ms(during.pct(99)))
	}
	stop()
	held.Release()
	<-done
	if serr != nil && !errors.Is(serr, context.Canceled) {
		return nil, serr
	}
	res.deleted = deleted.Load()
	var left int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM idem_records WHERE expires_at < now() - interval '1 hour'").Scan(&left); err != nil {
		return nil, err
	}
	res.left = left
	return res, nil
}
