package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository.
const root = "../.."

// race: make test compiles runtime/... with -race before the tests run
// (race-deps), so loading with it reads export data that is already built.
var race = []string{"-race"}

func changelog(t *testing.T) []byte {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// TestAPI: the exported API of runtime/... is compatible with the last
// release's (api/), but for the changes CHANGELOG.md lists.
func TestAPI(t *testing.T) {
	res, err := check(root, changelog(t), runtimeAPI, race, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(res.String()))
	if len(res.Unlisted) > 0 {
		t.Errorf("incompatible changes CHANGELOG.md does not list:\n%s", res)
	}
}

// TestRemovalNeedsChangelog: removing an exported identifier of
// runtime/idem fails the check until CHANGELOG.md's [Unreleased] lists it
// under Removed, and a line elsewhere (another release, another section,
// a longer name) does not count.
func TestRemovalNeedsChangelog(t *testing.T) {
	api, err := filepath.Abs(filepath.Join(root, "runtime", "idem", "api.go"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(api)
	if err != nil {
		t.Fatal(err)
	}
	const decl = "const SupportPackageIsVersion3 = true\n"
	if !strings.Contains(string(src), decl) {
		t.Fatalf("%s no longer declares %q: pick another identifier to remove", api, decl)
	}
	overlay := map[string][]byte{api: []byte(strings.Replace(string(src), decl, "", 1))}
	const name = "idem.SupportPackageIsVersion3"
	for _, c := range []struct {
		log    string
		listed bool
	}{
		{"# Changelog\n\n## [Unreleased]\n\n## [0.1.0]\n", false},
		{"## [Unreleased]\n\n### Added\n- `" + name + "`\n", false},
		{"## [Unreleased]\n\n## [0.1.0]\n### Removed\n- `" + name + "`\n", false},
		{"## [Unreleased]\n### Removed\n- `" + name + "X`\n", false},
		{"## [Unreleased]\n### Removed\n- `" + name + "`: regenerate.\n", true},
		{"## [Unreleased]\n### Changed\n- " + name + ", because\n", true},
	} {
		res, err := check(root, []byte(c.log), "./runtime/idem", race, overlay)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ch := range append(res.Listed, res.Unlisted...) {
			names = append(names, ch.Name)
		}
		if len(names) != 1 || names[0] != name {
			t.Fatalf("incompatible changes %q, want just %s", names, name)
		}
		if got := len(res.Listed) == 1; got != c.listed {
			t.Errorf("CHANGELOG.md %q: listed %v, want %v", c.log, got, c.listed)
		}
	}
}

// TestName: apidiff's messages become the names CHANGELOG.md uses.
func TestName(t *testing.T) {
	for msg, want := range map[string]string{
		"./runtime/idem.Problem: removed":                            "idem.Problem",
		"./runtime/idem.(*Engine).Run: removed":                      "idem.Engine.Run",
		"./runtime/idem/admin.SweeperConfig.Pages: removed":          "admin.SweeperConfig.Pages",
		"./runtime/idem.Config, method set of *Config: removed X":    "idem.Config",
		"package github.com/idemgen/idemgen/runtime/natsjs: removed": "runtime/natsjs",
	} {
		if got := name(msg); got != want {
			t.Errorf("name(%q) = %q, want %q", msg, got, want)
		}
	}
}

// TestPreviousAPI: code written against the names that moved out of
// runtime/idem (testdata/previous) still compiles and vets, and every
// name of deprecated.go says, in a "Deprecated: use X" paragraph, where it
// went.
func TestPreviousAPI(t *testing.T) {
	cmd := exec.Command("go", "vet", "-race", "./...") // -race: the export data race-deps built
	cmd.Dir = filepath.Join("testdata", "previous")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testdata/previous: go vet: %v\n%s", err, out)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, "runtime", "idem", "deprecated.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	use := regexp.MustCompile(`(?m)^Deprecated: use (idemproblem|idemtype|schema|admin)\.\w+ \(runtime/`)
	names := 0
	for _, d := range f.Decls {
		var doc *ast.CommentGroup
		var ids []string
		switch d := d.(type) {
		case *ast.FuncDecl:
			doc, ids = d.Doc, []string{d.Name.Name}
		case *ast.GenDecl:
			doc = d.Doc
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					ids = append(ids, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						ids = append(ids, n.Name)
					}
				}
			}
		}
		for _, id := range ids {
			if !ast.IsExported(id) {
				continue
			}
			names++
			if doc == nil || !use.MatchString(doc.Text()) {
				t.Errorf("deprecated.go: %s has no \"Deprecated: use pkg.Name (runtime/...)\" paragraph", id)
			}
		}
	}
	if names < 4 {
		t.Errorf("deprecated.go declares %d names, want the moved ones", names)
	}
}
