package schema

import (
	"context"
	"io/fs"

	"github.com/idemgen/idemgen/queries"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idem/internal/migrations"
)

// MigrationsTable is the table Migrate records applied migrations in (as
// do the files of `idemgen migrations`), and where idem.New looks for them.
const MigrationsTable = queries.MigrationsTable

// Versions returns the versions of idemgen's own migrations
// (queries.Migrations), in order: what Migrate applies and records in
// MigrationsTable, what idem.New expects to find there, and what `idemgen
// migrations` exports.
func Versions() []string { return migrations.Versions() }

// MigrationVersions lists the migrations of fsys as MigrateFS applies
// them: the *.up.sql files at any depth, by version (the file name without
// .up.sql), in order. Any other file but a *.down.sql, and an fsys without
// a single *.up.sql, is an error naming what is wrong: a file MigrateFS
// would skip is a mistake, not a choice.
func MigrationVersions(fsys fs.FS) ([]string, error) { return migrations.List(fsys) }

// Migrate applies idemgen's own migrations (queries.Migrations) that db has
// not applied yet. Safe to call from many processes at once.
func Migrate(ctx context.Context, db idem.DB) error {
	return MigrateFS(ctx, db, queries.Migrations, MigrationsTable)
}

// MigrateFS applies the *.up.sql files of fsys (any depth, ordered by file
// name) that are not yet recorded in table, each recorded by its name
// without ".up.sql". Any other file but a *.down.sql, and an fsys without
// a single *.up.sql, is an error: nothing is skipped silently. table ""
// means MigrationsTable; a service keeps its own migrations apart by
// passing its own table. All pending migrations apply in one transaction
// that holds table in EXCLUSIVE mode, so concurrent callers apply each
// migration once.
func MigrateFS(ctx context.Context, db idem.DB, fsys fs.FS, table string) error {
	return migrations.Apply(ctx, db, fsys, table)
}
