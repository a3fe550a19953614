// Package pgtest gives tests a real PostgreSQL: a fresh schema per test on
// the server named by DATABASE_URL (make test starts one with scripts/pg.sh),
// with idemgen's migrations applied (and recorded, as schema.Migrate does) and
// the schema dropped afterwards.
//
// Without DATABASE_URL a test is skipped on a developer's machine and fails
// under CI=true: a database test never passes by not running.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	neturl "net/url"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem/schema"
)

// URL returns DATABASE_URL, skipping the test when it is unset, or failing
// it when CI=true.
func URL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("pgtest: DATABASE_URL is not set and CI=true: database tests must run in CI (use make test)")
		}
		tb.Skip("pgtest: DATABASE_URL is not set; run make test to start a throwaway PostgreSQL")
	}
	return url
}

// Options tune New.
type Options struct {
	// Migrations are applied after idemgen's own (files *.up.sql, in name order).
	Migrations fs.FS
	// MigrationsTable, when set, records Migrations there through
	// schema.MigrateFS, so a service that migrates itself at start-up finds
	// them applied. Empty applies them without recording.
	MigrationsTable string
	// MaxConns sizes the pool; zero means 16.
	MaxConns int32
	// Server is the connection string of the server to use instead of
	// DATABASE_URL (one from StartServer, say).
	Server string
	// Bare leaves the schema empty: neither idemgen's migrations nor
	// Migrations are applied (for tests of migrating itself).
	Bare bool
	// Database puts the schema in a database of its own, created for the
	// test and dropped after it (the role needs CREATEDB). For a test
	// whose code reads the catalog of the whole database (atlas's
	// inspection): PostgreSQL's catalog is per database, and other tests'
	// DDL in the shared one can make such a read fail ("could not open
	// relation with OID").
	Database bool
}

// DB is a test database: a pool whose search_path is a schema of its own.
type DB struct {
	*pgxpool.Pool
	// Schema is the schema the pool works in.
	Schema string
	// URL is a connection string for the same schema, for processes the test
	// starts (it sets search_path through the options parameter).
	URL string
}

// New returns a pool on a fresh schema with the runtime's migrations applied
// (none with Options.Bare).
// The pool is closed and the schema dropped when the test ends.
func New(tb testing.TB, opts Options) *DB {
	tb.Helper()
	base := URL(tb)
	if opts.Server != "" {
		base = opts.Server
	}
	ctx := context.Background()

	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	schemaName := "t_" + hex.EncodeToString(b[:])
	if opts.Database {
		base = ownDatabase(tb, base, schemaName)
	}

	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("pgtest: connect %s: %v", redact(base), err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schemaName); err != nil {
		admin.Close(ctx)
		tb.Fatalf("pgtest: create schema: %v", err)
	}
	admin.Close(ctx)

	cfg, err := pgxpool.ParseConfig(base)
	if err != nil {
		tb.Fatalf("pgtest: parse DATABASE_URL: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schemaName
	cfg.MaxConns = 16
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatalf("pgtest: pool: %v", err)
	}
	tb.Cleanup(func() {
		pool.Close()
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			tb.Logf("pgtest: drop schema %s: %v", schemaName, err)
			return
		}
		defer conn.Close(context.Background())
		checkRecords(tb, conn, schemaName)
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schemaName+" CASCADE"); err != nil {
			tb.Logf("pgtest: drop schema %s: %v", schemaName, err)
		}
	})

	db := &DB{Pool: pool, Schema: schemaName, URL: withSearchPath(base, schemaName)}
	if opts.Bare {
		return db
	}
	// The runtime's migrations are recorded as schema.Migrate records them, so
	// code under test that calls schema.Migrate finds nothing left to do.
	if err := schema.Migrate(ctx, pool); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	if opts.Migrations != nil {
		var err error
		if opts.MigrationsTable != "" {
			err = schema.MigrateFS(ctx, pool, opts.Migrations, opts.MigrationsTable)
		} else {
			err = Apply(ctx, pool, opts.Migrations)
		}
		if err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
	}
	return db
}

// brokenRecords lists up to five records of a schema's idem_records that
// break the table's invariants: the CHECK constraints it had until
// migration 0007, which dropped them because PostgreSQL prepares a table's
// checks anew for every statement that writes it (docs/design.md, "The
// records table"). The engine keeps them; New's cleanup holds every test
// to that.
const brokenRecords = `SELECT tenant, operation, idempotency_key, state,
    coalesce(octet_length(fingerprint), -1), response_status IS NOT NULL,
    response_body IS NOT NULL, completed_at IS NOT NULL
FROM %s.idem_records
WHERE state NOT IN ('IN_PROGRESS', 'COMPLETED', 'FAILED_RETRYABLE', 'FAILED_REPLAYABLE', 'EXPIRED', 'UNKNOWN')
    OR octet_length(fingerprint) <> 32
    OR char_length(idempotency_key) NOT BETWEEN 1 AND 255
    OR (state IN ('COMPLETED', 'FAILED_REPLAYABLE')
        AND (response_status IS NULL OR response_body IS NULL OR completed_at IS NULL))
LIMIT 5`

// checkRecords fails the test whose schema holds a record that breaks the
// records' invariants (brokenRecords), naming each.
func checkRecords(tb testing.TB, conn *pgx.Conn, schemaName string) {
	ctx := context.Background()
	var has bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", schemaName+".idem_records").Scan(&has); err != nil || !has {
		return
	}
	rows, err := conn.Query(ctx, fmt.Sprintf(brokenRecords, schemaName))
	if err != nil {
		tb.Logf("pgtest: check the records of %s: %v", schemaName, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, op, key, state string
		var fpLen int
		var status, body, completed bool
		if err := rows.Scan(&tenant, &op, &key, &state, &fpLen, &status, &body, &completed); err != nil {
			tb.Logf("pgtest: check the records of %s: %v", schemaName, err)
			return
		}
		tb.Errorf("pgtest: a record breaks the records' invariants: tenant %q, operation %q, key %q: state %s, fingerprint of %d bytes, response status set %t, body set %t, completed_at set %t",
			tenant, op, key, state, fpLen, status, body, completed)
	}
	if err := rows.Err(); err != nil {
		tb.Logf("pgtest: check the records of %s: %v", schemaName, err)
	}
}

// Apply runs every *.up.sql file of fsys, in name order, on db, without
// recording them. Like schema.MigrateFS it refuses an fsys holding other
// files than *.up.sql and *.down.sql (schema.MigrationVersions).
func Apply(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, fsys fs.FS) error {
	if _, err := schema.MigrationVersions(fsys); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	var names []string
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".up.sql") {
			names = append(names, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		sql, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		if _, err := db.Exec(ctx, string(sql)); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	return nil
}

// ownDatabase creates the database name on the server of base, drops it
// when the test ends (after the pool's cleanup, registered later, has
// run), and returns base pointing at it.
func ownDatabase(tb testing.TB, base, name string) string {
	tb.Helper()
	u, err := neturl.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		tb.Fatalf("pgtest: Options.Database needs a postgres:// URL, not %s", redact(base))
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("pgtest: connect %s: %v", redact(base), err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), base)
		if err != nil {
			tb.Logf("pgtest: drop database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			tb.Logf("pgtest: drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

func withSearchPath(url, schema string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

func redact(url string) string {
	if i := strings.Index(url, "@"); i >= 0 {
		if j := strings.Index(url, "://"); j >= 0 && j < i {
			return url[:j+3] + "…" + url[i:]
		}
	}
	return url
}
