package idem_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

func TestSweeper(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	batch := 0
	insert := func(state string, n int, expired bool) {
		batch++
		t.Helper()
		exp := "now() + interval '1 hour'"
		if expired {
			exp = "now() - interval '1 minute'"
		}
		_, err := db.Exec(ctx, `
			INSERT INTO idem_records (tenant, operation, idempotency_key, state, fingerprint, schema_version,
				response_status, response_body, completed_at, lease_expires_at, expires_at)
			SELECT 't', 'op', $1 || '-' || $3::int || '-' || g, $1, sha256(g::text::bytea), 'v1',
				CASE WHEN $1 IN ('COMPLETED', 'FAILED_REPLAYABLE') THEN 201 END,
				CASE WHEN $1 IN ('COMPLETED', 'FAILED_REPLAYABLE') THEN '\x00'::bytea END,
				CASE WHEN $1 IN ('COMPLETED', 'FAILED_REPLAYABLE') THEN now() END,
				CASE WHEN $1 = 'IN_PROGRESS' THEN now() + interval '1 minute' END,
				`+exp+`
			FROM generate_series(1, $2::int) g`, state, n, batch)
		if err != nil {
			t.Fatal(err)
		}
	}
	insert("COMPLETED", 25, true)
	insert("FAILED_REPLAYABLE", 3, true)
	insert("FAILED_RETRYABLE", 4, true)
	insert("IN_PROGRESS", 3, true) // a live claim past its ttl: never touched
	insert("UNKNOWN", 2, true)
	insert("COMPLETED", 5, false)
	count := func(where string) int {
		var n int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM idem_records WHERE "+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	s := idem.NewSweeper(db, idem.SweeperConfig{BatchSize: 10, Grace: time.Hour})
	res, err := s.RunOnce(ctx)
	if err != nil || res.Expired != 32 || res.Deleted != 0 {
		t.Fatalf("first pass: %+v, %v", res, err)
	}
	if n := count("state = 'EXPIRED' AND response_body IS NULL"); n != 32 {
		t.Fatalf("%d tombstones", n)
	}
	// Tombstones past the grace period go, in batches.
	if _, err := db.Exec(ctx, "UPDATE idem_records SET expires_at = now() - interval '2 hours' WHERE state <> 'COMPLETED'"); err != nil {
		t.Fatal(err)
	}
	res, err = s.RunOnce(ctx)
	if err != nil || res.Expired != 0 || res.Deleted != 32 {
		t.Fatalf("second pass: %+v, %v", res, err)
	}
	if count("state = 'IN_PROGRESS'") != 3 || count("state = 'UNKNOWN'") != 2 || count("state = 'COMPLETED'") != 5 || count("true") != 10 {
		t.Fatal("the sweeper touched live or unexpired records")
	}

	// Run loops until its context ends, and then returns nil.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- idem.NewSweeper(db, idem.SweeperConfig{Interval: 10 * time.Millisecond}).Run(rctx) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
