package idemtype_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idemtype"
	"github.com/idemgen/idemgen/runtime/pgtest"
)

// TestDatePostgres: a Date goes into a PostgreSQL date column and comes
// back through pgx in each of its query modes — the binary format
// (prepared statements) and the text format (the simple protocol) — and a
// *Date holds NULL. A NULL into a Date, an infinite date and a Date that
// does not exist are errors that say so.
func TestDatePostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	if _, err := db.Exec(ctx, `CREATE TABLE dates (id int PRIMARY KEY, d date)`); err != nil {
		t.Fatal(err)
	}
	days := []idemtype.Date{{Year: 2024, Month: time.February, Day: 29}, {Year: 1, Month: time.January, Day: 1}, {Year: 9999, Month: time.December, Day: 31}}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec,
		pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	id := 0
	for _, mode := range modes {
		for _, day := range days {
			id++
			if _, err := db.Exec(ctx, `INSERT INTO dates (id, d) VALUES ($1, $2)`, mode, id, day); err != nil {
				t.Fatalf("%v: insert %v: %v", mode, day, err)
			}
			var text string
			var got idemtype.Date
			if err := db.QueryRow(ctx, `SELECT d::text, d FROM dates WHERE id = $1`, mode, id).Scan(&text, &got); err != nil {
				t.Fatalf("%v: scan %v: %v", mode, day, err)
			}
			if text != day.String() || got != day {
				t.Errorf("%v: %v stored as %s, read back as %v", mode, day, text, got)
			}
		}
		var p *idemtype.Date
		if err := db.QueryRow(ctx, `SELECT NULL::date`, mode).Scan(&p); err != nil || p != nil {
			t.Errorf("%v: NULL into a *Date: %v, %v", mode, p, err)
		}
		var d idemtype.Date
		if err := db.QueryRow(ctx, `SELECT NULL::date`, mode).Scan(&d); err == nil || !strings.Contains(err.Error(), "NULL") {
			t.Errorf("%v: NULL into a Date: %v, want an error naming NULL", mode, err)
		}
		if err := db.QueryRow(ctx, `SELECT 'infinity'::date`, mode).Scan(&d); err == nil {
			t.Errorf("%v: infinity scanned as %v", mode, d)
		}
	}
	if _, err := db.Exec(ctx, `INSERT INTO dates (id, d) VALUES (0, $1)`, idemtype.Date{Year: 2026, Month: time.February, Day: 30}); err == nil ||
		!strings.Contains(err.Error(), "2026-02-30 is not a date") {
		t.Errorf("30 February inserted: %v", err)
	}
}
