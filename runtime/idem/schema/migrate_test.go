package schema_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/queries"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// emptySchema returns a pool on a schema with nothing in it.
func emptySchema(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return pgtest.New(t, pgtest.Options{Bare: true}).Pool
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	pool := emptySchema(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = schema.Migrate(ctx, pool) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var versions []string
	rows, _ := pool.Query(ctx, "SELECT version FROM idem_schema_migrations ORDER BY version")
	for rows.Next() {
		var v string
		_ = rows.Scan(&v)
		versions = append(versions, v)
	}
	if rows.Err() != nil || len(versions) == 0 || versions[0] != "0001_idem_records" {
		t.Fatalf("versions %v, %v", versions, rows.Err())
	}
	if _, err := pool.Exec(ctx, "SELECT count(*) FROM idem_records"); err != nil {
		t.Fatal(err)
	}

	// A service's own migrations, tracked in its own table.
	svc := fstest.MapFS{
		"migrations/0001_orders.up.sql":   {Data: []byte("CREATE TABLE orders (id bigserial PRIMARY KEY);")},
		"migrations/0001_orders.down.sql": {Data: []byte("DROP TABLE orders;")},
		"migrations/0002_more.up.sql":     {Data: []byte("ALTER TABLE orders ADD COLUMN item text; CREATE INDEX ON orders (item);")},
	}
	for range 2 {
		if err := schema.MigrateFS(ctx, pool, svc, "orders_migrations"); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM orders_migrations").Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d service migrations recorded, %v", n, err)
	}
	if err := schema.MigrateFS(ctx, pool, svc, "bad-name"); err == nil || !strings.Contains(err.Error(), "identifier") {
		t.Fatalf("bad table name: %v", err)
	}
	broken := fstest.MapFS{"0003_broken.up.sql": {Data: []byte("CREATE TABLE (;")}}
	if err := schema.MigrateFS(ctx, pool, broken, "orders_migrations"); err == nil || !strings.Contains(err.Error(), "0003_broken.up.sql") {
		t.Fatalf("broken migration: %v", err)
	}
}

// TestMigrateFSRefusesStrayFiles: a file MigrateFS would not apply (a
// goose-style 0001_init.sql, a note) is an error naming it, and so is a
// set without a single *.up.sql; nothing is applied.
func TestMigrateFSRefusesStrayFiles(t *testing.T) {
	t.Parallel()
	pool := emptySchema(t)
	ctx := context.Background()
	for _, tc := range []struct {
		fsys fstest.MapFS
		want string
	}{
		{fstest.MapFS{
			"0001_a.up.sql": {Data: []byte("CREATE TABLE a (id int)")},
			"0002_b.sql":    {Data: []byte("CREATE TABLE b (id int)")},
		}, "0002_b.sql is not a migration: name the files NNNN_name.up.sql"},
		{fstest.MapFS{"sql/0001_a.up.sql": {Data: []byte("CREATE TABLE a (id int)")}, "sql/README.md": {}}, "sql/README.md is not a migration"},
		{fstest.MapFS{"0001_a.down.sql": {Data: []byte("DROP TABLE a")}}, "no *.up.sql files"},
		{fstest.MapFS{}, "no *.up.sql files"},
	} {
		err := schema.MigrateFS(ctx, pool, tc.fsys, "svc_migrations")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "idem: migrate: ") {
			t.Errorf("MigrateFS(%v): %v; want an error with %q", tc.fsys, err, tc.want)
		}
		if _, err := schema.MigrationVersions(tc.fsys); err == nil {
			t.Errorf("MigrationVersions(%v) = nil error", tc.fsys)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").Scan(&n); err != nil || n != 0 {
		t.Errorf("tables after refused migrations: %d (%v), want 0", n, err)
	}
	if err := pgtest.Apply(ctx, pool, fstest.MapFS{"0001_init.sql": {}}); err == nil || !strings.Contains(err.Error(), "0001_init.sql is not a migration") {
		t.Errorf("pgtest.Apply of a goose-style file: %v", err)
	}
	vs, err := schema.MigrationVersions(fstest.MapFS{"b/0002_b.up.sql": {}, "0001_a.up.sql": {}, "0001_a.down.sql": {}})
	if err != nil || strings.Join(vs, ",") != "0001_a,0002_b" {
		t.Errorf("MigrationVersions: %v, %v", vs, err)
	}
}

// Migration 0007 drops idem_records' CHECK constraints, and its down
// migration puts them back: a record of an unknown state is refused again.
func TestRecordsChecksMigration(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	checks := func() int {
		t.Helper()
		var n int
		err := db.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conrelid = 'idem_records'::regclass AND contype = 'c'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := checks(); n != 0 {
		t.Fatalf("after every migration idem_records has %d CHECK constraints, want 0", n)
	}
	file := func(name string) string {
		t.Helper()
		b, err := queries.Migrations.ReadFile("migrations/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if _, err := db.Exec(ctx, file("0007_idem_records_checks.down.sql")); err != nil {
		t.Fatalf("0007 down: %v", err)
	}
	if n := checks(); n != 4 {
		t.Fatalf("after 0007 down idem_records has %d CHECK constraints, want 4", n)
	}
	const bad = `INSERT INTO idem_records (id, tenant, operation, idempotency_key, state, fingerprint, schema_version, expires_at)
		VALUES (gen_random_uuid(), '', 'op', 'k', 'DONE', sha256(''), 'v1', now())`
	var pe *pgconn.PgError
	if _, err := db.Exec(ctx, bad); !errors.As(err, &pe) || pe.Code != "23514" {
		t.Fatalf("a record in state DONE under 0007 down: %v, want check_violation (23514)", err)
	}
	if _, err := db.Exec(ctx, file("0007_idem_records_checks.up.sql")); err != nil {
		t.Fatalf("0007 up again: %v", err)
	}
	if n := checks(); n != 0 {
		t.Fatalf("after 0007 up again idem_records has %d CHECK constraints, want 0", n)
	}
}
