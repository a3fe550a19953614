package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/analysis/unitchecker"
	"golang.org/x/tools/go/packages"

	"github.com/idemgen/idemgen/analysis/idemvet"
)

// vetTool reports whether idemgen was started by `go vet -vettool`: with
// -V=full (go vet asks for the tool's version), -flags (its flags), or
// a unit's .cfg file last (the flags go vet passes come first).
func vetTool(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if strings.HasPrefix(args[0], "-V=") || args[0] == "-flags" {
		return true
	}
	return strings.HasSuffix(args[len(args)-1], ".cfg") && (len(args) == 1 || strings.HasPrefix(args[0], "-"))
}

// runVetTool serves go vet: unitchecker analyses one package per call
// from the .cfg file, and exits.
func runVetTool() {
	unitchecker.Main(idemvet.Analyzer)
}

// vetCmd runs `idemgen vet [-outbound LIST] [-keyed LIST] [-json]
// [-tags TAGS] [packages]`: the idemvet analyzer over the packages (and
// their tests) loaded by go/packages, findings printed one a line as
// file:line:col: message, exit status 1 when there is one.
func vetCmd(args []string, stdout, stderr io.Writer) error {
	flags := newFlags("vet", stderr)
	outbound := flags.String("outbound", "", "more calls out of the process, a comma-separated `list`: pkgpath.Func, pkgpath.Type.Method or pkgpath.Type")
	keyed := flags.String("keyed", "", "more functions deriving a downstream idempotency key, a comma-separated `list`, besides downstream.Key and KeyAs: a call carrying what one returned is accepted")
	asJSON := flags.Bool("json", false, "print the findings as JSON, in go vet -json's shape")
	tags := flags.String("tags", "", "build `tags`, comma-separated")
	if err := parse(flags, args); err != nil {
		return err
	}
	for name, v := range map[string]string{"outbound": *outbound, "keyed": *keyed} {
		if err := idemvet.Analyzer.Flags.Set(name, v); err != nil {
			return usageError{msg: fmt.Sprintf("vet: -%s: %v", name, err), fs: flags}
		}
	}
	patterns := flags.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, Tests: true}
	if *tags != "" {
		cfg.BuildFlags = []string{"-tags=" + *tags}
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return fmt.Errorf("vet: %w", err)
	}
	broken := 0
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			fmt.Fprintf(stderr, "idemgen: vet: %s\n", e)
			broken++
		}
	})
	if broken > 0 {
		return errSilent
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{idemvet.Analyzer}, pkgs, nil)
	if err != nil {
		return fmt.Errorf("vet: %w", err)
	}
	if *asJSON {
		return graph.PrintJSON(stdout)
	}
	findings, err := vetFindings(graph)
	if err != nil {
		return fmt.Errorf("vet: %w", err)
	}
	for _, f := range findings {
		fmt.Fprintln(stdout, f)
	}
	if len(findings) > 0 {
		return errSilent
	}
	return nil
}

// vetFindings are the root packages' diagnostics as file:line:col:
// message (the file relative to the working directory when it is below
// it), each once (a package and its test variant share files), in file
// and line order.
func vetFindings(graph *checker.Graph) ([]string, error) {
	wd, _ := os.Getwd()
	type finding struct {
		file      string
		line, col int
		msg       string
	}
	seen := map[finding]bool{}
	var out []finding
	for _, act := range graph.Roots {
		if act.Err != nil {
			return nil, fmt.Errorf("%s: %w", act.Package.PkgPath, act.Err)
		}
		for _, d := range act.Diagnostics {
			p := act.Package.Fset.Position(d.Pos)
			f := finding{p.Filename, p.Line, p.Column, d.Message}
			if rel, err := filepath.Rel(wd, p.Filename); err == nil && !strings.HasPrefix(rel, "..") {
				f.file = rel
			}
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.file != b.file {
			return a.file < b.file
		}
		if a.line != b.line {
			return a.line < b.line
		}
		return a.col < b.col
	})
	lines := make([]string, len(out))
	for i, f := range out {
		lines[i] = fmt.Sprintf("%s:%d:%d: %s", f.file, f.line, f.col, f.msg)
	}
	return lines, nil
}
