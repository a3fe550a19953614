package idemvet

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// Analyzer reports handler mistakes in the implementations of idemgen's
// generated Server and WebhookReceiver interfaces (see the package doc).
var Analyzer = &analysis.Analyzer{
	Name:      "idemvet",
	Doc:       "check idemgen handlers: statements outside the handed tx, outbound calls in atomic mode, handled SQL errors without a savepoint",
	URL:       "https://github.com/idemgen/idemgen/blob/main/docs/vet.md",
	Run:       run,
	FactTypes: []analysis.Fact{new(serverFact), new(clientFact)},
}

func init() {
	Analyzer.Flags.Var(&outboundFlag, "outbound", "comma-separated functions and methods (pkgpath.Func, pkgpath.Type.Method, pkgpath.Type) that call out of the process, besides net/http, gRPC and net/smtp")
	Analyzer.Flags.Var(&keyedFlag, "keyed", "comma-separated functions that derive a downstream idempotency key from the request's, besides runtime/downstream's Key and KeyAs: an outbound call carrying what one returned is accepted")
}

const (
	pgxPath    = "github.com/jackc/pgx/v5"
	pgconnPath = "github.com/jackc/pgx/v5/pgconn"
	directive  = "//idemgen:tx "
)

// txMethod is a method of a generated interface that receives the
// engine's transaction, as its //idemgen:tx line describes it.
type txMethod struct {
	Interface string // Server, WebhookReceiver
	Method    string
	Mode      string // atomic, lease, inbox; "" when the line is missing
	Operation string // the operation ID (Server)
	Webhook   string // the webhook's name (WebhookReceiver)
}

// what names the operation for the outbound rule's messages.
func (m txMethod) what() string {
	switch {
	case m.Webhook != "":
		return "the receiver of webhook " + m.Webhook
	case m.Mode == "atomic":
		return m.Operation + ", an atomic operation"
	case m.Mode != "":
		return m.Operation + ", a " + m.Mode + " operation"
	}
	return m.Operation
}

// record names what the handed tx stores besides the handler's writes.
func (m txMethod) record() string {
	if m.Webhook != "" {
		return "the delivery of webhook " + m.Webhook + " in the inbox"
	}
	return m.Operation + "'s idempotency record"
}

// serverFact lists a package's tx-taking interface methods.
type serverFact struct{ Methods []txMethod }

func (*serverFact) AFact() {}

func (f *serverFact) String() string {
	var names []string
	for _, m := range f.Methods {
		names = append(names, m.Interface+"."+m.Method+"="+m.Mode)
	}
	return "idemgen tx methods: " + strings.Join(names, ", ")
}

// A handler is a method implementing a tx-taking interface method.
type handler struct {
	decl *ast.FuncDecl
	m    txMethod
	tx   *types.Var // the tx parameter
	ctx  *types.Var // the context parameter; nil when it has none
}

// checker holds one package's analysis.
type checker struct {
	pass    *analysis.Pass
	decls   map[*types.Func]*ast.FuncDecl
	locals  map[*ast.FuncDecl]*localInfo
	msets   typeutil.MethodSetCache
	handles map[types.Type]bool
	seen    map[string]bool // reported: rule and position
	risky   map[string]*stmtChain
	vars    map[*types.Var]ast.Expr // package-level variables' values, when read
}

func run(pass *analysis.Pass) (any, error) {
	exportClientFacts(pass)
	if !importsPgx(pass.Pkg) {
		return nil, nil
	}
	own := readMarkers(pass)
	if len(own) > 0 {
		pass.ExportPackageFact(&serverFact{Methods: own})
	}
	byName := map[string][]ifaceMethod{}
	for _, m := range own {
		if im, ok := lookupMethod(pass.Pkg, m); ok {
			byName[m.Method] = append(byName[m.Method], im)
		}
	}
	for _, pf := range pass.AllPackageFacts() {
		f, ok := pf.Fact.(*serverFact)
		if !ok || pf.Package == pass.Pkg {
			continue
		}
		for _, m := range f.Methods {
			if im, ok := lookupMethod(pf.Package, m); ok {
				byName[m.Method] = append(byName[m.Method], im)
			}
		}
	}
	if len(byName) == 0 {
		return nil, nil
	}
	c := &checker{
		pass:    pass,
		decls:   map[*types.Func]*ast.FuncDecl{},
		locals:  map[*ast.FuncDecl]*localInfo{},
		handles: map[types.Type]bool{},
		seen:    map[string]bool{},
		risky:   map[string]*stmtChain{},
	}
	var handlers []handler
	for _, f := range pass.Files {
		generated := ast.IsGenerated(f)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			fn, _ := pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if fn == nil {
				continue
			}
			c.decls[fn] = fd
			if fd.Recv == nil || generated {
				continue
			}
			for _, im := range byName[fd.Name.Name] {
				if tx := implements(fn.Signature(), im.fn.Signature()); tx != nil {
					handlers = append(handlers, handler{decl: fd, m: im.m, tx: tx, ctx: ctxParam(fn.Signature())})
					break
				}
			}
		}
	}
	for _, h := range handlers {
		c.checkHandler(h)
	}
	return nil, nil
}

func importsPgx(pkg *types.Package) bool {
	return pkg.Path() != pgxPath && imports(pkg, pgxPath)
}

// readMarkers returns the tx-taking methods of the package's interfaces:
// those with an //idemgen:tx line, and, in a file idemgen generated
// without the lines (an older template), the Server methods with a pgx.Tx
// parameter, mode unknown.
func readMarkers(pass *analysis.Pass) []txMethod {
	var out []txMethod
	for _, f := range pass.Files {
		byIdemgen := generatedByIdemgen(f)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				it, ok := ts.Type.(*ast.InterfaceType)
				if !ok {
					continue
				}
				for _, field := range it.Methods.List {
					if len(field.Names) != 1 {
						continue
					}
					m, ok := parseDirective(field.Doc)
					if !ok {
						if !byIdemgen || ts.Name.Name != "Server" || !hasTxParam(pass, field) {
							continue
						}
					}
					m.Interface, m.Method = ts.Name.Name, field.Names[0].Name
					if m.Operation == "" && m.Webhook == "" {
						m.Operation = m.Method
					}
					out = append(out, m)
				}
			}
		}
	}
	return out
}

func parseDirective(doc *ast.CommentGroup) (txMethod, bool) {
	if doc == nil {
		return txMethod{}, false
	}
	for _, c := range doc.List {
		rest, ok := strings.CutPrefix(c.Text, directive)
		if !ok {
			continue
		}
		var m txMethod
		for rest != "" {
			var field string
			key, val, _ := strings.Cut(rest, "=")
			if key == "operation" || key == "webhook" { // the rest of the line
				field, rest = val, ""
			} else {
				field, rest, _ = strings.Cut(val, " ")
			}
			switch key {
			case "mode":
				m.Mode = field
			case "operation":
				m.Operation = field
			case "webhook":
				m.Webhook = field
			}
		}
		return m, true
	}
	return txMethod{}, false
}

func hasTxParam(pass *analysis.Pass, field *ast.Field) bool {
	fn, ok := pass.TypesInfo.Defs[field.Names[0]].(*types.Func)
	return ok && txIndex(fn.Signature()) >= 0
}

// txIndex is the index of sig's pgx.Tx parameter, or -1.
func txIndex(sig *types.Signature) int {
	for i := range sig.Params().Len() {
		if isNamed(sig.Params().At(i).Type(), pgxPath, "Tx") {
			return i
		}
	}
	return -1
}

// ctxParam is sig's first context.Context parameter, or nil.
func ctxParam(sig *types.Signature) *types.Var {
	for i := range sig.Params().Len() {
		if p := sig.Params().At(i); isNamed(p.Type(), "context", "Context") {
			return p
		}
	}
	return nil
}

type ifaceMethod struct {
	fn *types.Func
	m  txMethod
}

func lookupMethod(pkg *types.Package, m txMethod) (ifaceMethod, bool) {
	tn, _ := pkg.Scope().Lookup(m.Interface).(*types.TypeName)
	if tn == nil {
		return ifaceMethod{}, false
	}
	obj, _, _ := types.LookupFieldOrMethod(tn.Type(), false, pkg, m.Method)
	fn, ok := obj.(*types.Func)
	return ifaceMethod{fn, m}, ok
}

// implements reports the tx parameter of sig when sig has the parameters
// and results of the interface method want (the receiver aside).
func implements(sig, want *types.Signature) *types.Var {
	if !types.Identical(types.NewSignatureType(nil, nil, nil, sig.Params(), sig.Results(), sig.Variadic()),
		types.NewSignatureType(nil, nil, nil, want.Params(), want.Results(), want.Variadic())) {
		return nil
	}
	i := txIndex(want)
	if i < 0 {
		return nil
	}
	return sig.Params().At(i)
}

func isNamed(t types.Type, path, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == path && n.Obj().Name() == name
}

// report adds a diagnostic once per rule and position.
func (c *checker) report(rule string, n ast.Node, msg string, fixes ...analysis.SuggestedFix) {
	key := fmt.Sprintf("%s@%d", rule, n.Pos())
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	c.pass.Report(analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Category: rule, Message: msg, SuggestedFixes: fixes})
}

// line renders pos as file:line, the file's base name.
func (c *checker) line(pos token.Pos) string {
	p := c.pass.Fset.Position(pos)
	name := p.Filename
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return fmt.Sprintf("%s:%d", name, p.Line)
}
