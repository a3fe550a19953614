package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/idemgen/idemgen/generator"
)

//go:generate go run ./internal/mkstarter

// starter holds the files `idemgen init` writes: examples/minimal without
// its generated package, in txtar form (see internal/mkstarter).
//
//go:embed starter.txtar
var starter string

// starterModule is the module path of examples/minimal, replaced by the
// user's in the files init writes.
const starterModule = "github.com/idemgen/idemgen/examples/minimal"

// initCmd runs `idemgen init [-dir DIR] [-module PATH] [-force]`.
func initCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("init", stderr)
	dir := fs.String("dir", ".", "`dir`ectory of the new service (holding its go.mod)")
	module := fs.String("module", "", "Go module `path` of the service (default: from DIR/go.mod)")
	force := fs.Bool("force", false, "overwrite files that exist")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{msg: "init takes no arguments (-dir names the directory)"}
	}
	mod, hasTool, err := readModule(*dir, *module)
	if err != nil {
		return err
	}
	files, err := starterFiles(mod)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	if !*force {
		var exist []string
		for _, name := range names {
			if _, err := os.Stat(filepath.Join(*dir, name)); err == nil {
				exist = append(exist, name)
			}
		}
		if len(exist) > 0 {
			return fmt.Errorf("init: %s already exist(s) in %s; nothing written (-force overwrites)", strings.Join(exist, ", "), *dir)
		}
	}
	for _, name := range names {
		path := filepath.Join(*dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		if err := os.WriteFile(path, []byte(files[name]), 0o644); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	cfg, err := generator.LoadConfig(filepath.Join(*dir, "idemgen.yaml"))
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	cfg.Version = generator.Version()
	out, warnings, err := generator.Generate(cfg)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "idemgen: warning: %s\n", w)
	}
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if _, err := generator.Write(cfg.Output, out); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	fmt.Fprintf(stdout, "idemgen: wrote a sample service (room bookings) in %s: %s, and api/ generated from openapi.yaml\n", *dir, strings.Join(names, ", "))
	fmt.Fprintln(stdout, "next:")
	if !hasTool {
		fmt.Fprintln(stdout, "  go get -tool github.com/idemgen/idemgen/cmd/idemgen   # for the //go:generate line in main.go")
	}
	fmt.Fprint(stdout, `  go mod tidy
  go test ./...               # needs DATABASE_URL (PostgreSQL 14+); a throwaway server for it:
  bash "$(go list -m -f '{{.Dir}}' github.com/idemgen/idemgen)/scripts/pg.sh" run go test ./...
  DATABASE_URL=postgres://... go run .   # serves on 127.0.0.1:8080
then edit openapi.yaml, run go generate ./..., and follow the compiler into service.go.
`)
	return nil
}

// readModule returns the module path of the service in dir (explicit, or
// from dir/go.mod) and whether go.mod declares idemgen as a tool.
func readModule(dir, explicit string) (module string, hasTool bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if errors.Is(err, os.ErrNotExist) {
		if explicit == "" {
			return "", false, fmt.Errorf("init: %s has no go.mod: run go mod init MODULE there first (or pass -module)", dir)
		}
		return explicit, false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("init: %w", err)
	}
	f, err := modfile.Parse(filepath.Join(dir, "go.mod"), data, nil)
	if err != nil {
		return "", false, fmt.Errorf("init: %w", err)
	}
	for _, t := range f.Tool {
		hasTool = hasTool || t.Path == generator.Module+"/cmd/idemgen"
	}
	switch {
	case explicit != "":
		return explicit, hasTool, nil
	case f.Module == nil || f.Module.Mod.Path == "":
		return "", false, fmt.Errorf("init: %s/go.mod names no module", dir)
	}
	return f.Module.Mod.Path, hasTool, nil
}

// starterFiles parses the starter archive and puts module in place of the
// example's module path.
func starterFiles(module string) (map[string]string, error) {
	files := map[string]string{}
	var name string
	var body strings.Builder
	flush := func() {
		if name != "" {
			files[name] = strings.ReplaceAll(body.String(), starterModule, module)
		}
		body.Reset()
	}
	for _, line := range strings.SplitAfter(starter, "\n") {
		t := strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			flush()
			name = t[3 : len(t)-3]
			continue
		}
		if name != "" {
			body.WriteString(line)
		}
	}
	flush()
	if len(files) == 0 {
		return nil, errors.New("init: the embedded starter is empty")
	}
	return files, nil
}
