package idemvet

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/types/typeutil"
)

// maxDepth bounds how deep calls into the package's own functions are
// followed from a handler.
const maxDepth = 8

// A frame is a function being checked on behalf of a handler: the handler
// itself, or a function of the package it calls (directly or not), with
// its parameters bound to the caller's arguments.
type frame struct {
	c      *checker
	h      *handler
	decl   *ast.FuncDecl
	bind   map[*types.Var]binding
	caller *frame
	site   *ast.CallExpr // the call in caller that entered this frame
	depth  int
}

// A binding is what a parameter was given: an expression of the caller's
// frame, or (handed) the engine's tx itself.
type binding struct {
	expr   ast.Expr
	fr     *frame
	handed bool
}

// chain names the calls from the handler to fr: "CreateBooking → s.insert".
func (fr *frame) chain() string {
	var parts []string
	for f := fr; f != nil; f = f.caller {
		if f.caller == nil {
			parts = append(parts, f.decl.Name.Name)
		} else {
			parts = append(parts, types.ExprString(f.site.Fun))
		}
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, " → ")
}

// onStack reports whether decl is being checked by fr or a caller of it.
func (fr *frame) onStack(decl *ast.FuncDecl) bool {
	for f := fr; f != nil; f = f.caller {
		if f.decl == decl {
			return true
		}
	}
	return false
}

// enter returns the frame of call's callee, or nil when it is not a
// function of this package with a body, is already on the stack, or is
// too deep.
func (fr *frame) enter(call *ast.CallExpr) *frame {
	c := fr.c
	fn := typeutil.StaticCallee(c.pass.TypesInfo, call)
	if fn == nil || fn.Pkg() != c.pass.Pkg || fr.depth >= maxDepth {
		return nil
	}
	decl := c.decls[fn]
	if decl == nil || fr.onStack(decl) {
		return nil
	}
	child := &frame{c: c, h: fr.h, decl: decl, bind: map[*types.Var]binding{}, caller: fr, site: call, depth: fr.depth + 1}
	sig := fn.Signature()
	if recv := sig.Recv(); recv != nil {
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
			child.bind[recv] = binding{expr: sel.X, fr: fr}
		}
	}
	for i := range sig.Params().Len() {
		if i < len(call.Args) && !(sig.Variadic() && i == sig.Params().Len()-1) {
			child.bind[sig.Params().At(i)] = binding{expr: call.Args[i], fr: fr}
		}
	}
	return child
}

// key identifies fr's function with what its database handles are.
func (fr *frame) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", fr.decl.Pos())
	for _, v := range fr.params() {
		if fr.c.isHandle(v.Type()) || fr.c.isQueries(v.Type()) {
			o := origin{kind: foreignOrigin}
			if bd, ok := fr.bind[v]; ok {
				o = bd.origin()
			}
			fmt.Fprintf(&b, ",%s", o)
		}
	}
	return b.String()
}

// params are the receiver and parameters of fr's function.
func (fr *frame) params() []*types.Var {
	fn, _ := fr.c.pass.TypesInfo.Defs[fr.decl.Name].(*types.Func)
	if fn == nil {
		return nil
	}
	var vs []*types.Var
	if r := fn.Signature().Recv(); r != nil {
		vs = append(vs, r)
	}
	for i := range fn.Signature().Params().Len() {
		vs = append(vs, fn.Signature().Params().At(i))
	}
	return vs
}

// txName is the name of a variable holding the handed tx (not a
// savepoint) in fr's function, for fixes; "" when there is none.
func (fr *frame) txName() string {
	for _, v := range fr.params() {
		if v.Name() == "" || v.Name() == "_" {
			continue
		}
		if b, ok := fr.bind[v]; ok {
			o := b.origin()
			if o.kind == handedOrigin && !o.savepoint {
				return v.Name()
			}
		}
	}
	return ""
}

type originKind int

const (
	unknownOrigin originKind = iota
	handedOrigin             // the engine's tx, or derived from it
	foreignOrigin            // a pool, a connection, a transaction of its own
)

// An origin is where a database handle comes from.
type origin struct {
	kind originKind
	// handed: a savepoint of the handed tx (tx.Begin, pgx.BeginFunc's
	// argument); spVar is the variable tx.Begin's result was assigned to
	// (its Rollback undoes a failed statement), autoRollback is set for
	// pgx.BeginFunc, which rolls back itself.
	savepoint, autoRollback bool
	spVar                   *types.Var
	// viaStmt: foreign as the result of a statement (pool.Begin,
	// pool.Acquire), which is reported itself.
	viaStmt bool
}

func (o origin) String() string {
	switch o.kind {
	case handedOrigin:
		if o.savepoint {
			return "savepoint"
		}
		return "tx"
	case foreignOrigin:
		return "foreign"
	}
	return "unknown"
}

// merge joins the origins of a variable's assignments: foreign wins, then
// unknown.
func merge(a, b origin) origin {
	switch {
	case a.kind == foreignOrigin:
		return a
	case b.kind == foreignOrigin:
		return b
	case a.kind == unknownOrigin || b.kind == unknownOrigin:
		return origin{}
	}
	a.savepoint = a.savepoint && b.savepoint
	a.autoRollback = a.autoRollback && b.autoRollback
	if a.spVar != b.spVar {
		a.spVar = nil
	}
	return a
}

func (b binding) origin() origin {
	if b.handed {
		return origin{kind: handedOrigin}
	}
	return b.fr.classify(b.expr, nil)
}

// classify tells where the handle e, an expression of fr's function,
// comes from. self is the variable being classified, when e is one of its
// assignments (to find tx.Begin's savepoint variable).
func (fr *frame) classify(e ast.Expr, self *types.Var) origin {
	return fr.classifyIn(e, self, map[*types.Var]bool{})
}

func (fr *frame) classifyIn(e ast.Expr, self *types.Var, visiting map[*types.Var]bool) origin {
	info := fr.c.pass.TypesInfo
	switch e := ast.Unparen(e).(type) {
	case *ast.StarExpr:
		return fr.classifyIn(e.X, self, visiting)
	case *ast.UnaryExpr:
		return fr.classifyIn(e.X, self, visiting)
	case *ast.TypeAssertExpr:
		return fr.classifyIn(e.X, self, visiting)
	case *ast.IndexExpr:
		return origin{kind: foreignOrigin}
	case *ast.Ident:
		v, _ := info.ObjectOf(e).(*types.Var)
		if v == nil {
			return origin{}
		}
		if b, ok := fr.bind[v]; ok {
			if b.handed {
				return origin{kind: handedOrigin}
			}
			return b.fr.classifyIn(b.expr, nil, visiting)
		}
		if v.Parent() != nil && v.Pkg() != nil && v.Parent() == v.Pkg().Scope() {
			return origin{kind: foreignOrigin} // a package-level variable
		}
		for _, p := range fr.params() {
			if p == v {
				return origin{kind: foreignOrigin} // the service's receiver, a parameter nobody bound
			}
		}
		if visiting[v] {
			return origin{}
		}
		visiting[v] = true
		defer delete(visiting, v)
		as := fr.c.localsOf(fr.decl).assigns[v]
		if len(as) == 0 {
			return origin{}
		}
		o := fr.classifyAssign(as[0], v, visiting)
		for _, a := range as[1:] {
			o = merge(o, fr.classifyAssign(a, v, visiting))
		}
		return o
	case *ast.SelectorExpr:
		sel := info.Selections[e]
		if sel == nil {
			if _, ok := info.ObjectOf(e.Sel).(*types.Var); ok {
				return origin{kind: foreignOrigin} // pkg.Var
			}
			return origin{}
		}
		if sel.Kind() != types.FieldVal {
			return origin{}
		}
		if val, vfr, found := fr.fieldSource(e.X, e.Sel.Name, 0); found {
			if val == nil {
				return origin{}
			}
			return vfr.classifyIn(val, nil, visiting)
		}
		return origin{kind: foreignOrigin} // a field of a value built elsewhere: the service's own
	case *ast.CallExpr:
		return fr.classifyCall(e, 0, self, visiting)
	}
	return origin{}
}

func (fr *frame) classifyAssign(a assign, v *types.Var, visiting map[*types.Var]bool) origin {
	switch {
	case a.rhs == nil:
		return origin{}
	case a.beginFunc:
		o := fr.classifyIn(a.rhs, nil, visiting)
		switch o.kind {
		case handedOrigin:
			o.savepoint, o.autoRollback = true, true
		case foreignOrigin:
			o.viaStmt = true // BeginFunc given the pool is reported
		}
		return o
	case a.idx >= 0:
		if call, ok := ast.Unparen(a.rhs).(*ast.CallExpr); ok {
			return fr.classifyCall(call, a.idx, v, visiting)
		}
		return origin{}
	}
	return fr.classifyIn(a.rhs, v, visiting)
}

// classifyCall classifies result idx of call.
func (fr *frame) classifyCall(call *ast.CallExpr, idx int, self *types.Var, visiting map[*types.Var]bool) origin {
	c := fr.c
	info := c.pass.TypesInfo
	if tv, ok := info.Types[call.Fun]; ok && tv.IsType() && len(call.Args) == 1 {
		return fr.classifyIn(call.Args[0], self, visiting) // a conversion
	}
	if child := fr.enter(call); child != nil {
		var o *origin
		ast.Inspect(child.decl.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ReturnStmt:
				if idx < len(n.Results) && len(n.Results) > 1 || idx == 0 && len(n.Results) == 1 {
					r := child.classifyIn(n.Results[idx], nil, map[*types.Var]bool{})
					if o == nil {
						o = &r
					} else {
						*o = merge(*o, r)
					}
				}
			}
			return true
		})
		if o == nil {
			return origin{}
		}
		return *o
	}
	recv, method := c.methodCall(call)
	if method != nil && (method.Name() == "Begin" || method.Name() == "BeginTx") && c.isHandle(info.TypeOf(recv)) {
		r := fr.classifyIn(recv, nil, visiting)
		switch r.kind {
		case handedOrigin:
			return origin{kind: handedOrigin, savepoint: true, spVar: self}
		case foreignOrigin:
			r.viaStmt = true
		}
		return r
	}
	// New(tx), q.WithTx(tx): the handle given.
	var args *origin
	for _, a := range call.Args {
		if t := info.TypeOf(a); t != nil && (c.isHandle(t) || c.isQueries(t)) {
			o := fr.classifyIn(a, nil, visiting)
			if args == nil {
				args = &o
			} else {
				*args = merge(*args, o)
			}
		}
	}
	if args != nil {
		return *args
	}
	if recv != nil && (c.isHandle(info.TypeOf(recv)) || c.isQueries(info.TypeOf(recv))) {
		o := fr.classifyIn(recv, nil, visiting)
		if o.kind == foreignOrigin && c.isStatement(call) != nil {
			o.viaStmt = true
		}
		return o
	}
	return origin{kind: foreignOrigin} // made from nothing: a pool of its own
}

// fieldSource finds the value field name was given in the struct that x
// (an expression of fr's function) holds, when x comes from a composite
// literal: the value and its frame, val nil when the literal leaves the
// field out. found is false when x comes from elsewhere.
func (fr *frame) fieldSource(x ast.Expr, name string, depth int) (val ast.Expr, vfr *frame, found bool) {
	if depth > maxDepth {
		return nil, nil, false
	}
	info := fr.c.pass.TypesInfo
	switch x := ast.Unparen(x).(type) {
	case *ast.UnaryExpr:
		if x.Op == token.AND {
			return fr.fieldSource(x.X, name, depth+1)
		}
	case *ast.StarExpr:
		return fr.fieldSource(x.X, name, depth+1)
	case *ast.CompositeLit:
		st, ok := info.TypeOf(x).Underlying().(*types.Struct)
		if !ok {
			return nil, nil, false
		}
		for i, el := range x.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == name {
					return kv.Value, fr, true
				}
			} else if i < st.NumFields() && st.Field(i).Name() == name {
				return el, fr, true
			}
		}
		return nil, fr, true
	case *ast.Ident:
		v, _ := info.ObjectOf(x).(*types.Var)
		if v == nil {
			return nil, nil, false
		}
		if b, ok := fr.bind[v]; ok && !b.handed {
			return b.fr.fieldSource(b.expr, name, depth+1)
		}
		as := fr.c.localsOf(fr.decl).assigns[v]
		if len(as) == 1 && as[0].idx < 0 && as[0].rhs != nil && !as[0].beginFunc {
			return fr.fieldSource(as[0].rhs, name, depth+1)
		}
	case *ast.CallExpr:
		child := fr.enter(x)
		if child == nil {
			return nil, nil, false
		}
		var rets []ast.Expr
		ast.Inspect(child.decl.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.ReturnStmt:
				if len(n.Results) > 0 {
					rets = append(rets, n.Results[0])
				}
			}
			return true
		})
		if len(rets) == 1 {
			return child.fieldSource(rets[0], name, depth+1)
		}
	}
	return nil, nil, false
}

// An assign is one value a local variable is given.
type assign struct {
	rhs       ast.Expr // nil: unknown (a range variable)
	idx       int      // >= 0: result idx of the call rhs
	pos       token.Pos
	beginFunc bool // a pgx.BeginFunc callback's tx; rhs is the handle BeginFunc was given
}

// localInfo is what a function's body assigns.
type localInfo struct {
	assigns map[*types.Var][]assign
	derived map[*types.Var]*types.Var // pgErr -> err, by errors.As(err, &pgErr) or err.(T)
	// ctxOf: a function literal's context parameter -> the context the
	// call it is given to is given (retry.Do(ctx, func(ctx context.Context) error {...})).
	ctxOf   map[*types.Var]ast.Expr
	sqlMark struct{ savepoint, rollbackTo bool }
}

func (c *checker) localsOf(decl *ast.FuncDecl) *localInfo {
	if li := c.locals[decl]; li != nil {
		return li
	}
	info := c.pass.TypesInfo
	li := &localInfo{assigns: map[*types.Var][]assign{}, derived: map[*types.Var]*types.Var{}, ctxOf: map[*types.Var]ast.Expr{}}
	c.locals[decl] = li
	varOf := func(e ast.Expr) *types.Var {
		id, ok := ast.Unparen(e).(*ast.Ident)
		if !ok {
			return nil
		}
		v, _ := info.ObjectOf(id).(*types.Var)
		return v
	}
	add := func(lhs []ast.Expr, rhs []ast.Expr, pos token.Pos) {
		for i, l := range lhs {
			v := varOf(l)
			if v == nil {
				continue
			}
			switch {
			case len(rhs) == len(lhs):
				li.assigns[v] = append(li.assigns[v], assign{rhs: rhs[i], idx: -1, pos: pos})
				if ta, ok := ast.Unparen(rhs[i]).(*ast.TypeAssertExpr); ok {
					if e := varOf(ta.X); e != nil {
						li.derived[v] = e
					}
				}
			case len(rhs) == 1:
				li.assigns[v] = append(li.assigns[v], assign{rhs: rhs[0], idx: i, pos: pos})
				if ta, ok := ast.Unparen(rhs[0]).(*ast.TypeAssertExpr); ok && i == 0 {
					if e := varOf(ta.X); e != nil {
						li.derived[v] = e
					}
				}
			}
		}
	}
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.ASSIGN || n.Tok == token.DEFINE {
				add(n.Lhs, n.Rhs, n.Pos())
			}
		case *ast.ValueSpec:
			lhs := make([]ast.Expr, len(n.Names))
			for i, id := range n.Names {
				lhs[i] = id
			}
			add(lhs, n.Values, n.Pos())
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if v := varOf(e); v != nil {
					li.assigns[v] = append(li.assigns[v], assign{idx: -1, pos: n.Pos()})
				}
			}
		case *ast.CallExpr:
			funcLitContexts(info, n, li.ctxOf)
			fn, _ := typeutil.Callee(info, n).(*types.Func)
			if fn == nil || fn.Pkg() == nil {
				break
			}
			switch {
			case fn.Pkg().Path() == "errors" && fn.Name() == "As" && len(n.Args) == 2:
				if u, ok := ast.Unparen(n.Args[1]).(*ast.UnaryExpr); ok && u.Op == token.AND {
					if d, e := varOf(u.X), varOf(n.Args[0]); d != nil && e != nil {
						li.derived[d] = e
					}
				}
			case fn.Pkg().Path() == pgxPath && (fn.Name() == "BeginFunc" || fn.Name() == "BeginTxFunc") && len(n.Args) >= 3:
				if lit, ok := ast.Unparen(n.Args[len(n.Args)-1]).(*ast.FuncLit); ok && len(lit.Type.Params.List) > 0 && len(lit.Type.Params.List[0].Names) > 0 {
					if v := varOf(lit.Type.Params.List[0].Names[0]); v != nil {
						li.assigns[v] = append(li.assigns[v], assign{rhs: n.Args[1], idx: -1, pos: n.Pos(), beginFunc: true})
					}
				}
			}
			if c.isStatement(n) != nil && len(n.Args) > 1 {
				if tv, ok := info.Types[n.Args[1]]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
					s := strings.ToUpper(strings.TrimSpace(constant.StringVal(tv.Value)))
					li.sqlMark.savepoint = li.sqlMark.savepoint || strings.HasPrefix(s, "SAVEPOINT")
					li.sqlMark.rollbackTo = li.sqlMark.rollbackTo || strings.HasPrefix(s, "ROLLBACK TO")
				}
			}
		}
		return true
	})
	return li
}

// funcLitContexts records, for the function literals call is given, that
// their context parameters are the context call is given.
func funcLitContexts(info *types.Info, call *ast.CallExpr, ctxOf map[*types.Var]ast.Expr) {
	var ctx ast.Expr
	for _, a := range call.Args {
		if isNamed(info.TypeOf(a), "context", "Context") {
			ctx = a
			break
		}
	}
	if ctx == nil {
		return
	}
	for _, a := range call.Args {
		lit, ok := ast.Unparen(a).(*ast.FuncLit)
		if !ok {
			continue
		}
		for _, field := range lit.Type.Params.List {
			for _, id := range field.Names {
				if v, ok := info.Defs[id].(*types.Var); ok && isNamed(v.Type(), "context", "Context") {
					ctxOf[v] = ctx
				}
			}
		}
	}
}
