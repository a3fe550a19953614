package main

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/exp/apidiff"
	"golang.org/x/mod/semver"
	"golang.org/x/tools/go/gcexportdata"
	"golang.org/x/tools/go/packages"
)

// runtimeAPI is the API that is checked: the runtime library, less its
// internal packages.
const runtimeAPI = "./runtime/..."

// load type-checks the packages of pattern under root (from the go
// command's export data) with the source files of overlay in place of
// theirs.
func load(fset *token.FileSet, root, pattern string, flags []string, overlay map[string][]byte) (*apidiff.Module, error) {
	cfg := &packages.Config{
		Mode:       packages.NeedName | packages.NeedTypes | packages.NeedModule,
		Dir:        root,
		Fset:       fset,
		BuildFlags: flags,
		Overlay:    overlay,
	}
	pkgs, err := packages.Load(cfg, pattern)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", pattern, err)
	}
	m := &apidiff.Module{}
	var errs []error
	for _, p := range pkgs {
		for _, e := range p.Errors {
			errs = append(errs, e)
		}
		if internal(p.PkgPath) {
			continue
		}
		if p.Module == nil {
			return nil, fmt.Errorf("load %s: %s is in no module", pattern, p.PkgPath)
		}
		m.Path = p.Module.Path
		m.Packages = append(m.Packages, p.Types)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("load %s: %w", pattern, err)
	}
	if len(m.Packages) == 0 {
		return nil, fmt.Errorf("load %s: no packages", pattern)
	}
	return m, nil
}

func internal(path string) bool {
	return strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/")
}

// writeRelease records the API of runtime/... in file, in apidiff's
// module format: a zip whose entry "module" holds the module path and
// whose entries PKGPATH.x hold each package's export data.
func writeRelease(root, file string, flags []string) error {
	fset := token.NewFileSet()
	m, err := load(fset, root, runtimeAPI, flags, nil)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	e, err := w.Create("module")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(e, m.Path); err != nil {
		return err
	}
	for _, p := range m.Packages {
		e, err := w.Create(p.Path() + ".x")
		if err != nil {
			return err
		}
		if err := gcexportdata.Write(e, fset, p); err != nil {
			return fmt.Errorf("%s: %w", p.Path(), err)
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.WriteFile(file, buf.Bytes(), 0o644)
}

// readRelease reads what writeRelease wrote.
func readRelease(fset *token.FileSet, file string) (*apidiff.Module, error) {
	z, err := zip.OpenReader(file)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	m := &apidiff.Module{}
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, f.Name, err)
		}
		if f.Name == "module" {
			m.Path = string(data)
			continue
		}
		path, ok := strings.CutSuffix(f.Name, ".x")
		if !ok {
			return nil, fmt.Errorf("%s: unexpected entry %q", file, f.Name)
		}
		p, err := gcexportdata.Read(bytes.NewReader(data), fset, map[string]*types.Package{}, path)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, path, err)
		}
		m.Packages = append(m.Packages, p)
	}
	if m.Path == "" {
		return nil, fmt.Errorf("%s: no module path", file)
	}
	return m, nil
}

// latest returns the newest release record under root/api (api/vX.Y.Z.zip).
func latest(root string) (string, error) {
	files, err := filepath.Glob(filepath.Join(root, "api", "v*.zip"))
	if err != nil {
		return "", err
	}
	best := ""
	for _, f := range files {
		v := strings.TrimSuffix(filepath.Base(f), ".zip")
		if semver.IsValid(v) && (best == "" || semver.Compare(v, strings.TrimSuffix(filepath.Base(best), ".zip")) > 0) {
			best = f
		}
	}
	if best == "" {
		return "", fmt.Errorf("%s: no release record (api/vX.Y.Z.zip)", filepath.Join(root, "api"))
	}
	return best, nil
}

// A change is one incompatible change apidiff reports.
type change struct {
	Name    string // as CHANGELOG.md must name it: idem.Engine.Run
	Message string // apidiff's
}

// result is what check found.
type result struct {
	Baseline   string   // the release record compared with
	Listed     []change // incompatible, and named in CHANGELOG.md
	Unlisted   []change // incompatible, and not named
	Compatible int      // compatible changes (additions)
}

func (r result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apicheck: runtime/... against %s: %d compatible changes, %d incompatible listed in CHANGELOG.md, %d not listed\n",
		filepath.Base(r.Baseline), r.Compatible, len(r.Listed), len(r.Unlisted))
	for _, c := range r.Unlisted {
		fmt.Fprintf(&b, "apicheck: %s: not under ### Removed or ### Changed in CHANGELOG.md's [Unreleased] (%s)\n", c.Name, c.Message)
	}
	return b.String()
}

// check compares the packages of pattern under root (with overlay) with
// the newest release record's, and the incompatible changes with log
// (CHANGELOG.md). A pattern narrower than runtimeAPI compares only the
// packages it matches.
func check(root string, log []byte, pattern string, flags []string, overlay map[string][]byte) (result, error) {
	base, err := latest(root)
	if err != nil {
		return result{}, err
	}
	fset := token.NewFileSet()
	old, err := readRelease(fset, base)
	if err != nil {
		return result{}, err
	}
	cur, err := load(fset, root, pattern, flags, overlay)
	if err != nil {
		return result{}, err
	}
	if pattern != runtimeAPI {
		loaded := map[string]bool{}
		for _, p := range cur.Packages {
			loaded[p.Path()] = true
		}
		old.Packages = slices.DeleteFunc(old.Packages, func(p *types.Package) bool { return !loaded[p.Path()] })
	}
	listed, err := unreleased(log)
	if err != nil {
		return result{}, err
	}
	res := result{Baseline: base}
	for _, c := range apidiff.ModuleChanges(old, cur).Changes {
		if c.Compatible {
			res.Compatible++
			continue
		}
		ch := change{Name: name(c.Message), Message: c.Message}
		if mentions(listed, ch.Name) {
			res.Listed = append(res.Listed, ch)
		} else {
			res.Unlisted = append(res.Unlisted, ch)
		}
	}
	return res, nil
}

// name turns an apidiff message into the name CHANGELOG.md must use:
// "./runtime/idem.(*Engine).Run: removed" -> "idem.Engine.Run";
// "package github.com/idemgen/idemgen/runtime/x: removed" -> "runtime/x".
func name(msg string) string {
	if p, ok := strings.CutPrefix(msg, "package "); ok {
		p, _, _ = strings.Cut(p, ":")
		if i := strings.Index(p, "/runtime/"); i >= 0 {
			return p[i+1:]
		}
		return p
	}
	n := msg
	if i := strings.IndexAny(n, ":,"); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimPrefix(n, "./")
	if i := strings.LastIndex(n, "/"); i >= 0 {
		n = n[i+1:]
	}
	n = strings.NewReplacer("(*", "", ")", "").Replace(n)
	return strings.TrimSpace(n)
}

// unreleased returns the text of the "### Removed" and "### Changed"
// subsections of CHANGELOG.md's "## [Unreleased]" section.
func unreleased(log []byte) (string, error) {
	var b strings.Builder
	in, found, take := false, false, false
	for _, l := range strings.Split(string(log), "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			in = strings.HasPrefix(l, "## [Unreleased]")
			found = found || in
			take = false
		case in && strings.HasPrefix(l, "### "):
			h := strings.TrimSpace(strings.TrimPrefix(l, "### "))
			take = h == "Removed" || h == "Changed"
		case in && take:
			b.WriteString(l + "\n")
		}
	}
	if !found {
		return "", errors.New("CHANGELOG.md: no ## [Unreleased] section")
	}
	return b.String(), nil
}

// mentions reports whether text names n as a whole: `idem.Problem` is not
// named by `idem.ProblemType`.
func mentions(text, n string) bool {
	return regexp.MustCompile(`(^|[^\w./])` + regexp.QuoteMeta(n) + `($|[^\w/])`).MatchString(text)
}
