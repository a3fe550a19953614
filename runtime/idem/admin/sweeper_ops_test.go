package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestSweeperCountsLiveRecords: a pass reports live claims (running and
// abandoned) and UNKNOWN records with the oldest one's age, to OnPass, as
// often as LiveInterval allows.
func TestSweeperCountsLiveRecords(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	_, err := db.Exec(ctx, `
		INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
			response_status, response_body, completed_at, lease_expires_at, created_at, expires_at)
		SELECT idem_record_id('', 'op', 'k' || g), '', 'op', 'k' || g, s.state, sha256(g::text::bytea), 'v1',
			CASE WHEN s.state = 'COMPLETED' THEN 201 END, CASE WHEN s.state = 'COMPLETED' THEN '\x00'::bytea END,
			CASE WHEN s.state = 'COMPLETED' THEN now() END,
			now() + s.lease, now() - s.age, now() + interval '1 day'
		FROM generate_series(1, 12) g
		JOIN (VALUES (1, 2, 'IN_PROGRESS', interval '1 minute', interval '1 second'),    -- running
		             (3, 5, 'IN_PROGRESS', interval '-1 minute', interval '10 minutes'), -- abandoned
		             (6, 6, 'UNKNOWN', NULL, interval '2 hours'),
		             (7, 12, 'COMPLETED', NULL, interval '3 hours')) AS s(lo, hi, state, lease, age)
		ON g BETWEEN s.lo AND s.hi`)
	if err != nil {
		t.Fatal(err)
	}
	var passes []admin.SweepResult
	runCtx, cancel := context.WithCancel(ctx)
	sw := admin.NewSweeper(db, admin.SweeperConfig{Interval: time.Hour, OnPass: func(_ context.Context, r admin.SweepResult) {
		passes = append(passes, r)
		cancel()
	}})
	if err := sw.Run(runCtx); err != nil {
		t.Fatal(err)
	}
	if len(passes) != 1 || passes[0].Live == nil {
		t.Fatalf("passes %+v, want one with live records", passes)
	}
	l := *passes[0].Live
	if l.InProgress != 5 || l.Abandoned != 3 || l.Unknown != 1 || l.Oldest < 2*time.Hour || l.Oldest > 3*time.Hour {
		t.Errorf("live %+v, want 5 in progress (3 abandoned), 1 unknown, the oldest 2 h old", l)
	}
	// LiveInterval spaces the counts out; negative turns them off.
	if r, err := sw.RunOnce(ctx); err != nil || r.Live == nil {
		t.Errorf("LiveInterval 0: the next pass counts again (%+v, %v)", r, err)
	}
	spaced := admin.NewSweeper(db, admin.SweeperConfig{LiveInterval: time.Hour})
	first, _ := spaced.RunOnce(ctx)
	second, _ := spaced.RunOnce(ctx)
	if first.Live == nil || second.Live != nil {
		t.Errorf("LiveInterval 1h: first %+v, second %+v; want a count, then none", first.Live, second.Live)
	}
	if r, _ := admin.NewSweeper(db, admin.SweeperConfig{LiveInterval: -1}).RunOnce(ctx); r.Live != nil {
		t.Errorf("LiveInterval < 0 counted: %+v", r.Live)
	}
}
