package emit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLayers holds the generator to what its packages' imports cannot say.
// The compiler holds the rest: the model (generator/model) imports no
// emitter and no runner, and the emitters (this package) read only the
// model's exported data, never the builder's state. What remains is per
// file or per string:
//   - the files of package model that declare a type templates reach
//     import no kin-openapi: the model is data, the builder beside it reads
//     the document;
//   - no Go source naming a runtime package is written outside this
//     package, where the importer names it (the model holds the runtime's
//     constants as typed values, runtimeNames spells them);
//   - only internal/load makes a kin-openapi loader.
func TestLayers(t *testing.T) {
	root := filepath.Join("..", "..")
	qualifier := regexp.MustCompile(`\b(idemimpl|idem|idemclient)\.([A-Z%]|$)`)
	fset := token.NewFileSet()
	modelFiles := 0
	err := filepath.WalkDir(root, func(f string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, f)
		dir := filepath.ToSlash(filepath.Dir(rel))
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return err
		}
		kin := false
		for _, im := range file.Imports {
			kin = kin || strings.HasPrefix(strings.Trim(im.Path.Value, `"`), "github.com/getkin/kin-openapi")
		}
		if dir == "model" && declaresModelType(file) {
			modelFiles++
			if kin {
				t.Errorf("%s declares model types and imports kin-openapi", rel)
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && dir != "internal/emit" && qualifier.MatchString(s) {
					t.Errorf("%s: Go source naming a runtime package outside the emitter: %s", fset.Position(n.Pos()), n.Value)
				}
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "openapi3" && n.Sel.Name == "NewLoader" && dir != "internal/load" {
					t.Errorf("%s: a kin-openapi loader outside internal/load", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if modelFiles == 0 {
		t.Fatal("no file of package model declares a model type")
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
