package schema

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	if table == "" {
		table = MigrationsTable
	}
	if !isIdentifier(table) {
		return fmt.Errorf("idem: migrate: %q is not a plain SQL identifier", table)
	}
	type migration struct{ version, file string }
	// Every file must be a migration: a file MigrateFS would skip (goose's
	// 0001_init.sql, a README) is refused rather than left unapplied.
	if _, err := migrations.List(fsys); err != nil {
		return fmt.Errorf("idem: migrate: %w", err)
	}
	var todo []migration
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".up.sql") {
			todo = append(todo, migration{version: strings.TrimSuffix(path.Base(p), ".up.sql"), file: p})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("idem: migrate: %w", err)
	}
	sort.Slice(todo, func(i, j int) bool { return todo[i].version < todo[j].version })

	create := queries.CreateMigrationsTable(table)
	if _, err := db.Exec(ctx, create); err != nil {
		// Two first-ever callers can race on CREATE TABLE IF NOT EXISTS;
		// the loser sees a duplicate catalog entry (unique_violation on
		// pg_type or pg_class, duplicate_table, or duplicate_object: "type
		// ... already exists", the table's row type). The table exists now.
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "23505" && pe.Code != "42P07" && pe.Code != "42710") {
			return fmt.Errorf("idem: migrate: create %s: %w", table, err)
		}
	}
	tx, err := db.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("idem: migrate: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN EXCLUSIVE MODE"); err != nil {
		return fmt.Errorf("idem: migrate: lock %s: %w", table, err)
	}
	rows, err := tx.Query(ctx, "SELECT version FROM "+table)
	if err != nil {
		return fmt.Errorf("idem: migrate: read %s: %w", table, err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("idem: migrate: read %s: %w", table, err)
	}
	done := map[string]bool{}
	for _, v := range applied {
		done[v] = true
	}
	for _, m := range todo {
		if done[m.version] {
			continue
		}
		sql, err := fs.ReadFile(fsys, m.file)
		if err != nil {
			return fmt.Errorf("idem: migrate: %w", err)
		}
		// No arguments: the simple protocol runs a file of several statements.
		if _, err := tx.Exec(ctx, string(sql)); err != nil {
			return fmt.Errorf("idem: migrate: %s: %w", m.file, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+table+" (version) VALUES ($1)", m.version); err != nil {
			return fmt.Errorf("idem: migrate: record %s: %w", m.version, err)
		}
		done[m.version] = true
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("idem: migrate: commit: %w", err)
	}
	return nil
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
