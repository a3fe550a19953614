package pgtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// A service that migrates itself at start-up must find a pgtest schema
// already migrated, its own migrations included, and apply nothing twice.
func TestMigrationsAreRecorded(t *testing.T) {
	svc := fstest.MapFS{"0001_widgets.up.sql": {Data: []byte("CREATE TABLE widgets (id int PRIMARY KEY)")}}
	db := pgtest.New(t, pgtest.Options{Migrations: svc, MigrationsTable: "widgets_schema_migrations"})
	ctx := context.Background()
	if err := schema.Migrate(ctx, db); err != nil {
		t.Fatalf("schema.Migrate on a pgtest schema: %v", err)
	}
	if err := schema.MigrateFS(ctx, db, svc, "widgets_schema_migrations"); err != nil {
		t.Fatalf("service migrations on a pgtest schema: %v", err)
	}
	var runtime, service int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM "+schema.MigrationsTable).Scan(&runtime); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, "SELECT count(*) FROM widgets_schema_migrations").Scan(&service); err != nil {
		t.Fatal(err)
	}
	if runtime < 2 || service != 1 {
		t.Fatalf("recorded migrations: runtime %d (want ≥ 2), service %d (want 1)", runtime, service)
	}
}

// A bare schema has nothing in it, and is the pool's search path.
func TestBare(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{Bare: true, Migrations: fstest.MapFS{"0001_w.up.sql": {Data: []byte("CREATE TABLE w (id int)")}}})
	var n int
	err := db.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = current_schema() AND s.nspname = $1", db.Schema).Scan(&n)
	if err != nil || n != 0 {
		t.Fatalf("bare schema %s holds %d relations (%v)", db.Schema, n, err)
	}
}

// recorder is a testing.TB whose errors and cleanups the test inspects.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) cleanUp() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// A test whose records break the records' invariants (the CHECK
// constraints migration 0007 dropped) fails when it ends, naming the
// record; one whose records keep them does not.
func TestRecordInvariants(t *testing.T) {
	const insert = `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version,
		response_status, response_body, completed_at, expires_at)
		VALUES (gen_random_uuid(), '', 'op', $1, $2, sha256('x'::bytea), 'v1', $3, $4, $5, now())`
	ctx := context.Background()
	for _, tc := range []struct {
		name, key, state string
		status           *int32
		body             []byte
		completed        bool
		want             string // "" when the record keeps them
	}{
		{name: "completed", key: "k", state: "COMPLETED", status: ptr(int32(201)), body: []byte("{}"), completed: true},
		{name: "in progress", key: "k", state: "IN_PROGRESS"},
		{name: "unknown state", key: "k", state: "DONE", want: "state DONE"},
		{name: "completed without body", key: "k", state: "COMPLETED", status: ptr(int32(201)), completed: true, want: "body set false"},
		{name: "replayable without status", key: "k", state: "FAILED_REPLAYABLE", body: []byte("{}"), completed: true, want: "response status set false"},
		{name: "empty key", key: "", state: "IN_PROGRESS", want: `key ""`},
		{name: "key of 256", key: strings.Repeat("k", 256), state: "IN_PROGRESS", want: "state IN_PROGRESS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			db := pgtest.New(rec, pgtest.Options{})
			var completed *time.Time
			if tc.completed {
				now := time.Now()
				completed = &now
			}
			if _, err := db.Exec(ctx, insert, tc.key, tc.state, tc.status, tc.body, completed); err != nil {
				t.Fatal(err)
			}
			rec.cleanUp()
			got := strings.Join(rec.errs, "\n")
			if tc.want == "" && got != "" {
				t.Fatalf("a record that keeps the invariants failed the test: %s", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("errors %q, want one naming %q", got, tc.want)
			}
		})
	}
	// A fingerprint that is not a SHA-256.
	rec := &recorder{TB: t}
	db := pgtest.New(rec, pgtest.Options{})
	if _, err := db.Exec(ctx, `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version, expires_at)
		VALUES (gen_random_uuid(), '', 'op', 'k', 'IN_PROGRESS', '\x01', 'v1', now())`); err != nil {
		t.Fatal(err)
	}
	rec.cleanUp()
	if got := strings.Join(rec.errs, "\n"); !strings.Contains(got, "fingerprint of 1 bytes") {
		t.Fatalf("errors %q, want one naming the fingerprint of 1 byte", got)
	}
}

func ptr[T any](v T) *T { return &v }
