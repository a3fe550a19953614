package generator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/generator/internal/reserved"
)

// TestReservedNamesDeclared holds the one table of reserved names to the
// golden files: every package-level name, and every method of the
// handler and webhookHandler types, that generated
// code declares is either spelt by the namer for the model (types,
// constants, operations' names) or in reserved.Names; and every name of
// reserved.Package is declared. A template that declares a name the table
// does not reserve would let a schema of that name shadow it.
func TestReservedNamesDeclared(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "golden", "*", "idemgen.yaml"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	reservedAnywhere := map[string]bool{}
	for _, names := range reserved.Names {
		for _, n := range names {
			reservedAnywhere[n] = true
		}
	}
	declaredAnywhere := map[string]bool{}
	for _, cfgPath := range cases {
		t.Run(filepath.Base(filepath.Dir(cfgPath)), func(t *testing.T) {
			cfg, err := LoadConfig(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := Load(cfg)
			if err != nil {
				t.Fatal(err)
			}
			files, _, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			spelt := modelNames(spec.Model)
			for _, f := range files {
				if !strings.HasSuffix(f.Name, ".go") || strings.Contains(f.Name, "/") {
					continue // a client of its own package has names of its own
				}
				file, err := parser.ParseFile(token.NewFileSet(), f.Name, f.Content, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range declaredNames(file) {
					declaredAnywhere[name] = true
					if !spelt[name] && !reservedAnywhere[name] {
						t.Errorf("%s declares %s, which neither the model spells nor reserved.Names reserves", f.Name, name)
					}
				}
			}
		})
	}
	for _, n := range reserved.Names[reserved.Package] {
		if !declaredAnywhere[n] {
			t.Errorf("reserved.Names[reserved.Package] holds %s, which no golden file declares", n)
		}
	}
}

// modelNames are the names the namer spelt for m.
func modelNames(m *Model) map[string]bool {
	out := map[string]bool{}
	add := func(names ...string) {
		for _, n := range names {
			if n != "" {
				out[n] = true
			}
		}
	}
	for _, ty := range m.Types {
		add(ty.Name)
		for _, e := range ty.Enum {
			add(e.Name)
		}
	}
	for _, o := range m.Operations {
		n := o.Names
		add(o.RequestTypeName, o.ResponseTypeName, n.Handler, n.Decoder, n.Op, n.Params, n.Body, n.Limits, n.Marker, n.Encoder, n.Segments, n.ClientOp, n.ClientReader)
		for _, r := range o.Responses {
			add(r.TypeName)
		}
	}
	for _, s := range m.SharedResponses {
		add(s.TypeName)
	}
	for _, g := range m.Routes() {
		add(g.HandlerName)
	}
	for _, w := range m.Webhooks {
		add(w.SenderName, w.TypeConstName, w.HandlerName)
	}
	return out
}

// declaredNames lists a file's package-level names and the methods of the
// generated code's own types.
func declaredNames(f *ast.File) []string {
	own := []string{"handler", "webhookHandler"}
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				out = append(out, d.Name.Name)
				continue
			}
			recv := d.Recv.List[0].Type
			if s, ok := recv.(*ast.StarExpr); ok {
				recv = s.X
			}
			if id, ok := recv.(*ast.Ident); ok && slices.Contains(own, id.Name) {
				out = append(out, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					out = append(out, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name != "_" {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}
