// Package migrations lists migrations: idemgen's own (queries.Migrations),
// which the engine checks at start-up (idem.New) and package schema
// applies, and a service's, as schema.MigrateFS applies them. It is the
// one place that decides what counts as a migration file.
package migrations

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/idemgen/idemgen/queries"
)

// Table is the table idemgen's own migrations are recorded in.
const Table = queries.MigrationsTable

// Versions returns the versions of idemgen's own migrations
// (queries.Migrations), in order.
func Versions() []string {
	vs, err := List(queries.Migrations)
	if err != nil {
		panic(err) // the embedded migrations are checked by package schema's tests
	}
	return vs
}

// List lists the migrations of fsys as schema.MigrateFS applies them: the
// *.up.sql files at any depth, by version (the file name without .up.sql),
// in order. Any other file but a *.down.sql, and an fsys without a single
// *.up.sql, is an error naming what is wrong: a file MigrateFS would skip
// is a mistake, not a choice.
func List(fsys fs.FS) ([]string, error) {
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
