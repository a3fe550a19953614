package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/generator"
	"github.com/idemgen/idemgen/queries"
)

// TestMigrationsCmd: `idemgen migrations` writes queries.Export's files for
// each format, -check passes on them and fails (exit 1) on a changed or a
// missing file, a file idemgen did not write is refused rather than mixed
// in, files of another format are not overwritten, and a missing or
// unknown -format is a usage error (exit 2). That the files apply with the
// tools themselves is examples/migrations' test.
func TestMigrationsCmd(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, format := range queries.Formats {
		dir := filepath.Join("m", format)
		code, stdout, stderr := runCmd(t, "migrations", "-format", format, "-dir", dir)
		if code != 0 || !strings.Contains(stdout, "apply them with") {
			t.Fatalf("%s: exit %d, %s%s", format, code, stdout, stderr)
		}
		want, err := queries.Export(format, generator.Version())
		if err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != len(want) {
			t.Errorf("%s: %d files written, want %d", format, len(entries), len(want))
		}
		for name, data := range want {
			if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != string(data) {
				t.Errorf("%s: %s differs from queries.Export (%v)", format, name, err)
			}
		}
		if code, _, stderr := runCmd(t, "migrations", "-format", format, "-dir", dir, "-check"); code != 0 {
			t.Errorf("%s: -check on fresh files: exit %d, %s", format, code, stderr)
		}
	}

	dir := filepath.Join("m", "goose")
	first := filepath.Join(dir, "0001_idem_records.sql")
	write(t, first, "-- edited\n")
	code, stdout, stderr := runCmd(t, "migrations", "-format", "goose", "-dir", dir, "-check")
	if code != 1 || !strings.Contains(stdout, first+": missing or different") || !strings.Contains(stderr, "idemgen: migrations in "+dir+" are stale") {
		t.Errorf("-check on an edited file: exit %d, %s%s", code, stdout, stderr)
	}
	if code, _, stderr := runCmd(t, "migrations", "-format", "goose", "-dir", dir); code != 0 {
		t.Errorf("rewriting an edited file: exit %d, %s", code, stderr)
	}
	os.Remove(first)
	if code, _, _ := runCmd(t, "migrations", "-format", "goose", "-dir", dir, "-check"); code != 1 {
		t.Errorf("-check with a file missing: exit %d, want 1", code)
	}

	write(t, filepath.Join(dir, "0100_orders.sql"), "-- +goose Up\nCREATE TABLE orders ();\n")
	code, _, stderr = runCmd(t, "migrations", "-format", "goose", "-dir", dir)
	if code != 1 || !strings.Contains(stderr, "holds 0100_orders.sql, which idemgen did not write") {
		t.Errorf("a service's own migration in the directory: exit %d, %s", code, stderr)
	}

	code, _, stderr = runCmd(t, "migrations", "-format", "migrate", "-dir", filepath.Join("m", "atlas"))
	if code != 1 || !strings.Contains(stderr, "written by idemgen in another format or version") {
		t.Errorf("another format's files: exit %d, %s", code, stderr)
	}

	if code, _, stderr := runCmd(t, "migrations"); code != 2 || !strings.Contains(stderr, "-format is required") {
		t.Errorf("no -format: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, "migrations", "-format", "flyway"); code != 2 || !strings.Contains(stderr, `unknown migration format "flyway" (want one of goose, migrate, atlas, plain)`) {
		t.Errorf("unknown -format: exit %d, %s", code, stderr)
	}
}
