package docsnippets

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/idemgen/idemgen/analysis/idemvet"
)

// TestPitfalls: idemgen vet's analyzer reports each handler of package
// pitfalls (docs/pitfalls.md shows them) whose type is named Wrong...,
// once, with its rule's words, and no other handler.
func TestPitfalls(t *testing.T) {
	want := map[string]string{
		"WrongPool":     "CreateRefund: s.db.QueryRow runs outside tx",
		"WrongCallOut":  "CapturePayment: s.bank.Post calls out of the process in capturePayment, an atomic operation",
		"WrongHandled":  "CreateRefund: the error of tx.Exec is handled",
		"WrongFreshKey": "CreateRefund: s.acquirer.CreateRefund may act twice in createRefund, an atomic operation: its idempotency key fresh is not derived from this request",
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "pitfalls/pitfalls.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	owner := func(line int) string { // the receiver type of the method holding line
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Recv != nil && fset.Position(fd.Pos()).Line <= line && line <= fset.Position(fd.End()).Line {
				typ := fd.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				return typ.(*ast.Ident).Name
			}
		}
		return ""
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.LoadAllSyntax}, "./pitfalls")
	if err != nil {
		t.Fatal(err)
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{idemvet.Analyzer}, pkgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var all []string
	for _, act := range graph.Roots {
		if act.Err != nil {
			t.Fatal(act.Err)
		}
		for _, d := range act.Diagnostics {
			line := act.Package.Fset.Position(d.Pos).Line
			typ := owner(line)
			got[typ]++
			all = append(all, fmt.Sprintf("%d: %s", line, d.Message))
			if w, ok := want[typ]; !ok || !strings.HasPrefix(d.Message, w) {
				t.Errorf("idemgen vet reports %s (line %d): %s\nwant only the Wrong... handlers: %q", typ, line, d.Message, want)
			}
		}
	}
	for typ := range want {
		if got[typ] != 1 {
			t.Errorf("idemgen vet reports %s %d times, want once:\n%s", typ, got[typ], strings.Join(all, "\n"))
		}
	}
}
