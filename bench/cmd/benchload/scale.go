package main

import (
	"context"
	"fmt"
	"os"
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
	rows, batch     int
	deleted         int64
	deleteTime      time.Duration
	alone, deleting run // atomic traffic, c=8
}

// sweepUnderTraffic loads rows expired records (past the sweeper's grace)
// and runs the sweeper over them while atomic-mode traffic runs, against
// the same traffic alone.
func (b *bench) sweepUnderTraffic(rows int, d time.Duration) (*sweepResult, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	// One expiry per millisecond, as a service writing a thousand records a
	// second leaves them (a bulk load with one timestamp for every row is
	// no service's table).
	if err := loadRecords(ctx, conn, "sweep", 1, int64(rows), "now() - interval '2 hours' - g * interval '1 millisecond'"); err != nil {
		return nil, fmt.Errorf("load %d expired records: %w", rows, err)
	}
	pool, err := pgxpool.New(ctx, b.db)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	res := &sweepResult{rows: rows, batch: 5000}
	traffic := scenario{name: "atomic", path: "/atomic", key: newKey, want: []int{201}}
	if res.alone, err = b.measure(traffic, 8, d, b.replayKeys, 1); err != nil {
		return nil, err
	}
	// One pass, deleting every record (the grace is shorter than their
	// age).
	phase := func(grace time.Duration) (idem.SweepResult, time.Duration, run, error) {
		s := idem.NewSweeper(pool, idem.SweeperConfig{BatchSize: res.batch, Grace: grace})
		done := make(chan struct{})
		var sr idem.SweepResult
		var serr error
		var took time.Duration
		go func() {
			defer close(done)
			t0 := time.Now()
			sr, serr = s.RunOnce(ctx)
			took = time.Since(t0)
		}()
		tr, err := b.drive(traffic, 8, b.replayKeys, func() bool {
			select {
			case <-done:
				return false
			default:
				return true
			}
		})
		<-done
		if err == nil {
			err = serr
		}
		return sr, took, tr, err
	}
	sr, took, tr, err := phase(time.Hour)
	if err != nil {
		return nil, err
	}
	res.deleted, res.deleteTime, res.deleting = sr.Deleted, took, tr
	fmt.Fprintf(os.Stderr, "sweep: %d deleted in %v\n", res.deleted, res.deleteTime)
	return res, nil
}
