package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

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
		err := idem.MigrateFS(ctx, pool, tc.fsys, "svc_migrations")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "idem: migrate: ") {
			t.Errorf("MigrateFS(%v): %v; want an error with %q", tc.fsys, err, tc.want)
		}
		if _, err := idem.MigrationVersions(tc.fsys); err == nil {
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
	vs, err := idem.MigrationVersions(fstest.MapFS{"b/0002_b.up.sql": {}, "0001_a.up.sql": {}, "0001_a.down.sql": {}})
	if err != nil || strings.Join(vs, ",") != "0001_a,0002_b" {
		t.Errorf("MigrationVersions: %v, %v", vs, err)
	}
}

// TestNewChecksSchema: idem.New on a database without idemgen's tables,
// or with a migration missing, is an error saying to run idem.Migrate,
// instead of a server that starts and fails its first request.
func TestNewChecksSchema(t *testing.T) {
	t.Parallel()
	pool := emptySchema(t)
	ctx := context.Background()
	_, err := idem.New(pool, idem.Config{})
	if !errors.Is(err, idem.ErrSchemaMissing) || !strings.Contains(err.Error(), "no idem_records table") || !strings.Contains(err.Error(), "idem.Migrate(ctx, db)") {
		t.Fatalf("New on an empty schema: %v", err)
	}
	if err := idem.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := idem.New(pool, idem.Config{}); err != nil {
		t.Fatalf("New after Migrate: %v", err)
	}
	vs := idem.Versions()
	last := vs[len(vs)-1]
	if _, err := pool.Exec(ctx, "DELETE FROM idem_schema_migrations WHERE version = $1", last); err != nil {
		t.Fatal(err)
	}
	_, err = idem.New(pool, idem.Config{})
	if !errors.Is(err, idem.ErrSchemaMissing) || !strings.Contains(err.Error(), "migration(s) "+last+" not applied") {
		t.Fatalf("New with %s unrecorded: %v", last, err)
	}
}
