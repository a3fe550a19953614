package idemvet

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

const (
	idemclientPath = "github.com/idemgen/idemgen/runtime/idemclient"
	downstreamPath = "github.com/idemgen/idemgen/runtime/downstream"
)

// clientFact marks a function that sends one request through
// idemclient.Do: a method of an idemgen-generated client (or a wrapper
// written like one). It says which of its parameters become Do's context,
// options and request key, so that a call of it is judged as a call of Do.
type clientFact struct {
	Operation  string // the operation's ID; "" when the analyzer could not read it
	Method     string // its HTTP method, when known
	Idempotent bool   // Operation.Idempotent; true when not known
	Ctx        int    // the parameter Do is given as its context; -1: another context
	Opts       int    // the variadic parameter passed on as Do's options; -1: none
	Req        int    // the parameter whose field KeyField becomes the request's key; -1: none
	KeyField   string
}

func (*clientFact) AFact() {}

func (f *clientFact) String() string {
	op := f.Operation
	if op == "" {
		op = "?"
	}
	s := fmt.Sprintf("idemclient call %s %s idempotent=%t ctx=%d opts=%d", op, f.Method, f.Idempotent, f.Ctx, f.Opts)
	if f.Req >= 0 {
		s += fmt.Sprintf(" key=%d.%s", f.Req, f.KeyField)
	}
	return s
}

// exportClientFacts marks the functions of the package that call
// idemclient.Do with a clientFact: those of a file idemgen generated (a
// client's methods), and those that pass on an ...idemclient.CallOption
// parameter of theirs to it (a wrapper written like one). A handler
// calling Do is none of them.
func exportClientFacts(pass *analysis.Pass) {
	if pass.Pkg.Path() == idemclientPath || !imports(pass.Pkg, idemclientPath) {
		return
	}
	var ops map[*types.Var]ast.Expr // package-level variables and their values
	for _, f := range pass.Files {
		generated := generatedByIdemgen(f)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			fn, _ := pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if fn == nil {
				continue
			}
			var do *ast.CallExpr
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if _, ok := n.(*ast.FuncLit); ok || do != nil {
					return false
				}
				if call, ok := n.(*ast.CallExpr); ok && isFunc(typeutil.Callee(pass.TypesInfo, call), idemclientPath, "Do") && len(call.Args) >= 5 {
					do = call
				}
				return do == nil
			})
			if do == nil {
				continue
			}
			if ops == nil {
				ops = packageVars(pass)
			}
			if cf := describeClient(pass, fn, fd, do, ops); generated || cf.Opts >= 0 {
				pass.ExportObjectFact(fn, cf)
			}
		}
	}
}

// describeClient reads the clientFact of fn, whose body fd makes the call
// do of idemclient.Do.
func describeClient(pass *analysis.Pass, fn *types.Func, fd *ast.FuncDecl, do *ast.CallExpr, ops map[*types.Var]ast.Expr) *clientFact {
	info := pass.TypesInfo
	params := fn.Signature().Params()
	param := func(e ast.Expr) int {
		if id, ok := ast.Unparen(e).(*ast.Ident); ok {
			for i := range params.Len() {
				if params.At(i) == info.ObjectOf(id) {
					return i
				}
			}
		}
		return -1
	}
	f := &clientFact{Idempotent: true, Ctx: param(do.Args[0]), Opts: -1, Req: -1}
	if do.Ellipsis.IsValid() && len(do.Args) == 6 {
		f.Opts = param(do.Args[5])
	}
	// The operation: &clientOpX, a package-level Operation literal.
	if op, ok := operationOf(info, ops, do.Args[2]); ok {
		f.Operation, f.Method, f.Idempotent = op.id, op.method, op.idempotent
	}
	// The request's key: r.Key = idemclient.Format(*req.IdempotencyKey).
	r, _ := ast.Unparen(do.Args[3]).(*ast.Ident)
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != len(as.Rhs) || r == nil {
			return true
		}
		for i, l := range as.Lhs {
			sel, ok := ast.Unparen(l).(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Key" {
				continue
			}
			if x, ok := ast.Unparen(sel.X).(*ast.Ident); !ok || info.ObjectOf(x) != info.ObjectOf(r) {
				continue
			}
			ast.Inspect(as.Rhs[i], func(n ast.Node) bool {
				if s, ok := n.(*ast.SelectorExpr); ok && f.Req < 0 {
					if p := param(s.X); p >= 0 {
						f.Req, f.KeyField = p, s.Sel.Name
					}
				}
				return f.Req < 0
			})
		}
		return true
	})
	return f
}

// packageVars maps the package's variables to their values.
func packageVars(pass *analysis.Pass) map[*types.Var]ast.Expr {
	out := map[*types.Var]ast.Expr{}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				if len(vs.Values) != len(vs.Names) {
					continue
				}
				for i, id := range vs.Names {
					if v, ok := pass.TypesInfo.Defs[id].(*types.Var); ok {
						out[v] = vs.Values[i]
					}
				}
			}
		}
	}
	return out
}

func imports(pkg *types.Package, path string) bool {
	for _, p := range pkg.Imports() {
		if p.Path() == path {
			return true
		}
	}
	return false
}

// isFunc reports whether obj is the function path.name (a generic one
// in any instantiation).
func isFunc(obj types.Object, path, name string) bool {
	fn, ok := obj.(*types.Func)
	if !ok {
		return false
	}
	fn = fn.Origin()
	return fn.Pkg() != nil && fn.Pkg().Path() == path && fn.Name() == name && fn.Signature().Recv() == nil
}

// A clientCall is a call that sends a request through idemclient.Do: Do
// itself, or a function with a clientFact.
type clientCall struct {
	op         string // the operation's ID, or the callee's name
	method     string
	idempotent bool
	ctx        ast.Expr   // nil: the callee uses a context of its own
	opts       []ast.Expr // the call options given
	req        ast.Expr   // the request, whose field keyField is its key; nil: none
	keyField   string
}

// clientCallOf returns the clientCall of call to fn, or nil when fn sends
// no idemclient request. Besides Do and the functions with a clientFact,
// a method of an interface shaped like a generated client's
// (ctx, req, ...idemclient.CallOption) counts, its operation taken for
// an idempotent one.
func (c *checker) clientCallOf(call *ast.CallExpr, fn *types.Func) *clientCall {
	args := call.Args
	if isFunc(fn, idemclientPath, "Do") && len(args) >= 5 {
		cc := &clientCall{op: "idemclient.Do", idempotent: true, ctx: args[0], opts: args[5:], req: args[3], keyField: "Key"}
		if c.vars == nil {
			c.vars = packageVars(c.pass)
		}
		if op, ok := operationOf(c.pass.TypesInfo, c.vars, args[2]); ok {
			cc.method, cc.idempotent = op.method, op.idempotent
			if op.id != "" {
				cc.op = op.id
			}
		}
		return cc
	}
	var f clientFact
	if c.pass.ImportObjectFact(fn, &f) {
		cc := &clientCall{op: f.Operation, method: f.Method, idempotent: f.Idempotent}
		if cc.op == "" {
			cc.op = fn.Name()
		}
		if f.Ctx >= 0 && f.Ctx < len(args) {
			cc.ctx = args[f.Ctx]
		}
		if f.Opts >= 0 && f.Opts < len(args) {
			cc.opts = args[f.Opts:]
		}
		if f.Req >= 0 && f.Req < len(args) {
			cc.req, cc.keyField = args[f.Req], f.KeyField
		}
		return cc
	}
	sig := fn.Signature()
	if recv := sig.Recv(); recv != nil && types.IsInterface(recv.Type()) && takesContext(sig) && len(args) > 0 {
		if i := callOptions(sig); i >= 0 && i <= len(args) {
			return &clientCall{op: fn.Name(), idempotent: true, ctx: args[0], opts: args[i:]}
		}
	}
	return nil
}

// sendsRequest reports whether call is to a function with a clientFact
// (of this package too: the outbound rule judges the call, not its body).
func (c *checker) sendsRequest(call *ast.CallExpr) bool {
	fn := typeutil.StaticCallee(c.pass.TypesInfo, call)
	return fn != nil && c.pass.ImportObjectFact(fn, new(clientFact))
}

// An operation is what an idemclient.Operation literal says.
type operation struct {
	id, method string
	idempotent bool
}

// operationOf reads the Operation literal op (an argument of Do) points
// to: &v, v a variable of vars.
func operationOf(info *types.Info, vars map[*types.Var]ast.Expr, op ast.Expr) (operation, bool) {
	u, ok := ast.Unparen(op).(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return operation{}, false
	}
	id, ok := ast.Unparen(u.X).(*ast.Ident)
	if !ok {
		return operation{}, false
	}
	lit, ok := ast.Unparen(vars[asVar(info, id)]).(*ast.CompositeLit)
	if !ok {
		return operation{}, false
	}
	var out operation
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		name, _ := kv.Key.(*ast.Ident)
		tv := info.Types[kv.Value]
		switch {
		case name == nil || tv.Value == nil:
		case name.Name == "ID" && tv.Value.Kind() == constant.String:
			out.id = constant.StringVal(tv.Value)
		case name.Name == "Method" && tv.Value.Kind() == constant.String:
			out.method = constant.StringVal(tv.Value)
		case name.Name == "Idempotent" && tv.Value.Kind() == constant.Bool:
			out.idempotent = constant.BoolVal(tv.Value)
		}
	}
	return out, true
}

// callOptions is the index of sig's ...idemclient.CallOption parameter,
// or -1.
func callOptions(sig *types.Signature) int {
	n := sig.Params().Len()
	if !sig.Variadic() {
		return -1
	}
	if last, ok := sig.Params().At(n - 1).Type().(*types.Slice); ok && isNamed(last.Elem(), idemclientPath, "CallOption") {
		return n - 1
	}
	return -1
}

// generatedByIdemgen reports whether f carries idemgen's "Code generated"
// line.
func generatedByIdemgen(f *ast.File) bool {
	return ast.IsGenerated(f) && len(f.Comments) > 0 && strings.Contains(f.Comments[0].Text(), "by idemgen")
}
