package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

// migrationFiles are idemgen's migrations, exported for goose by `idemgen
// migrations -format goose` (gen.go), and the shop's own.
//
//go:embed migrations
var migrationFiles embed.FS

// migrationSets are applied in order, each recorded in a table of its own.
var migrationSets = []struct{ dir, table string }{
	{"migrations/idemgen", "idem_goose_db_version"},
	{"migrations/orders", "orders_goose_db_version"},
}

// migrate applies the migrations that pool's database lacks, with goose.
// Replicas starting at once take turns: goose holds a PostgreSQL advisory
// lock while it migrates.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	for _, set := range migrationSets {
		fsys, err := fs.Sub(migrationFiles, set.dir)
		if err != nil {
			return err
		}
		store, err := database.NewStore(database.DialectPostgres, set.table)
		if err != nil {
			return err
		}
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return err
		}
		p, err := goose.NewProvider("", db, fsys, goose.WithStore(store), goose.WithSessionLocker(locker),
			goose.WithDisableGlobalRegistry(true))
		if err != nil {
			return fmt.Errorf("migrate %s: %w", set.dir, err)
		}
		if _, err := p.Up(ctx); err != nil {
			return fmt.Errorf("migrate %s: %w", set.dir, err)
		}
	}
	return nil
}
