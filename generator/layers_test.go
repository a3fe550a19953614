package generator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLayers holds the generator to its three parts (docs/design.md): the
// model's files import no kin-openapi; no Go source naming a runtime
// package is written outside the emitter (emit_*.go), where the importer
// names it; and only internal/load makes a kin-openapi loader.
func TestLayers(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	modelFilesGlob, err := filepath.Glob(filepath.Join("model", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, modelFilesGlob...)
	qualifier := regexp.MustCompile(`\b(idemimpl|idem|idemclient)\.([A-Z%]|$)`)
	fset := token.NewFileSet()
	modelFiles := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		kin := false
		for _, im := range file.Imports {
			kin = kin || strings.HasPrefix(strings.Trim(im.Path.Value, `"`), "github.com/getkin/kin-openapi")
		}
		if filepath.Dir(f) == "model" && declaresModelType(file) {
			modelFiles++
			if kin {
				t.Errorf("%s declares model types and imports kin-openapi", f)
			}
		}
		emitter := strings.HasPrefix(filepath.Base(f), "emit_")
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && !emitter && qualifier.MatchString(s) {
					t.Errorf("%s: %s: Go source naming a runtime package outside the emitter: %s", f, fset.Position(n.Pos()), n.Value)
				}
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "openapi3" && n.Sel.Name == "NewLoader" {
					t.Errorf("%s: a kin-openapi loader outside internal/load", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if modelFiles == 0 {
		t.Fatal("no file declares a model type")
	}
}

// declaresModelType reports whether f declares a type templates reach.
func declaresModelType(f *ast.File) bool {
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok {
			for _, s := range g.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					for _, m := range templateTypes {
						if ts.Name.Name == m {
							return true
						}
					}
				}
			}
		}
	}
	return false
}
