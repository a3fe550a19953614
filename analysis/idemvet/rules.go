package idemvet

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// maxFrames bounds the functions checked on behalf of one handler.
const maxFrames = 500

// checkHandler checks h and the package's functions it calls.
func (c *checker) checkHandler(h handler) {
	root := &frame{c: c, h: &h, decl: h.decl, bind: map[*types.Var]binding{h.tx: {handed: true}}}
	done := map[string]bool{}
	var visit func(fr *frame)
	visit = func(fr *frame) {
		k := fr.key()
		if done[k] || len(done) >= maxFrames {
			return
		}
		done[k] = true
		ast.Inspect(fr.decl.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			c.checkStatement(fr, call)
			c.checkArgs(fr, call)
			if h.m.Mode == "atomic" || h.m.Mode == "inbox" {
				c.checkOutbound(fr, call)
			}
			if child := fr.enter(call); child != nil && !c.sendsRequest(call) {
				visit(child)
			}
			return true
		})
		c.checkHandled(fr)
	}
	visit(root)
}

// isHandle reports whether t runs SQL statements itself: it has Exec (or
// ExecContext) and Query, QueryRow (or their Context forms) taking a
// context first: a pool, a connection, a transaction, sqlc's DBTX.
func (c *checker) isHandle(t types.Type) bool {
	if t == nil {
		return false
	}
	if v, ok := c.handles[t]; ok {
		return v
	}
	ms := c.msets.MethodSet(t)
	if _, isPtr := t.(*types.Pointer); !isPtr && !types.IsInterface(t) {
		if _, named := types.Unalias(t).(*types.Named); named {
			ms = c.msets.MethodSet(types.NewPointer(t))
		}
	}
	has := func(names ...string) bool {
		for _, n := range names {
			for i := range ms.Len() {
				fn, ok := ms.At(i).Obj().(*types.Func)
				if ok && fn.Name() == n && takesContext(fn.Signature()) {
					return true
				}
			}
		}
		return false
	}
	v := has("Exec", "ExecContext") && has("Query", "QueryRow", "QueryContext", "QueryRowContext")
	c.handles[t] = v
	return v
}

// isQueries reports whether t is (a pointer to) a sqlc Queries: a struct
// of another package holding a handle, with a WithTx method.
func (c *checker) isQueries(t types.Type) bool {
	if t == nil {
		return false
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == c.pass.Pkg {
		return false
	}
	st, ok := n.Underlying().(*types.Struct)
	if !ok {
		return false
	}
	obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(n), false, n.Obj().Pkg(), "WithTx")
	if _, ok := obj.(*types.Func); !ok {
		return false
	}
	for i := range st.NumFields() {
		if c.isHandle(st.Field(i).Type()) {
			return true
		}
	}
	return false
}

func takesContext(sig *types.Signature) bool {
	return sig.Params().Len() > 0 && isNamed(sig.Params().At(0).Type(), "context", "Context")
}

// methodCall returns the receiver expression and the method of call, when
// it calls a method.
func (c *checker) methodCall(call *ast.CallExpr) (ast.Expr, *types.Func) {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return nil, nil
	}
	s := c.pass.TypesInfo.Selections[sel]
	if s == nil || s.Kind() != types.MethodVal {
		return nil, nil
	}
	fn, _ := s.Obj().(*types.Func)
	return sel.X, fn
}

// isStatement returns the receiver of call when call runs a statement: a
// method taking a context of a handle or a sqlc Queries.
func (c *checker) isStatement(call *ast.CallExpr) ast.Expr {
	recv, fn := c.methodCall(call)
	if fn == nil || !takesContext(fn.Signature()) {
		return nil
	}
	t := c.pass.TypesInfo.TypeOf(recv)
	if c.isHandle(t) || c.isQueries(t) {
		return recv
	}
	return nil
}

// handedMsg says why a statement outside tx is wrong.
func handedMsg(fr *frame) string {
	return fmt.Sprintf("the transaction that also stores %s: what it writes commits even when the request fails, and the retry writes it again", fr.h.m.record())
}

// checkStatement: rule pool, a statement through a handle that is not tx.
func (c *checker) checkStatement(fr *frame, call *ast.CallExpr) {
	recv := c.isStatement(call)
	if recv == nil {
		return
	}
	o := fr.classify(recv, nil)
	if o.kind != foreignOrigin || o.viaStmt {
		return
	}
	fix := c.receiverFix(fr, call, recv)
	hint := "; use tx"
	if fix == nil && fr.txName() == "" && fr.caller != nil {
		hint = "; pass tx down and use it"
	}
	c.report("pool", call, fmt.Sprintf("%s: %s runs outside tx, %s%s", fr.chain(), types.ExprString(call.Fun), handedMsg(fr), hint), fix...)
}

// receiverFix replaces a pool receiver with tx, adds .WithTx(tx) to a
// Queries, or gives New tx instead of the pool.
func (c *checker) receiverFix(fr *frame, call *ast.CallExpr, recv ast.Expr) []analysis.SuggestedFix {
	tx := fr.txName()
	if tx == "" {
		return nil
	}
	info := c.pass.TypesInfo
	txType := fr.h.tx.Type()
	t := info.TypeOf(recv)
	_, method := c.methodCall(call)
	if c.isQueries(t) {
		if inner, ok := ast.Unparen(recv).(*ast.CallExpr); ok && len(inner.Args) == 1 {
			if fn := typeutil.StaticCallee(info, inner); fn != nil && fn.Signature().Params().Len() == 1 &&
				types.AssignableTo(txType, fn.Signature().Params().At(0).Type()) {
				return edit("use tx", inner.Args[0].Pos(), inner.Args[0].End(), tx)
			}
		}
		obj, _, _ := types.LookupFieldOrMethod(t, true, nil, "WithTx")
		if fn, ok := obj.(*types.Func); ok && fn.Signature().Params().Len() == 1 && types.AssignableTo(txType, fn.Signature().Params().At(0).Type()) {
			return edit("use tx (WithTx)", recv.End(), recv.End(), ".WithTx("+tx+")")
		}
		return nil
	}
	obj, _, _ := types.LookupFieldOrMethod(txType, true, nil, method.Name())
	if fn, ok := obj.(*types.Func); ok && types.Identical(
		types.NewSignatureType(nil, nil, nil, fn.Signature().Params(), fn.Signature().Results(), fn.Signature().Variadic()),
		types.NewSignatureType(nil, nil, nil, method.Signature().Params(), method.Signature().Results(), method.Signature().Variadic())) {
		return edit("use tx", recv.Pos(), recv.End(), tx)
	}
	return nil
}

func edit(msg string, pos, end token.Pos, text string) []analysis.SuggestedFix {
	return []analysis.SuggestedFix{{Message: msg, TextEdits: []analysis.TextEdit{{Pos: pos, End: end, NewText: []byte(text)}}}}
}

// checkArgs: rule pool, a handle that is not tx given to a function of
// another package (events.Enqueue(ctx, s.pool, ...), pgx.BeginFunc).
// Constructors (New(pool), q.WithTx) do no I/O: the statement on their
// result is reported.
func (c *checker) checkArgs(fr *frame, call *ast.CallExpr) {
	info := c.pass.TypesInfo
	fn, _ := typeutil.Callee(info, call).(*types.Func)
	if fn == nil || fn.Pkg() == c.pass.Pkg || c.isStatement(call) != nil {
		return
	}
	sig := fn.Signature()
	for i := range sig.Results().Len() {
		if t := sig.Results().At(i).Type(); c.isHandle(t) || c.isQueries(t) {
			return
		}
	}
	for i, a := range call.Args {
		if i >= sig.Params().Len() || sig.Variadic() && i >= sig.Params().Len()-1 {
			break
		}
		pt := sig.Params().At(i).Type()
		if !c.takesHandle(pt) || !(c.isHandle(info.TypeOf(a)) || c.isQueries(info.TypeOf(a))) {
			continue
		}
		o := fr.classify(a, nil)
		if o.kind != foreignOrigin || o.viaStmt {
			continue
		}
		var fix []analysis.SuggestedFix
		if tx := fr.txName(); tx != "" && types.AssignableTo(fr.h.tx.Type(), pt) {
			fix = edit("use tx", a.Pos(), a.End(), tx)
		}
		c.report("pool", a, fmt.Sprintf("%s: %s is given %s, not tx, %s; use tx", fr.chain(), types.ExprString(call.Fun), types.ExprString(a), handedMsg(fr)), fix...)
	}
}

// takesHandle reports whether a parameter of type t runs statements on
// what it is given: a handle, or an interface with a Begin or Exec method
// (pgx.BeginFunc's db).
func (c *checker) takesHandle(t types.Type) bool {
	if c.isHandle(t) || c.isQueries(t) {
		return true
	}
	it, ok := t.Underlying().(*types.Interface)
	if !ok {
		return false
	}
	for i := range it.NumMethods() {
		switch it.Method(i).Name() {
		case "Begin", "BeginTx", "Exec", "ExecContext", "Query", "QueryRow":
			return true
		}
	}
	return false
}

func asVar(info *types.Info, id *ast.Ident) *types.Var {
	v, _ := info.ObjectOf(id).(*types.Var)
	return v
}
