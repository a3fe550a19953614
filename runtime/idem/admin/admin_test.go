package admin

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/internal/store"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// adminDB is a schema holding records in the states Resolve treats
// differently, inserted as the engine leaves them.
func adminDB(t *testing.T) *pgtest.DB {
	t.Helper()
	db := pgtest.New(t, pgtest.Options{})
	ins := `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
		response_status, response_headers, response_body, attempts, fence, lease_expires_at, created_at, completed_at, expires_at)
		VALUES (idem_record_id($1, $2, $3), $1, $2, $3, $4, $5, 'v1', $6, $7, $8, 1, $9, now() + $10::interval, now() - interval '1 minute',
		CASE WHEN $6::int IS NOT NULL THEN now() END, now() + interval '1 day')`
	fp := make([]byte, 32)
	for _, r := range []struct {
		key, state string
		status     any
		fence      int
		lease      any
	}{
		{"done", "COMPLETED", 201, 1, nil},
		{"stuck", "IN_PROGRESS", nil, 2, "-1 minute"},
		{"live", "IN_PROGRESS", nil, 1, "1 hour"},
		{"unknown", "UNKNOWN", nil, 3, nil},
		{"retryable", "FAILED_RETRYABLE", nil, 1, nil},
	} {
		var hj, body []byte
		if r.status != nil {
			hj, body = []byte(`{}`), []byte(`{"id":1}`)
		}
		if _, err := db.Exec(context.Background(), ins, "", "pay", r.key, r.state, fp, r.status, hj, body, r.fence, r.lease); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestResolveIsFenced: a resolution computed from a state and fence that
// have since moved (a retry took the claim over) changes nothing.
func TestResolveIsFenced(t *testing.T) {
	a := New(adminDB(t), Config{})
	ctx := context.Background()
	p := store.ResolveParams{ToState: "FAILED_RETRYABLE", Operation: "pay", IdempotencyKey: "stuck",
		FromState: "IN_PROGRESS", Fence: 1} // the record is at fence 2
	if _, err := a.q.Resolve(ctx, p); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("stale fence: err = %v, want no row", err)
	}
	p.Fence, p.FromState = 2, "UNKNOWN" // stale state
	if _, err := a.q.Resolve(ctx, p); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("stale state: err = %v, want no row", err)
	}
	p.FromState = "IN_PROGRESS"
	if fence, err := a.q.Resolve(ctx, p); err != nil || fence != 3 {
		t.Fatalf("current state and fence: fence %d, %v; want 3", fence, err)
	}
}

// TestResolveTransitions: which records Resolve settles, into which state,
// and what it records; the refusals are ErrRefused and leave the record as
// it was.
func TestResolveTransitions(t *testing.T) {
	ctx := context.Background()
	a := New(adminDB(t), Config{})
	key := func(v string) idem.Key { return idem.Key{Operation: "pay", Value: v} }
	req := func(v string, as Settlement, status int) ResolveRequest {
		r := ResolveRequest{Key: key(v), As: as, By: "alice", Reason: "test"}
		if as == SettleCompleted {
			r.Status, r.Body = status, []byte(`{"ok":true}`)
		}
		return r
	}
	state := func(v string) (idem.State, int64) {
		t.Helper()
		r, err := a.FindOne(ctx, "", "pay", v)
		if err != nil {
			t.Fatal(err)
		}
		return r.State, r.Fence
	}

	for _, c := range []struct {
		name string
		r    ResolveRequest
	}{
		{"a COMPLETED record", req("done", SettleRetryable, 0)},
		{"a live lease without Force", req("live", SettleExpired, 0)},
	} {
		before, fence := state(c.r.Key.Value)
		if _, err := a.Resolve(ctx, c.r); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: err = %v, want ErrRefused", c.name, err)
		}
		if after, f := state(c.r.Key.Value); after != before || f != fence {
			t.Errorf("%s: a refused resolution moved the record %s/%d -> %s/%d", c.name, before, fence, after, f)
		}
	}
	if _, err := a.Resolve(ctx, req("nope", SettleRetryable, 0)); !errors.Is(err, ErrNotFound) {
		t.Errorf("no such record: err = %v, want ErrNotFound", err)
	}
	if _, err := a.Resolve(ctx, req("unknown", SettleCompleted, 500)); !errors.Is(err, ErrInvalid) {
		t.Errorf("a 500 as completed: err = %v, want ErrInvalid", err)
	}

	for _, c := range []struct {
		r      ResolveRequest
		to     idem.State
		forced bool
	}{
		{req("stuck", SettleCompleted, 201), idem.StateCompleted, false},
		{req("unknown", SettleCompleted, 404), idem.StateFailedReplayable, false},
		{req("retryable", SettleExpired, 0), idem.StateExpired, false},
		{func() ResolveRequest { r := req("live", SettleRetryable, 0); r.Force = true; return r }(), idem.StateFailedRetryable, true},
	} {
		from, fence := state(c.r.Key.Value)
		res, err := a.Resolve(ctx, c.r)
		if err != nil {
			t.Fatalf("%s: %v", c.r.Key.Value, err)
		}
		if res.From != from || res.To != c.to || res.Fence != fence+1 || res.Forced != c.forced {
			t.Errorf("%s: %s -> %s fence %d forced %v; want %s -> %s fence %d forced %v",
				c.r.Key.Value, res.From, res.To, res.Fence, res.Forced, from, c.to, fence+1, c.forced)
		}
		if now, f := state(c.r.Key.Value); now != c.to || f != fence+1 {
			t.Errorf("%s: the record is %s fence %d, want %s fence %d", c.r.Key.Value, now, f, c.to, fence+1)
		}
		audit, err := a.Resolutions(ctx, c.r.Key)
		if err != nil || len(audit) != 1 || audit[0].To != c.to || audit[0].By != "alice" || audit[0].Forced != c.forced {
			t.Errorf("%s: resolutions %+v, %v", c.r.Key.Value, audit, err)
		}
		if c.r.As == SettleCompleted {
			st, err := a.StoredResponse(ctx, c.r.Key)
			if err != nil {
				t.Fatal(err)
			}
			_, body, err := a.Open(ctx, c.r.Key, st)
			if err != nil || st.Status != c.r.Status || string(body) != `{"ok":true}` {
				t.Errorf("%s: stored %d %s, %v", c.r.Key.Value, st.Status, body, err)
			}
		}
	}
	// Settled records are not settled again.
	if _, err := a.Resolve(ctx, req("stuck", SettleRetryable, 0)); !errors.Is(err, ErrRefused) {
		t.Errorf("a resolved COMPLETED record: err = %v, want ErrRefused", err)
	}
}
