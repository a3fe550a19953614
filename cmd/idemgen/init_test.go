package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInit runs `idemgen init` in a module that has idemgen as a tool:
// the files with the module's import paths, api/ generated, what to run
// next, and no file overwritten by a second run. TestQuickstart runs the
// new project's test.
func TestInit(t *testing.T) {
	dir, stdout := initProject(t)
	for _, want := range []string{"openapi.yaml", "main.go", "service.go", "main_test.go", "migrations/0001_bookings.up.sql", "go mod tidy", "scripts/pg.sh"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("init's output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "go get -tool") {
		t.Errorf("init asks for go get -tool although go.mod has the tool directive:\n%s", stdout)
	}
	main, err := os.ReadFile(filepath.Join(dir, "main.go"))
	if err != nil || !strings.Contains(string(main), `"example.com/rooms/api"`) || strings.Contains(string(main), "examples/minimal") {
		t.Fatalf("main.go does not import the new module's api package (%v):\n%s", err, main)
	}
	if _, err := os.Stat(filepath.Join(dir, "api", "server.gen.go")); err != nil {
		t.Fatalf("init did not generate api/: %v", err)
	}
	// Run again: nothing is overwritten without -force.
	if code, _, stderr := runCmd(t, "init", "-dir", dir); code != 1 || !strings.Contains(stderr, "already exist") || !strings.Contains(stderr, "main.go") {
		t.Errorf("second init: exit %d, %s; want 1 naming the files that exist", code, stderr)
	}
}

// initProject runs `idemgen init` in a new module example.com/rooms that
// has idemgen (this checkout) as a tool, and returns its directory and
// what init printed.
func initProject(t *testing.T) (dir, stdout string) {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/rooms\n\ngo 1.26.0\n\n"+
		"require github.com/idemgen/idemgen v0.0.0-00010101000000-000000000000\n\n"+
		"replace github.com/idemgen/idemgen => "+repo+"\n\n"+
		"tool github.com/idemgen/idemgen/cmd/idemgen\n")
	code, stdout, stderr := runCmd(t, "init", "-dir", dir)
	if code != 0 {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
	}
	return dir, stdout
}

// TestInitNeedsModule: without go.mod (or -module) init says what to do
// and writes nothing.
func TestInitNeedsModule(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCmd(t, "init", "-dir", dir)
	if code != 1 || !strings.Contains(stderr, "go mod init") {
		t.Errorf("init without go.mod: exit %d, %s", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("init without go.mod wrote %d files", len(entries))
	}
}

func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// raceEnabled is set by race_test.go when the tests run with -race.
var raceEnabled bool
