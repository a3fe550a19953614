package idem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/idemgen/idemgen/queries"
)

// ErrSchemaMissing is wrapped by the error New returns when the database
// lacks idemgen's tables or some of its migrations.
var ErrSchemaMissing = errors.New("idem: the database lacks idemgen's schema")

// schemaCheckTimeout bounds the queries New sends to check the schema.
const schemaCheckTimeout = 5 * time.Second

// Versions returns the versions of idemgen's own migrations
// (queries.Migrations), in order: what Migrate applies and records in
// MigrationsTable, and what `idemgen migrations` exports.
func Versions() []string {
	vs, err := MigrationVersions(queries.Migrations)
	if err != nil {
		panic(err) // the embedded migrations are checked by this package's tests
	}
	return vs
}

// MigrationVersions lists the migrations of fsys as MigrateFS applies
// them: the *.up.sql files at any depth, by version (the file name without
// .up.sql), in order. Any other file but a *.down.sql, and an fsys without
// a single *.up.sql, is an error naming what is wrong: a file MigrateFS
// would skip is a mistake, not a choice.
func MigrationVersions(fsys fs.FS) ([]string, error) {
	var vs []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := path.Base(p)
		switch {
		case strings.HasSuffix(name, ".up.sql"):
			vs = append(vs, strings.TrimSuffix(name, ".up.sql"))
		case strings.HasSuffix(name, ".down.sql"):
		default:
			return fmt.Errorf("%s is not a migration: name the files NNNN_name.up.sql (applied in name order) and NNNN_name.down.sql (never applied by MigrateFS)", p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, errors.New("no *.up.sql files (is the embed pattern or the directory right?)")
	}
	sort.Strings(vs)
	return vs, nil
}

// checkSchema tells a database that lacks idemgen's schema, or some of its
// migrations, from one that has them, so that a service which forgot
// Migrate fails at start-up with what to do, not on its first request. A
// database it cannot ask (down, no permission to read the catalog) is
// logged and let through: the requests will say more.
func (e *Engine) checkSchema() error {
	ctx, cancel := context.WithTimeout(context.Background(), schemaCheckTimeout)
	defer cancel()
	var hasTable, hasRecords bool
	err := e.db.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL, to_regclass('idem_records') IS NOT NULL", MigrationsTable).
		Scan(&hasTable, &hasRecords)
	if err != nil {
		e.logger().Warn("idem: could not check that idemgen's migrations are applied", "error", err)
		return nil
	}
	const how = "call idem.Migrate(ctx, db) at start-up before idem.New, or apply the files of `idemgen migrations` with your migration tool (docs/migrations.md)"
	if !hasTable && !hasRecords {
		return fmt.Errorf("%w: no idem_records table in the search_path: %s", ErrSchemaMissing, how)
	}
	if !hasTable {
		// Applied by hand or by an older export that did not record
		// itself: nothing to compare.
		return nil
	}
	rows, err := e.db.Query(ctx, "SELECT version FROM "+MigrationsTable)
	if err != nil {
		e.logger().Warn("idem: could not check that idemgen's migrations are applied", "error", err)
		return nil
	}
	applied := map[string]bool{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			e.logger().Warn("idem: could not check that idemgen's migrations are applied", "error", err)
			return nil
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		e.logger().Warn("idem: could not check that idemgen's migrations are applied", "error", err)
		return nil
	}
	var missing []string
	for _, v := range Versions() {
		if !applied[v] {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: migration(s) %s not applied (%s lists %d of %d): %s", ErrSchemaMissing,
			strings.Join(missing, ", "), MigrationsTable, len(Versions())-len(missing), len(Versions()), how)
	}
	return nil
}
