package idem_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/internal/store"
)

// oldGetRecord is GetRecord as it was until the engine took over its
// arithmetic: expiry, the lease and whether the response is to be replayed
// computed by PostgreSQL against now().
const oldGetRecord = `SELECT (r.same_key IS TRUE)::boolean, r.same_request, r.expired,
    coalesce(r.lease_expires_at <= now(), false)::boolean,
    coalesce(ceil(extract(epoch FROM r.lease_expires_at - now()) * 1000), 0)::bigint,
    greatest(floor(extract(epoch FROM r.expires_at - now()) * 1000), 0)::bigint,
    coalesce(CASE WHEN r.replayable THEN r.response_status END, 0)::integer,
    coalesce(CASE WHEN r.replayable THEN r.response_headers END, '{}')::jsonb,
    coalesce(CASE WHEN r.replayable THEN r.response_body END, '')::bytea
FROM (
    SELECT k.*, k.same_key AND k.same_request AND k.state IN ('COMPLETED', 'FAILED_REPLAYABLE') AND NOT k.expired AS replayable
    FROM (
        SELECT s.*,
            (s.tenant = $1::text AND s.operation = $2::text AND s.idempotency_key = $3::text) AS same_key,
            (s.fingerprint = $4::bytea) AS same_request,
            (s.expires_at <= now()) AS expired
        FROM idem_records s
        WHERE s.id = $5
    ) k
) r`

// TestRecordReadMatchesDatabaseArithmetic reads one record, set to every
// combination of state, expiry, lease and request, through GetRecord and
// the engine's recordOf, and through the database's own arithmetic (the
// query GetRecord was), in one transaction so that both see the same
// now(): expiry, lease lapse and what is left of each, to the millisecond
// either side of a boundary, and the response kept only when it is to be
// replayed.
func TestRecordReadMatchesDatabaseArithmetic(t *testing.T) {
	e := newEnv(t, testPolicy(idem.ModeAtomic), idem.Config{})
	key := newKey()
	if r := e.post(key, payReq{Amount: 1}); r.Status != 201 {
		t.Fatalf("first execution: %d %s", r.Status, r.Body)
	}
	ctx := context.Background()
	var p store.GetRecordParams
	if err := e.db.QueryRow(ctx, `SELECT id, tenant, operation, idempotency_key, fingerprint FROM idem_records`).
		Scan(&p.ID, &p.Tenant, &p.Operation, &p.IdempotencyKey, &p.Fingerprint); err != nil {
		t.Fatal(err)
	}
	other := append([]byte(nil), p.Fingerprint...)
	other[0] ^= 1
	offsets := []string{"-1 day", "-1.5 ms", "-0.4 ms", "0", "0.4 ms", "1 ms", "1.5 ms", "1 day"}
	leases := append([]string{""}, offsets...) // "": no lease
	n := 0
	for _, state := range []string{"COMPLETED", "FAILED_REPLAYABLE", "IN_PROGRESS", "FAILED_RETRYABLE", "EXPIRED"} {
		for _, expires := range offsets {
			for _, lease := range leases {
				for _, req := range []struct {
					name        string
					tenant, key string
					fp          []byte
				}{{"own", p.Tenant, p.IdempotencyKey, p.Fingerprint}, {"other payload", p.Tenant, p.IdempotencyKey, other},
					{"other key", p.Tenant, p.IdempotencyKey + "x", p.Fingerprint}} {
					name := fmt.Sprintf("%s expires %s lease %q %s", state, expires, lease, req.name)
					q := p
					q.Tenant, q.IdempotencyKey, q.Fingerprint = req.tenant, req.key, req.fp
					got, want := readBoth(t, e, q, state, expires, lease)
					if got != want {
						t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
					}
					n++
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

// readBoth sets the record's state, expiry and lease relative to now() and
// reads it both ways in one transaction.
func readBoth(t *testing.T, e *env, p store.GetRecordParams, state, expires, lease string) (got, want idem.RecordRead) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, e.db, func(tx pgx.Tx) error {
		var leaseAt pgtype.Text
		if lease != "" {
			leaseAt = pgtype.Text{String: lease, Valid: true}
		}
		if _, err := tx.Exec(ctx, `UPDATE idem_records SET state = $1, expires_at = now() + $2::interval,
			lease_expires_at = now() + $3::interval WHERE id = $4`, state, expires, leaseAt, p.ID); err != nil {
			return err
		}
		row, err := store.New(tx).GetRecord(ctx, p)
		if err != nil {
			return err
		}
		got = idem.ReadRecordRow(&row)
		var leaseMs, leftMs int64
		var headers, body []byte
		if err := tx.QueryRow(ctx, oldGetRecord, p.Tenant, p.Operation, p.IdempotencyKey, p.Fingerprint, p.ID).Scan(
			&want.SameKey, &want.SameRequest, &want.Expired, &want.LeaseLapsed, &leaseMs, &leftMs, &want.Status, &headers, &body); err != nil {
			return err
		}
		want.LeaseLeft, want.Left = time.Duration(leaseMs)*time.Millisecond, time.Duration(leftMs)*time.Millisecond
		want.Headers, want.Body = string(headers), string(body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, want
}
