package migrations

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ariga.io/atlas/sql/migrate"
	"ariga.io/atlas/sql/postgres"
	gomigrate "github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/idemgen/idemgen/queries"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/schema"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// dbSchema is an empty schema of its own: a pool and a database/sql handle
// whose search_path is that schema, dropped after the test.
type dbSchema struct {
	pool *pgxpool.Pool
	db   *sql.DB
	name string
}

func newSchema(t *testing.T, opts pgtest.Options) dbSchema {
	t.Helper()
	opts.Bare = true
	base := pgtest.New(t, opts) // a schema per test, empty
	cc, err := pgx.ParseConfig(base.URL)
	if err != nil {
		t.Fatal(err)
	}
	cc.RuntimeParams["search_path"] = base.Schema
	db := stdlib.OpenDB(*cc)
	db.SetMaxOpenConns(1)            // golang-migrate's lock and the session it migrates in
	t.Cleanup(func() { db.Close() }) // before pgtest drops the schema
	return dbSchema{base.Pool, db, base.Schema}
}

// export writes the files of format into a temp directory, as
// `idemgen migrations -format format -dir DIR` does.
func export(t *testing.T, format string) string {
	t.Helper()
	files, err := queries.Export(format, "(test)")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// complete checks what the runtime needs once the tool applied the files:
// idem.New finds every migration recorded, schema.Migrate has nothing to do,
// and the tables are there.
func (s dbSchema) complete(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := idem.New(s.pool, idem.Config{}); err != nil {
		t.Fatalf("idem.New after the tool's up: %v", err)
	}
	if err := schema.Migrate(ctx, s.pool); err != nil {
		t.Fatalf("schema.Migrate after the tool's up: %v", err)
	}
	var recorded int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM idem_schema_migrations").Scan(&recorded); err != nil || recorded != len(schema.Versions()) {
		t.Fatalf("idem_schema_migrations: %d rows (%v), want %d: Migrate applied something again", recorded, err, len(schema.Versions()))
	}
	for _, table := range []string{"idem_records", "idem_outbox", "idem_inbox", "idem_resolutions"} {
		var ok bool
		if err := s.pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok); err != nil || !ok {
			t.Errorf("table %s missing after the tool's up (%v)", table, err)
		}
	}
}

// empty checks that the tool's down left none of idemgen's tables but the
// (empty) record of migrations and the tool's own version table.
func (s dbSchema) empty(t *testing.T, toolTable string) {
	t.Helper()
	rows, err := s.pool.Query(context.Background(),
		"SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'idem\\_%' AND tablename NOT IN ('idem_schema_migrations', $2)", s.name, toolTable)
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(left) > 0 {
		t.Errorf("after the tool's down: %v left (%v)", left, err)
	}
	var recorded int
	if err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM idem_schema_migrations").Scan(&recorded); err != nil || recorded != 0 {
		t.Errorf("after the tool's down: %d migrations still recorded (%v)", recorded, err)
	}
}

func TestGoose(t *testing.T) {
	t.Parallel()
	s := newSchema(t, pgtest.Options{})
	ctx := context.Background()
	store, err := database.NewStore(database.DialectPostgres, "idem_goose_db_version")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider("", s.db, os.DirFS(export(t, "goose")), goose.WithStore(store), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Up(ctx)
	if err != nil || len(res) != len(schema.Versions()) {
		t.Fatalf("goose up: %d applied, %v", len(res), err)
	}
	s.complete(t)
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("goose down: %v", err)
	}
	s.empty(t, "idem_goose_db_version")
}

func TestGolangMigrate(t *testing.T) {
	t.Parallel()
	s := newSchema(t, pgtest.Options{})
	src, err := iofs.New(os.DirFS(export(t, "migrate")), ".")
	if err != nil {
		t.Fatal(err)
	}
	drv, err := migratepgx.WithInstance(s.db, &migratepgx.Config{MigrationsTable: "idem_migrate_version"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := gomigrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Up(); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	s.complete(t)
	if err := m.Down(); err != nil {
		t.Fatalf("migrate down: %v", err)
	}
	s.empty(t, "idem_migrate_version")
}

// TestAtlas runs alone (not t.Parallel) and in a database of its own:
// atlas's inspection reads the database's catalog, and failed while other
// tests changed theirs — naming a table of this schema that did not exist
// yet while goose and golang-migrate created theirs in sibling schemas, and
// "could not open relation with OID" while other packages' tests dropped
// their schemas in the same database.
func TestAtlas(t *testing.T) {
	s := newSchema(t, pgtest.Options{Database: true})
	dir, err := migrate.NewLocalDir(export(t, "atlas"))
	if err != nil {
		t.Fatal(err)
	}
	// atlas.sum, written by idemgen, is what atlas computes itself.
	if err := migrate.Validate(dir); err != nil {
		t.Fatalf("atlas.sum: %v", err)
	}
	drv, err := postgres.Open(s.db)
	if err != nil {
		t.Fatal(err)
	}
	// The database holds other tables (here other tests' schemas; in a
	// service, its own), so atlas must be told to start on it: --allow-dirty.
	ex, err := migrate.NewExecutor(drv, dir, migrate.NopRevisionReadWriter{}, migrate.WithAllowDirty(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.ExecuteN(context.Background(), 0); err != nil {
		t.Fatalf("atlas apply: %v", err)
	}
	s.complete(t)
}

// TestAtlasSumRefusesEdits: atlas refuses a directory whose files changed
// after the sum was written — the sum is atlas's, not a lookalike.
func TestAtlasSumRefusesEdits(t *testing.T) {
	path := export(t, "atlas")
	f := filepath.Join(path, schema.Versions()[0]+".sql")
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte(strings.Replace(string(data), "DO NOT EDIT", "edited", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := migrate.NewLocalDir(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate.Validate(dir); err == nil {
		t.Fatal("atlas accepts an edited file")
	}
}
