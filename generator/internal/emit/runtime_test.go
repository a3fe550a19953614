package emit

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/generator/model"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// TestRuntimeNames holds the one table of runtime constants (runtimeNames)
// to the runtime's source: each name is a constant of the package the
// table says, of the value the table's key has, and of its type. A name
// mistyped in the table (AsMultiPart) fails here rather than in the
// compile of generated code; a constant renamed in the runtime fails the
// generator's build, since the key names it.
func TestRuntimeNames(t *testing.T) {
	pkgs := map[string]*types.Package{}
	for v, id := range runtimeNames {
		pkg := pkgs[id.path]
		if pkg == nil {
			pkg = runtimeConstants(t, id.path)
			pkgs[id.path] = pkg
		}
		c, ok := pkg.Scope().Lookup(id.name).(*types.Const)
		if !ok {
			t.Errorf("%s.%s (for %T %v) is not a constant of %s", pkg.Name(), id.name, v, v, id.path)
			continue
		}
		rv := reflect.ValueOf(v)
		var want constant.Value
		switch rv.Kind() {
		case reflect.String:
			want = constant.MakeString(rv.String())
		case reflect.Int:
			want = constant.MakeInt64(rv.Int())
		default:
			want = constant.MakeUint64(rv.Uint())
		}
		if !constant.Compare(c.Val(), token.EQL, want) {
			t.Errorf("%s.%s is %s, the table's key %v", pkg.Name(), id.name, c.Val(), v)
		}
		if named, ok := c.Type().(*types.Named); ok && named.Obj().Name() != rv.Type().Name() {
			t.Errorf("%s.%s is a %s, the table's key a %s", pkg.Name(), id.name, named.Obj().Name(), rv.Type())
		}
	}
}

// TestRuntimeNameUnknown: a value the table does not hold (a constant
// added to the runtime and not to the table) is an error of the literal
// that prints it, not a silent default.
func TestRuntimeNameUnknown(t *testing.T) {
	if _, err := literal(newImporter(), &model.Param{In: "query", Name: "q", Key: "q", Style: idemimpl.Style(200)}); err == nil || !strings.Contains(err.Error(), "idemimpl.Style 200") {
		t.Errorf("literal of an unknown style: %v", err)
	}
	// A key format registered here that the table does not name, as one
	// added to the runtime alone would be (TestPolicyRulesAgree names the
	// runtime's).
	idemConst := funcMap(newImporter())["idemConst"].(func(string, string) (string, error))
	if got, err := idemConst("KeyFormat", "uuidv9"); err == nil || !strings.Contains(err.Error(), `KeyFormat "uuidv9"`) {
		t.Errorf("idemConst of an unknown key format: %q, %v", got, err)
	}
}

// runtimeConstants type-checks the constant declarations of the
// repository's package path (and the types they name), from its source.
func runtimeConstants(t *testing.T, path string) *types.Package {
	t.Helper()
	const module = "github.com/idemgen/idemgen"
	dir, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		t.Fatalf("%s is not a package of %s", path, module)
	}
	fset := token.NewFileSet()
	consts := &ast.File{Name: ast.NewIdent("p")}
	for _, file := range sourceFiles(t, fset, filepath.Join("..", "..", "..", dir)) {
		consts.Name.Name = file.Name.Name
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			switch g.Tok {
			case token.CONST:
				consts.Decls = append(consts.Decls, g)
			case token.TYPE:
				for _, s := range g.Specs {
					if ts := s.(*ast.TypeSpec); ts.TypeParams == nil {
						if _, basic := ts.Type.(*ast.Ident); basic {
							consts.Decls = append(consts.Decls, &ast.GenDecl{Tok: token.TYPE, Specs: []ast.Spec{ts}})
						}
					}
				}
			}
		}
	}
	// Constants that name other packages fail to check; those the table
	// names do not.
	conf := types.Config{Error: func(error) {}}
	pkg, _ := conf.Check(path, fset, []*ast.File{consts}, nil)
	return pkg
}

// TestPolicyConstants: every value of every enumerated x-idempotent field
// (idem.PolicyEnums) has the constant templates print through idemConst.
func TestPolicyConstants(t *testing.T) {
	enums := idem.PolicyEnums()
	kinds := map[string]string{"keyFormat": "KeyFormat", "mode": "Mode", "inFlight": "InFlight",
		"onSchemaChange": "OnSchemaChange", "onExpired": "OnExpired", "profile": "Profile"}
	for field, values := range enums {
		for _, v := range values {
			c, ok := policyValue(kinds[field], v)
			if !ok {
				t.Errorf("policyValue(%s): no field %s", kinds[field], field)
				continue
			}
			if id, err := runtimeName(c); err != nil || id.path != idemPkg || fmt.Sprint(c) != v || reflect.TypeOf(c).Name() != kinds[field] {
				t.Errorf("%s %q: constant %v (%v) of type %T", field, v, id, err, c)
			}
		}
	}
}
