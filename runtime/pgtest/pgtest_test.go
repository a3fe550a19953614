package pgtest_test

import (
	"context"
	"testing"
	"testing/fstest"

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
