package migrations

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
)

// DB is what Apply needs of a pool (idem.DB is one).
type DB interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Apply is schema.MigrateFS (and the deprecated idem.MigrateFS, which
// cannot import package schema): see there.
func Apply(ctx context.Context, db DB, fsys fs.FS, table string) error {
	if table == "" {
		table = Table
	}
	if !isIdentifier(table) {
		return fmt.Errorf("idem: migrate: %q is not a plain SQL identifier", table)
	}
	type migration struct{ version, file string }
	// Every file must be a migration: a file MigrateFS would skip (goose's
	// 0001_init.sql, a README) is refused rather than left unapplied.
	if _, err := List(fsys); err != nil {
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
