package idem_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/queries"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/admin"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/idemproblem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// v2Migrations are idemgen's migrations before the v3 record layout.
func v2Migrations(t *testing.T) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(queries.Migrations, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".up.sql") || strings.Split(d.Name(), "_")[0] >= "0005" {
			return err
		}
		data, err := fs.ReadFile(queries.Migrations, p)
		out[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// v2Fingerprint is the fingerprint the engine gives the test operation's
// request with body.
func v2Fingerprint(t *testing.T, body payReq) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	fp, err := idem.Fingerprint(idem.FingerprintInput{Method: "POST", Pattern: "/accounts/{account}/payments",
		PathParams: []idem.PathParam{{Name: "account", Value: "acc-1"}}, ContentType: "application/json",
		Body: b, Exclude: []string{"/metadata/sentAt"}})
	if err != nil {
		t.Fatal(err)
	}
	return fp[:]
}

// TestUpgradeFromV2: a database whose records were written by the v2
// layout (primary key on tenant, operation and key) is migrated to v3 and
// served by the v3 engine without a pause:
//
//   - the migration renames the v2 table rather than rewriting it (the same
//     relation file), so it takes no time whatever the table holds;
//   - a v2 engine still running afterwards cannot record a key in the new
//     table (its insert names no id), so it cannot run a key twice;
//   - every kind of v2 record keeps its meaning: a completed one replays
//     byte for byte (and refuses another payload), a FAILED_RETRYABLE one
//     runs again once, from two processes at once, an expired one runs
//     anew, a live lease claim is in flight, a lapsed one is taken over
//     with its recovery point;
//   - the sweeper moves the rest over and drops the v2 table; requests
//     before and after that are served alike.
func TestUpgradeFromV2(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptySchema(t)
	if err := schema.MigrateFS(ctx, pool, v2Migrations(t), schema.MigrationsTable); err != nil {
		t.Fatal(err)
	}
	if err := schema.MigrateFS(ctx, pool, businessSchema, "business_migrations"); err != nil {
		t.Fatal(err)
	}
	db := &pgtest.DB{Pool: pool}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// Records as the v2 engine wrote them.
	v2 := func(key, state string, body payReq, extra string, args ...any) {
		t.Helper()
		cols, vals := "", ""
		if extra != "" {
			kv := strings.SplitN(extra, "=", 2)
			cols, vals = ", "+kv[0], ", "+kv[1]
		}
		exec(`INSERT INTO idem_records (tenant, operation, idempotency_key, state, fingerprint, schema_version,
				response_status, response_headers, response_body, completed_at, expires_at, attempts, fence`+cols+`)
			VALUES ('', 'createPayment', $1, $2, $3, 'v1',
				CASE WHEN $2 = 'COMPLETED' THEN 201 END,
				CASE WHEN $2 = 'COMPLETED' THEN '{"Content-Type": ["application/json"], "Location": ["/payments/v2"]}'::jsonb END,
				CASE WHEN $2 = 'COMPLETED' THEN convert_to('{"id":"from v2"}', 'UTF8') END,
				CASE WHEN $2 = 'COMPLETED' THEN now() END,
				now() + interval '1 day', 1, 1`+vals+`)`, append([]any{key, state, v2Fingerprint(t, body)}, args...)...)
	}
	done, retry, expired, held, lapsed, freed := newKey(), newKey(), newKey(), newKey(), newKey(), newKey()
	v2(done, "COMPLETED", payReq{Amount: 5}, "")
	v2(retry, "FAILED_RETRYABLE", payReq{Amount: 6}, "")
	v2(freed, "FAILED_RETRYABLE", payReq{Amount: 10, Behave: "status:400"}, "")
	v2(expired, "COMPLETED", payReq{Amount: 7}, "")
	exec(`UPDATE idem_records SET expires_at = now() - interval '1 minute' WHERE idempotency_key = $1`, expired)
	v2(held, "IN_PROGRESS", payReq{Amount: 8}, "lease_expires_at=now() + interval '1 hour'")
	v2(lapsed, "IN_PROGRESS", payReq{Amount: 9}, "lease_expires_at=now() - interval '1 second'")
	exec(`UPDATE idem_records SET recovery_point = 'charged', recovery_data = '\x01'::bytea WHERE idempotency_key = $1`, lapsed)
	// Others' records, for the sweeper to move.
	exec(`INSERT INTO idem_records (tenant, operation, idempotency_key, state, fingerprint, schema_version,
			response_status, response_body, completed_at, expires_at)
		SELECT 'other', 'createPayment', 'filler-' || g, 'COMPLETED', sha256(int8send(g)), 'v1', 201, '', now(), now() + interval '1 day'
		FROM generate_series(1, 3000) g`)
	var file string
	if err := pool.QueryRow(ctx, "SELECT pg_relation_filepath('idem_records')").Scan(&file); err != nil {
		t.Fatal(err)
	}

	if err := schema.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var after string
	if err := pool.QueryRow(ctx, "SELECT pg_relation_filepath('idem_records_v2')").Scan(&after); err != nil || after != file {
		t.Fatalf("idem_records_v2 is %q (%v), want the v2 table's own file %q: renamed, not rewritten", after, err, file)
	}
	// A v2 engine's insert (it knows no id) fails: it cannot record a key
	// a second time behind the v3 engine's back.
	_, err := pool.Exec(ctx, `INSERT INTO idem_records (tenant, operation, idempotency_key, state, fingerprint, schema_version,
			response_status, response_headers, response_body, created_at, completed_at, expires_at)
		VALUES ('', 'createPayment', $1, 'COMPLETED', sha256('x'), 'v1', 201, '{}', '', now(), now(), now() + interval '1 day')`, done)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23502" {
		t.Fatalf("a v2 engine's insert after the upgrade: %v, want a not-null violation", err)
	}

	// Two processes of the v3 engine, and a lease-mode one for the claims.
	a := newEnvWith(t, db, pool, testPolicy(idem.ModeAtomic), idem.Config{})
	b := newEnvWith(t, db, pool, testPolicy(idem.ModeAtomic), idem.Config{})
	lp := testPolicy(idem.ModeLease)
	var seen idem.Recovery
	hook := func(_ context.Context, rec idem.Recovery) (idem.Decision, error) {
		seen = rec
		return idem.NotExecuted(), nil
	}
	l := newEnvWith(t, db, pool, lp, idem.Config{Recover: map[string]idem.RecoverFunc{"createPayment": hook}})

	r := a.post(done, payReq{Amount: 5})
	if r.Status != 201 || string(r.Body) != `{"id":"from v2"}` || r.Header.Get("Location") != "/payments/v2" ||
		r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("v2 completed record: %d %s %v, want its replay", r.Status, r.Body, r.Header)
	}
	b.post(done, payReq{Amount: 50}).wantProblem(t, 409, idemproblem.CodeConflict, idemproblem.ReasonConflict)

	var wg sync.WaitGroup
	rs := make([]result, 2)
	for i, e := range []*env{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); rs[i] = e.post(retry, payReq{Amount: 6}) }()
	}
	wg.Wait()
	if rs[0].Status != 201 || rs[1].Status != 201 || string(rs[0].Body) != string(rs[1].Body) {
		t.Fatalf("v2 retryable record from two processes: %d %s, %d %s", rs[0].Status, rs[0].Body, rs[1].Status, rs[1].Body)
	}
	if n := a.count("SELECT count(*) FROM payments WHERE idem_key = $1", retry); n != 1 {
		t.Fatalf("v2 retryable record: %d payments, want 1", n)
	}
	// A v2 record moved over and then released (its re-run answered 400,
	// which is not kept) is gone: the key takes another payload, and the
	// v2 copy does not come back to bind it again.
	if r := a.post(freed, payReq{Amount: 10, Behave: "status:400"}); r.Status != 400 {
		t.Fatalf("v2 retryable record re-run: %d %s, want its 400", r.Status, r.Body)
	}
	if r := b.post(freed, payReq{Amount: 11}); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a corrected request after a released v2 record: %d %s, want a new execution", r.Status, r.Body)
	}
	if r := a.post(expired, payReq{Amount: 70}); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("v2 expired record: %d %s, want a new execution", r.Status, r.Body)
	}
	l.post(held, payReq{Amount: 8}).wantProblem(t, 409, idemproblem.CodeConflict, idemproblem.ReasonInProgress)
	if r := l.post(lapsed, payReq{Amount: 9}); r.Status != 201 || !seen.HasPoint || seen.Point != "charged" || seen.Attempts != 2 {
		t.Fatalf("v2 lapsed claim: %d %s, the hook saw %+v", r.Status, r.Body, seen)
	}

	// The sweeper moves the rest over and drops the v2 table.
	res, err := admin.NewSweeper(pool, admin.SweeperConfig{Budget: 1}).RunOnce(ctx)
	if err != nil || res.Moved < 3000 {
		t.Fatalf("sweep: %+v, %v; want the 3000 other records moved", res, err)
	}
	var present bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('idem_records_v2') IS NOT NULL").Scan(&present); err != nil || present {
		t.Fatalf("idem_records_v2 still there (%v)", err)
	}
	if n := a.count("SELECT count(*) FROM idem_records WHERE tenant = 'other'"); n != 3000 {
		t.Fatalf("%d of the 3000 other records in idem_records", n)
	}
	// Served alike once it is gone, by engines that had seen it.
	if r := b.post(done, payReq{Amount: 5}); string(r.Body) != `{"id":"from v2"}` {
		t.Fatalf("replay after the v2 table went: %d %s", r.Status, r.Body)
	}
	k := newKey()
	for range 2 {
		if r := a.post(k, payReq{Amount: 1}); r.Status != 201 {
			t.Fatalf("new key after the v2 table went: %d %s", r.Status, r.Body)
		}
	}
	if a.runs.Load()+b.runs.Load() > 6 || l.runs.Load() != 1 {
		t.Fatalf("handler runs: %d + %d atomic (want at most 6: the retryable key once, or twice across processes with one commit; the freed key twice; the expired key; the new key), %d lease",
			a.runs.Load(), b.runs.Load(), l.runs.Load())
	}
}
