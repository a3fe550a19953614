package idemvet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/types/typeutil"
)

// This file follows values for the outbound rule: whether a context is
// the handler's, and whether a key is derived from the request the
// handler serves.

// A valueTest tells whether an expression of a frame's function has a
// property; a resultTest the same of result idx of a call.
type (
	valueTest  func(fr *frame, e ast.Expr, visiting map[*types.Var]bool) bool
	resultTest func(fr *frame, call *ast.CallExpr, idx int, visiting map[*types.Var]bool) bool
)

// allValues reports whether every value the variable id names can hold
// passes: the caller's argument for a parameter bound to one, else each
// value a statement of the function assigns it (at least one). A
// parameter nobody bound, a package-level variable, a range variable
// fail. A variable met again while it is being followed passes: the
// cycle adds no value of its own (ctx = context.WithValue(ctx, ...)).
func (fr *frame) allValues(id *ast.Ident, visiting map[*types.Var]bool, val valueTest, res resultTest) bool {
	v := asVar(fr.c.pass.TypesInfo, id)
	if v == nil {
		return false
	}
	if visiting[v] {
		return true
	}
	if b, ok := fr.bind[v]; ok {
		return !b.handed && val(b.fr, b.expr, visiting)
	}
	li := fr.c.localsOf(fr.decl)
	if e, ok := li.ctxOf[v]; ok {
		return val(fr, e, visiting)
	}
	as := li.assigns[v]
	if len(as) == 0 || (v != fr.h.ctx && fr.isParam(v)) {
		return false
	}
	visiting[v] = true
	defer delete(visiting, v)
	for _, a := range as {
		switch {
		case a.rhs == nil || a.beginFunc:
			return false
		case a.idx >= 0:
			call, ok := ast.Unparen(a.rhs).(*ast.CallExpr)
			if !ok || !res(fr, call, a.idx, visiting) {
				return false
			}
		case !val(fr, a.rhs, visiting):
			return false
		}
	}
	return true
}

func (fr *frame) isParam(v *types.Var) bool {
	for _, p := range fr.params() {
		if p == v {
			return true
		}
	}
	return false
}

// allReturns reports whether result idx of every return statement of
// fr's function passes (at least one; a bare return fails).
func (fr *frame) allReturns(idx int, visiting map[*types.Var]bool, val valueTest, res resultTest) bool {
	ok, any := true, false
	ast.Inspect(fr.decl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			any = true
			if len(n.Results) == 1 {
				if call, isCall := ast.Unparen(n.Results[0]).(*ast.CallExpr); isCall {
					if _, tuple := fr.c.pass.TypesInfo.TypeOf(call).(*types.Tuple); tuple {
						ok = res(fr, call, idx, visiting)
						return ok
					}
				}
			}
			ok = idx < len(n.Results) && val(fr, n.Results[idx], visiting)
		}
		return ok
	})
	return ok && any
}

// fieldValue follows x.name to the value a composite literal gave it.
func (fr *frame) fieldValue(e *ast.SelectorExpr, visiting map[*types.Var]bool, val valueTest) bool {
	if sel := fr.c.pass.TypesInfo.Selections[e]; sel == nil || sel.Kind() != types.FieldVal {
		return false
	}
	v, vfr, found := fr.fieldSource(e.X, e.Sel.Name, 0)
	return found && v != nil && val(vfr, v, visiting)
}

// handlerCtx reports whether the context e, an expression of fr's
// function, is the handler's or derives from it: what a function given
// it returns as a context (context.WithValue, WithCancel, WithTimeout,
// WithDeadline, WithoutCancel, a tracer's Start), not
// context.Background() or TODO(). A context a function literal receives
// is the one the call it is given to was given.
func (fr *frame) handlerCtx(e ast.Expr) bool {
	return handlerCtxIn(fr, e, map[*types.Var]bool{})
}

func handlerCtxIn(fr *frame, e ast.Expr, visiting map[*types.Var]bool) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		v := asVar(fr.c.pass.TypesInfo, e)
		if v != nil && v == fr.h.ctx && len(fr.c.localsOf(fr.decl).assigns[v]) == 0 {
			return true
		}
		return fr.allValues(e, visiting, handlerCtxIn, handlerCtxResult)
	case *ast.SelectorExpr:
		return fr.fieldValue(e, visiting, handlerCtxIn)
	case *ast.CallExpr:
		return handlerCtxResult(fr, e, 0, visiting)
	}
	return false
}

func handlerCtxResult(fr *frame, call *ast.CallExpr, idx int, visiting map[*types.Var]bool) bool {
	if child := fr.enter(call); child != nil {
		return child.allReturns(idx, visiting, handlerCtxIn, handlerCtxResult)
	}
	info := fr.c.pass.TypesInfo
	fn, _ := typeutil.Callee(info, call).(*types.Func)
	if fn == nil {
		return false
	}
	res := fn.Signature().Results()
	if idx >= res.Len() || !isNamed(res.At(idx).Type(), "context", "Context") {
		return false
	}
	for _, a := range call.Args {
		if isNamed(info.TypeOf(a), "context", "Context") && handlerCtxIn(fr, a, visiting) {
			return true
		}
	}
	return false
}

// derived reports whether e, an expression of fr's function, is a key
// derived from the request the handler serves: what a -keyed function
// (downstream.Key, downstream.KeyAs) returned given the handler's
// context, as it is, converted, through a function of that one argument
// (stripe.String(k), uuid.MustParse(k)) or a method without arguments
// (u.String()). The incoming key itself (idem.KeyFromContext(ctx).Value),
// downstream.Derive, a fresh key and a constant are not.
func (fr *frame) derived(e ast.Expr) bool {
	return derivedIn(fr, e, map[*types.Var]bool{})
}

func derivedIn(fr *frame, e ast.Expr, visiting map[*types.Var]bool) bool {
	switch e := ast.Unparen(e).(type) {
	case *ast.StarExpr:
		return derivedIn(fr, e.X, visiting)
	case *ast.UnaryExpr:
		return e.Op == token.AND && derivedIn(fr, e.X, visiting)
	case *ast.Ident:
		return fr.allValues(e, visiting, derivedIn, derivedResult)
	case *ast.SelectorExpr:
		return fr.fieldValue(e, visiting, derivedIn)
	case *ast.CallExpr:
		return derivedResult(fr, e, 0, visiting)
	}
	return false
}

func derivedResult(fr *frame, call *ast.CallExpr, idx int, visiting map[*types.Var]bool) bool {
	info := fr.c.pass.TypesInfo
	if tv, ok := info.Types[call.Fun]; ok && tv.IsType() {
		return idx == 0 && len(call.Args) == 1 && derivedIn(fr, call.Args[0], visiting)
	}
	if child := fr.enter(call); child != nil {
		return child.allReturns(idx, visiting, derivedIn, derivedResult)
	}
	fn, _ := typeutil.Callee(info, call).(*types.Func)
	if fn == nil || idx != 0 {
		return false
	}
	if keyedFlag.matches(fn) {
		return fr.keyedCtx(call)
	}
	sig := fn.Signature()
	switch {
	case sig.Recv() == nil && len(call.Args) == 1 && sig.Params().Len() == 1:
		return derivedIn(fr, call.Args[0], visiting)
	case sig.Recv() != nil && len(call.Args) == 0:
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
			return derivedIn(fr, sel.X, visiting)
		}
	}
	return false
}

// keyedCtx reports whether a call of a -keyed function is given the
// handler's context (or takes none).
func (fr *frame) keyedCtx(call *ast.CallExpr) bool {
	for _, a := range call.Args {
		if isNamed(fr.c.pass.TypesInfo.TypeOf(a), "context", "Context") {
			return fr.handlerCtx(a)
		}
	}
	return true
}

// carries reports whether e, an argument of an outbound call, carries a
// derived key: in itself or a part of it (a field of a literal, an
// argument of a call that made it), or, for a variable, in a value it
// was assigned (ctx = metadata.AppendToOutgoingContext(ctx, "idempotency-key", k)).
func (fr *frame) carries(e ast.Expr, visiting map[*types.Var]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.Ident:
			found = fr.derived(n)
			v := asVar(fr.c.pass.TypesInfo, n)
			if found || v == nil || visiting[v] {
				break
			}
			visiting[v] = true
			if b, ok := fr.bind[v]; ok && !b.handed {
				found = b.fr.carries(b.expr, visiting)
			}
			for _, a := range fr.c.localsOf(fr.decl).assigns[v] {
				if !found && a.rhs != nil && !a.beginFunc {
					found = fr.carries(a.rhs, visiting)
				}
			}
		case *ast.CallExpr, *ast.SelectorExpr:
			found = fr.derived(n.(ast.Expr))
		}
		return !found
	})
	return found
}

// rootVar resolves x (v, &v, *v) to the variable it names and the frame
// whose function declares it, through parameters bound to the caller's
// arguments.
func (fr *frame) rootVar(x ast.Expr) (*types.Var, *frame) {
	switch x := ast.Unparen(x).(type) {
	case *ast.UnaryExpr:
		if x.Op == token.AND {
			return fr.rootVar(x.X)
		}
	case *ast.StarExpr:
		return fr.rootVar(x.X)
	case *ast.Ident:
		v := asVar(fr.c.pass.TypesInfo, x)
		if v == nil {
			return nil, nil
		}
		if b, ok := fr.bind[v]; ok {
			if b.handed {
				return nil, nil
			}
			return b.fr.rootVar(b.expr)
		}
		return v, fr
	}
	return nil, nil
}

// selPath splits x.a.b into x and [a b].
func selPath(e ast.Expr) (ast.Expr, []string) {
	var path []string
	for {
		sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
		if !ok {
			return e, path
		}
		path = append([]string{sel.Sel.Name}, path...)
		e = sel.X
	}
}

// A keySink picks, from a statement on an object (x.a.b = v, whose path
// is [a b]; x.a.M(args), whose path is [a M]), the values it gives the
// object's key, or none.
type keySink func(fr *frame, path []string, n ast.Node) []ast.Expr

// objectValues returns what statements sink picks give the object x (an
// argument of an outbound call made in fr): statements of fr's function
// or a caller's, up to the one declaring x's variable.
func (fr *frame) objectValues(x ast.Expr, sink keySink) []located {
	v, owner := fr.rootVar(x)
	if v == nil {
		return nil
	}
	info := fr.c.pass.TypesInfo
	var out []located
	for f := fr; f != nil; f = f.caller {
		check := func(target ast.Expr, n ast.Node) {
			root, path := selPath(target)
			if len(path) == 0 {
				return
			}
			if rv, rfr := f.rootVar(root); rv != v || rfr != owner {
				return
			}
			for _, val := range sink(f, path, n) {
				out = append(out, located{f, val})
			}
		}
		ast.Inspect(f.decl.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok == token.ASSIGN && len(n.Lhs) == len(n.Rhs) {
					for i, l := range n.Lhs {
						check(l, &ast.AssignStmt{Lhs: []ast.Expr{l}, Tok: n.Tok, Rhs: []ast.Expr{n.Rhs[i]}})
					}
				}
			case *ast.CallExpr:
				if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && info.Selections[sel] != nil {
					check(n.Fun, n)
				}
			}
			return true
		})
		if f == owner {
			break
		}
	}
	return out
}
