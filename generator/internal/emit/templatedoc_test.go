package emit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// templateTypes are the types templates reach from *Model.
var templateTypes = []string{"Model", "Operation", "OperationNames", "Param", "Body", "BodyMedia", "Response", "Header",
	"Webhook", "SecurityScheme", "SecurityUse", "RouteGroup", "PathSegment", "PathPart", "ReqSchema", "ReqProp", "ReqMapping",
	"Type", "Field", "Default", "EnumValue", "Variant", "GoType", "ClientModel", "Policy", "RequestLimits", "ResponseHeaderSet", "SharedResponse"}

// TestTemplateDocCoversModel holds templates/README.md to the model's own
// types: every exported field and method of the types templates reach, and
// every function of the func map, is named there (`Name`). A field added to
// the model without a word in the template documentation fails here.
func TestTemplateDocCoversModel(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "templates", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)
	members := map[string][]string{} // type -> exported fields and methods
	for _, file := range sourceFiles(t, token.NewFileSet(), filepath.Join("..", "..", "model")) {
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, fl := range st.Fields.List {
						for _, n := range fl.Names {
							if n.IsExported() {
								members[ts.Name.Name] = append(members[ts.Name.Name], n.Name)
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || !d.Name.IsExported() {
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					members[id.Name] = append(members[id.Name], d.Name.Name)
				}
			}
		}
	}
	for _, ty := range templateTypes {
		if !regexp.MustCompile(`\b` + ty + `\b`).MatchString(doc) {
			t.Errorf("templates/README.md does not name type %s", ty)
		}
		for _, m := range members[ty] {
			if !strings.Contains(doc, "`"+m) && !strings.Contains(doc, " "+m+"`") && !strings.Contains(doc, ", "+m) {
				t.Errorf("templates/README.md does not name %s.%s", ty, m)
			}
		}
	}
	fm := funcMap(newImporter())
	names := make([]string, 0, len(fm))
	for n := range fm {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !strings.Contains(doc, "`"+n+" ") && !strings.Contains(doc, "`"+n+"`") {
			t.Errorf("templates/README.md does not document func %s (%s)", n, reflect.TypeOf(fm[n]))
		}
	}
}

// sourceFiles parses the Go files of dir but its tests.
func sourceFiles(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	return files
}
