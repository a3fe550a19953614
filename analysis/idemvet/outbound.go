package idemvet

import (
	"fmt"
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/types/typeutil"
)

// checkOutbound: rule outbound, a call out of the process in an atomic
// operation or a webhook receiver that a retry would make again under
// another key, or under none.
func (c *checker) checkOutbound(fr *frame, call *ast.CallExpr) {
	fn, _ := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	if fn == nil {
		return
	}
	if cc := c.clientCallOf(call, fn); cc != nil {
		c.checkClientCall(fr, call, cc)
		return
	}
	params := stripeParams(fn)
	if params < 0 && !isOutbound(fn) {
		return
	}
	if c.keyed(fr, call, fn, params) {
		return
	}
	c.report("outbound", call, outboundMsg(fr, types.ExprString(call.Fun)+" calls out of the process"))
}

// outboundMsg says why a call in fr's handler is wrong and what to do.
func outboundMsg(fr *frame, what string) string {
	if fr.h.m.Webhook != "" {
		return fmt.Sprintf("%s: %s in %s: it runs again when the transaction rolls back after it returned (the sender retries the delivery); send it through the outbox in tx (events.Enqueue) instead",
			fr.chain(), what, fr.h.m.what())
	}
	return fmt.Sprintf("%s: %s in %s: it runs again when the client hangs up or the transaction rolls back after it returned (the retry runs the handler anew); "+
		"if the other side is idempotent by key, send it a key derived from this request (downstream.Key, or a generated client given the handler's ctx: docs/downstream.md), "+
		"else use x-idempotent mode: lease with a recovery hook (idem.Config.Recover)",
		fr.chain(), what, fr.h.m.what())
}

// keyed reports whether call, to fn, carries a derived key: for
// net/http's Client.Do and RoundTrip, in a header set on the request;
// for stripe-go, on the params (SetIdempotencyKey, Params.IdempotencyKey);
// for any other call, in an argument, a part of one, or a statement
// setting something of an argument's variable.
func (c *checker) keyed(fr *frame, call *ast.CallExpr, fn *types.Func, params int) bool {
	switch {
	case params >= 0:
		if params >= len(call.Args) {
			return false
		}
		p := call.Args[params]
		if ps, pfr, ok := fr.fieldSource(p, "Params", 0); ok && ps != nil {
			if k, kfr, ok := pfr.fieldSource(ps, "IdempotencyKey", 0); ok && k != nil && kfr.derived(k) {
				return true
			}
		}
		return anyDerived(fr.objectValues(p, stripeSink))
	case fn.Pkg().Path() == "net/http":
		if (fn.Name() == "Do" || fn.Name() == "RoundTrip") && len(call.Args) == 1 {
			return anyDerived(fr.objectValues(call.Args[0], headerSink))
		}
		return false
	}
	for _, a := range call.Args {
		if fr.carries(a, map[*types.Var]bool{}) || anyDerived(fr.objectValues(a, anySink)) {
			return true
		}
	}
	return false
}

// headerSink picks v of r.Header.Set(name, v) and r.Header.Add(name, v).
func headerSink(fr *frame, path []string, n ast.Node) []ast.Expr {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(path) != 2 || path[0] != "Header" || (path[1] != "Set" && path[1] != "Add") || len(call.Args) != 2 {
		return nil
	}
	_, m := fr.c.methodCall(call)
	if m == nil || !isNamed(m.Signature().Recv().Type(), "net/http", "Header") {
		return nil
	}
	return call.Args[1:]
}

// stripeSink picks v of p.SetIdempotencyKey(v) and p.IdempotencyKey = v
// (p.Params.IdempotencyKey) on stripe-go's params.
func stripeSink(fr *frame, path []string, n ast.Node) []ast.Expr {
	last := path[len(path)-1]
	switch n := n.(type) {
	case *ast.CallExpr:
		if _, m := fr.c.methodCall(n); last == "SetIdempotencyKey" && m != nil && isStripe(m.Pkg()) && len(n.Args) == 1 {
			return n.Args
		}
	case *ast.AssignStmt:
		if last == "IdempotencyKey" {
			return n.Rhs
		}
	}
	return nil
}

// anySink picks every value a statement gives the object.
func anySink(_ *frame, _ []string, n ast.Node) []ast.Expr {
	switch n := n.(type) {
	case *ast.CallExpr:
		return n.Args
	case *ast.AssignStmt:
		return n.Rhs
	}
	return nil
}

// A located value is an expression of a frame's function.
type located struct {
	fr *frame
	e  ast.Expr
}

func anyDerived(vs []located) bool {
	for _, v := range vs {
		if v.fr.derived(v.e) {
			return true
		}
	}
	return false
}

// isStripe reports whether pkg is stripe-go (github.com/stripe/stripe-go/vNN
// or a package of it).
func isStripe(pkg *types.Package) bool {
	if pkg == nil {
		return false
	}
	rest, ok := strings.CutPrefix(pkg.Path(), "github.com/stripe/stripe-go/v")
	if !ok {
		return false
	}
	major, _, _ := strings.Cut(rest, "/")
	return major != "" && strings.Trim(major, "0123456789") == ""
}

// stripeParams returns the index of the params parameter of fn when fn
// calls Stripe's API through stripe-go with a request that can carry an
// idempotency key (a *XParams embedding stripe.Params:
// sc.V1Refunds.Create(ctx, params), refund.New(params)), else -1. Reads
// (Get, Retrieve, List, Search) are left out: a key changes nothing for
// them.
func stripeParams(fn *types.Func) int {
	if !isStripe(fn.Pkg()) {
		return -1
	}
	for _, read := range []string{"Get", "Retrieve", "List", "Search"} {
		if strings.HasPrefix(fn.Name(), read) {
			return -1
		}
	}
	ps := fn.Signature().Params()
	for i := range ps.Len() {
		p, ok := ps.At(i).Type().(*types.Pointer)
		if !ok {
			continue
		}
		st, ok := p.Elem().Underlying().(*types.Struct)
		if !ok {
			continue
		}
		for j := range st.NumFields() {
			if f := st.Field(j); f.Embedded() && f.Name() == "Params" && isStripe(f.Pkg()) {
				if n, ok := types.Unalias(f.Type()).(*types.Named); ok && isStripe(n.Obj().Pkg()) {
					return i
				}
			}
		}
	}
	return -1
}

// idempotentMethod are the methods HTTP defines as idempotent (RFC 9110
// 9.2.2): repeating a call of one has the effect of making it once, as
// the generated client itself assumes when it retries one without a key.
var idempotentMethod = map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true, "PUT": true, "DELETE": true}

// checkClientCall: rule outbound for a call through idemclient.Do (a
// generated client's method). A call of an idempotent operation is
// accepted when its key is derived from the request: given explicitly
// (idemclient.WithIdempotencyKey, the request's key field) from
// downstream.Key, or left to the client, which derives it when it is
// given the handler's context.
func (c *checker) checkClientCall(fr *frame, call *ast.CallExpr, cc *clientCall) {
	what := types.ExprString(call.Fun)
	if cc.op != "" && !strings.HasSuffix(strings.ToLower(what), strings.ToLower(cc.op)) {
		what += " (" + cc.op + ")"
	}
	if !cc.idempotent {
		if idempotentMethod[cc.method] {
			return
		}
		c.report("outbound", call, outboundMsg(fr, fmt.Sprintf("%s calls an operation that takes no idempotency key (make it idempotent with x-idempotent, and the client sends one)", what)))
		return
	}
	keys := fr.explicitKeys(cc)
	for _, k := range keys {
		if !k.fr.derived(k.e) {
			c.report("outbound", call, fmt.Sprintf("%s: %s may act twice in %s: its idempotency key %s is not derived from this request, so a retry of the handler does not send the call the key it sent before; "+
				"it gets a derived key without an explicit key (the client derives one from the handler's ctx) or with one from downstream.Key (docs/downstream.md)",
				fr.chain(), what, fr.h.m.what(), types.ExprString(k.e)))
			return
		}
	}
	switch {
	case len(keys) > 0:
	case fr.h.m.Webhook != "":
		c.report("outbound", call, outboundMsg(fr, what+" calls out of the process"))
	case cc.ctx == nil || !fr.handlerCtx(cc.ctx):
		ctx := "uses a context of its own"
		if cc.ctx != nil {
			ctx = "is given " + types.ExprString(cc.ctx)
		}
		c.report("outbound", call, fmt.Sprintf("%s: %s may act twice in %s: it %s, not the handler's ctx, so it sends a fresh idempotency key on every attempt of the handler; "+
			"it gets a key derived from this request only with the handler's ctx (or a context made from it; docs/downstream.md)",
			fr.chain(), what, fr.h.m.what(), ctx))
	}
}

// explicitKeys are the keys cc is given by its caller: the arguments of
// idemclient.WithIdempotencyKey among its options, and what the
// request's key field is set to.
func (fr *frame) explicitKeys(cc *clientCall) []located {
	var out []located
	for _, o := range cc.opts {
		out = append(out, fr.withKeys(o, map[*types.Var]bool{})...)
	}
	if cc.req == nil {
		return out
	}
	if v, vfr, ok := fr.fieldSource(cc.req, cc.keyField, 0); ok && v != nil && !isNil(vfr, v) {
		out = append(out, located{vfr, v})
	}
	cleared := false
	for _, v := range fr.objectValues(cc.req, func(_ *frame, path []string, n ast.Node) []ast.Expr {
		if as, ok := n.(*ast.AssignStmt); ok && len(path) == 1 && path[0] == cc.keyField {
			return as.Rhs
		}
		return nil
	}) {
		if isNil(v.fr, v.e) {
			cleared = true
		} else {
			out = append(out, v)
		}
	}
	// The request the handler was given, passed on: its key field holds
	// the incoming key (the generated server sets it).
	if in, ifr := fr.handlerParam(cc.req, 0); in != nil && !cleared {
		out = append(out, located{ifr, &ast.SelectorExpr{X: in, Sel: ast.NewIdent(cc.keyField)}})
	}
	return out
}

func isNil(fr *frame, e ast.Expr) bool {
	return fr.c.pass.TypesInfo.Types[e].IsNil()
}

// handlerParam returns the identifier of the handler's parameter x is
// (v, &v, *v, or a variable given one once), and the handler's frame;
// nil when x is something else.
func (fr *frame) handlerParam(x ast.Expr, depth int) (*ast.Ident, *frame) {
	if depth > maxDepth {
		return nil, nil
	}
	switch x := ast.Unparen(x).(type) {
	case *ast.UnaryExpr:
		return fr.handlerParam(x.X, depth+1)
	case *ast.StarExpr:
		return fr.handlerParam(x.X, depth+1)
	case *ast.Ident:
		v := asVar(fr.c.pass.TypesInfo, x)
		if v == nil {
			return nil, nil
		}
		if b, ok := fr.bind[v]; ok {
			if b.handed {
				return nil, nil
			}
			return b.fr.handlerParam(b.expr, depth+1)
		}
		if fr.caller == nil && fr.isParam(v) {
			return x, fr
		}
		if as := fr.c.localsOf(fr.decl).assigns[v]; len(as) == 1 && as[0].idx < 0 && as[0].rhs != nil && !as[0].beginFunc {
			return fr.handlerParam(as[0].rhs, depth+1)
		}
	}
	return nil, nil
}

// withKeys finds the keys of idemclient.WithIdempotencyKey calls in the
// option e, or in what its variable was given (opts = append(opts, ...)).
func (fr *frame) withKeys(e ast.Expr, visiting map[*types.Var]bool) []located {
	info := fr.c.pass.TypesInfo
	var out []located
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if isFunc(typeutil.Callee(info, n), idemclientPath, "WithIdempotencyKey") && len(n.Args) == 1 {
				out = append(out, located{fr, n.Args[0]})
				return false
			}
		case *ast.Ident:
			v := asVar(info, n)
			if v == nil || visiting[v] {
				break
			}
			visiting[v] = true
			if b, ok := fr.bind[v]; ok && !b.handed {
				out = append(out, b.fr.withKeys(b.expr, visiting)...)
			}
			for _, a := range fr.c.localsOf(fr.decl).assigns[v] {
				if a.rhs != nil && !a.beginFunc {
					out = append(out, fr.withKeys(a.rhs, visiting)...)
				}
			}
		}
		return true
	})
	return out
}
