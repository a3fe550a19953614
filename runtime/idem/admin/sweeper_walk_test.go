package admin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// fillRecords inserts n records of one state under keys prefix-1 ..
// prefix-n; expires and lease are SQL expressions (g is the row's number).
func fillRecords(t *testing.T, db idem.DB, prefix, state string, n int, expires, lease string) {
	t.Helper()
	_, err := db.Exec(context.Background(), `
		INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
			response_status, response_body, completed_at, lease_expires_at, expires_at)
		SELECT idem_record_id('', 'op', $1 || '-' || g), '', 'op', $1 || '-' || g, $2, sha256(g::text::bytea), 'v1',
			CASE WHEN $2 IN ('COMPLETED', 'FAILED_REPLAYABLE') THEN 201 END,
			CASE WHEN $2 IN ('COMPLETED', 'FAILED_REPLAYABLE') THEN '\x00'::bytea END,
			CASE WHEN $2 IN ('COMPLETED', 'FAILED_REPLAYABLE') THEN now() END,
			`+lease+`, `+expires+`
		FROM generate_series(1, $3::int) g`, prefix, state, n)
	if err != nil {
		t.Fatal(err)
	}
}

func tablePages(t *testing.T, db idem.DB) int64 {
	t.Helper()
	var pages int64
	if err := db.QueryRow(context.Background(), "SELECT pg_relation_size('idem_records') / 8192").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	return pages
}

// stepDB records the page ranges of the sweeper's statements, and calls
// after (when set) after each one.
type stepDB struct {
	idem.DB
	mu     sync.Mutex
	ranges [][2]int64
	after  func(n int)
}

func (d *stepDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	row := d.DB.QueryRow(ctx, sql, args...)
	if strings.Contains(sql, "name: SweepRange") {
		d.mu.Lock()
		d.ranges = append(d.ranges, [2]int64{args[0].(int64), args[1].(int64)})
		n := len(d.ranges)
		d.mu.Unlock()
		if d.after != nil {
			d.after(n)
		}
	}
	return row
}

func (d *stepDB) take() [][2]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.ranges
	d.ranges = nil
	return r
}

// TestSweeperResumes: a pass cut short is resumed by the next one where it
// stopped, and that pass wraps around to read every page once.
func TestSweeperResumes(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{})
	fillRecords(t, db, "old", "COMPLETED", 2000, "now() - interval '2 hours'", "NULL")
	fillRecords(t, db, "new", "COMPLETED", 100, "now() + interval '1 hour'", "NULL")
	pages := tablePages(t, db)
	if pages < 12 {
		t.Fatalf("%d pages, want 12 or more", pages)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sdb := &stepDB{DB: db, after: func(n int) {
		if n == 3 {
			cancel() // the third statement ran; the pass stops after it
		}
	}}
	s := admin.NewSweeper(sdb, admin.SweeperConfig{Pages: 2, Budget: 1, BatchSize: 100000})
	first, err := s.RunOnce(ctx)
	if !errors.Is(err, context.Canceled) || first.Pages != 6 {
		t.Fatalf("cut pass: %+v, %v; want 6 pages walked, then canceled", first, err)
	}
	if got := sdb.take(); fmt.Sprint(got) != "[[0 2] [2 4] [4 6]]" {
		t.Fatalf("cut pass read %v", got)
	}
	sdb.after = nil
	second, err := s.RunOnce(context.Background())
	if err != nil || second.Pages != pages || first.Deleted+second.Deleted != 2000 {
		t.Fatalf("second pass: %+v, %v; want %d pages, %d deleted", second, err, pages, 2000-first.Deleted)
	}
	got := sdb.take()
	if got[0] != [2]int64{6, 8} || got[len(got)-1] != [2]int64{4, 6} {
		t.Fatalf("second pass read %v; want from page 6 to the end, then 0 to 6", got)
	}
	var left int
	if err := db.QueryRow(context.Background(), "SELECT count(*) FROM idem_records").Scan(&left); err != nil || left != 100 {
		t.Fatalf("%d records left (%v), want the 100 unexpired ones", left, err)
	}
}

// TestSweeperSteps: where nothing is due, a step reads twice the pages of
// the last (up to Pages); where records are due, about a batch's worth.
func TestSweeperSteps(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{})
	fillRecords(t, db, "live", "COMPLETED", 20000, "now() + interval '1 hour'", "NULL")
	pages := tablePages(t, db)
	sdb := &stepDB{DB: db}
	s := admin.NewSweeper(sdb, admin.SweeperConfig{Pages: 64, Budget: 1})
	if res, err := s.RunOnce(context.Background()); err != nil || res.Pages != pages || res.Deleted != 0 {
		t.Fatalf("pass over live records: %+v, %v", res, err)
	}
	got := sdb.take()
	if want := 3 + (pages-8-16-32+63)/64; int64(len(got)) != want || got[0][1] != 8 || got[3][1]-got[3][0] != 64 {
		t.Fatalf("%d pages read in %d statements %v, want %d (8, 16, 32, then 64 pages)", pages, len(got), got, want)
	}

	// Every record expired: a statement takes a batch, so the pass takes
	// about as many statements as batches.
	if _, err := db.Exec(context.Background(), "UPDATE idem_records SET expires_at = now() - interval '2 hours'"); err != nil {
		t.Fatal(err)
	}
	pages = tablePages(t, db)
	res, err := admin.NewSweeper(sdb, admin.SweeperConfig{Pages: 64, Budget: 1, BatchSize: 1000}).RunOnce(context.Background())
	if err != nil || res.Deleted != 20000 || res.Pages != pages {
		t.Fatalf("pass over expired records: %+v, %v", res, err)
	}
	if got := sdb.take(); len(got) > 20000/1000*2+4 {
		t.Fatalf("%d statements for 20 batches: %v", len(got), got)
	}
}

// TestSweeperCountsInBatches: when a statement stops inside its range (its
// batch full), the live records are counted once, by the step that
// finishes their page, and only due records go.
func TestSweeperCountsInBatches(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{})
	_, err := db.Exec(context.Background(), `
		INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
			response_status, response_body, completed_at, lease_expires_at, expires_at)
		SELECT idem_record_id('', 'op', 'k' || g), '', 'op', 'k' || g, s.state, sha256(g::text::bytea), 'v1',
			CASE WHEN s.state = 'COMPLETED' THEN 201 END, CASE WHEN s.state = 'COMPLETED' THEN '\x00'::bytea END,
			CASE WHEN s.state = 'COMPLETED' THEN now() END,
			CASE WHEN s.state = 'IN_PROGRESS' THEN now() + interval '1 minute' END, now() + s.expires
		FROM generate_series(1, 3000) g
		JOIN (VALUES (0, 'IN_PROGRESS', interval '1 hour'),   -- a live claim
		             (1, 'UNKNOWN', interval '-1 minute'),   -- waits for a resolution
		             (2, 'COMPLETED', interval '-2 hours'),  -- due
		             (3, 'COMPLETED', interval '-2 hours'),  -- due
		             (4, 'COMPLETED', interval '1 hour'))    -- not yet
		    AS s(m, state, expires) ON g % 5 = s.m`)
	if err != nil {
		t.Fatal(err)
	}
	res, err := admin.NewSweeper(db, admin.SweeperConfig{BatchSize: 7, Pages: 4, Budget: 1}).RunOnce(context.Background())
	if err != nil || res.Live == nil {
		t.Fatalf("%+v, %v", res, err)
	}
	if res.Deleted != 1200 || res.Unknown != 600 || res.Live.InProgress != 600 || res.Live.Unknown != 600 || res.Live.Abandoned != 0 {
		t.Fatalf("%+v, live %+v; want 1200 deleted, 600 in progress, 600 unknown", res, *res.Live)
	}
	var left int
	if err := db.QueryRow(context.Background(), "SELECT count(*) FROM idem_records").Scan(&left); err != nil || left != 1800 {
		t.Fatalf("%d records left (%v), want 1800", left, err)
	}
}

// TestSweeperSparesRevived: a record made live again while a statement
// runs (a new outcome stored on its expired key, a new expiry) is not
// deleted: the statement takes a row only if it is still due when it
// locks it.
func TestSweeperSparesRevived(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	const n = 30000
	for round := range 3 {
		prefix := fmt.Sprintf("r%d", round)
		fillRecords(t, db, prefix, "COMPLETED", n, "now() - interval '2 hours'", "NULL")
		var revived []string
		var done atomic.Bool
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			for i := 1; !done.Load() && i <= n; i += 7 {
				key := fmt.Sprintf("%s-%d", prefix, i)
				tag, err := db.Exec(ctx, `UPDATE idem_records SET expires_at = now() + interval '1 hour', completed_at = now(), fence = fence + 1
					WHERE id = idem_record_id('', 'op', $1) AND expires_at < now()`, key)
				if err != nil {
					t.Error(err)
					return
				}
				if tag.RowsAffected() == 1 {
					revived = append(revived, key)
				}
			}
		}()
		time.Sleep(5 * time.Millisecond)
		// One statement over the whole table.
		res, err := admin.NewSweeper(db, admin.SweeperConfig{BatchSize: 2 * n, Pages: 1 << 20, Budget: 1}).RunOnce(ctx)
		done.Store(true)
		<-stopped
		if err != nil {
			t.Fatal(err)
		}
		var lost int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM unnest($1::text[]) k WHERE NOT EXISTS (SELECT 1 FROM idem_records WHERE id = idem_record_id('', 'op', k))",
			revived).Scan(&lost); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %d revived, %d deleted", round, len(revived), res.Deleted)
		if lost > 0 {
			t.Fatalf("round %d: %d of %d revived records deleted", round, lost, len(revived))
		}
	}
}
