package idemvet

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/types/typeutil"
)

// A stmtChain is a call whose error comes from a statement on the handed
// tx outside a savepoint.
type stmtChain struct {
	node ast.Node // where to report: the statement, or the call leading to it
	desc string   // "tx.Exec", "s.insert (which runs tx.Exec at service.go:40)"
}

// checkHandled: rule savepoint, in each function body of fr (its own and
// its function literals').
func (c *checker) checkHandled(fr *frame) {
	info := c.pass.TypesInfo
	fn, _ := info.Defs[fr.decl.Name].(*types.Func)
	if fn == nil {
		return
	}
	type unit struct {
		body *ast.BlockStmt
		sig  *types.Signature
	}
	units := []unit{{fr.decl.Body, fn.Signature()}}
	ast.Inspect(fr.decl.Body, func(n ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok {
			if sig, ok := info.TypeOf(lit).(*types.Signature); ok {
				units = append(units, unit{lit.Body, sig})
			}
		}
		return true
	})
	for _, u := range units {
		w := &walker{c: c, fr: fr, sig: u.sig}
		w.stmts(u.body.List, nil)
	}
}

type walker struct {
	c   *checker
	fr  *frame
	sig *types.Signature
}

// stmts walks list; cont is the statement that runs after it (nil: none
// known).
func (w *walker) stmts(list []ast.Stmt, cont ast.Stmt) {
	for i, s := range list {
		next := cont
		if i+1 < len(list) {
			next = list[i+1]
		}
		w.stmt(s, next)
	}
}

func (w *walker) stmt(s ast.Stmt, next ast.Stmt) {
	switch s := s.(type) {
	case *ast.BlockStmt:
		w.stmts(s.List, next)
	case *ast.LabeledStmt:
		w.stmt(s.Stmt, next)
	case *ast.IfStmt:
		w.checkIf(s, next)
		w.stmts(s.Body.List, next)
		if s.Else != nil {
			w.stmt(s.Else, next)
		}
	case *ast.SwitchStmt:
		w.checkSwitch(s.Tag, s.Body, next)
		for _, cc := range s.Body.List {
			w.stmts(cc.(*ast.CaseClause).Body, next)
		}
	case *ast.TypeSwitchStmt:
		w.checkTypeSwitch(s, next)
		for _, cc := range s.Body.List {
			w.stmts(cc.(*ast.CaseClause).Body, next)
		}
	case *ast.SelectStmt:
		for _, cc := range s.Body.List {
			w.stmts(cc.(*ast.CommClause).Body, next)
		}
	case *ast.ForStmt:
		w.stmts(s.Body.List, nil)
	case *ast.RangeStmt:
		w.stmts(s.Body.List, nil)
	}
}

// A test is what a condition says about an error variable: on true, the
// error is inspected (pos) or is a no-rows error (noRows); on false, it
// may be an error other than no rows (elseErr).
type test struct{ pos, noRows, elseErr bool }

// testOf reads cond for the error variable e (or a variable derived from
// it, such as errors.As's target).
func (w *walker) testOf(cond ast.Expr, e *types.Var) test {
	info := w.c.pass.TypesInfo
	switch x := ast.Unparen(cond).(type) {
	case *ast.BinaryExpr:
		switch x.Op {
		case token.LAND:
			l, r := w.testOf(x.X, e), w.testOf(x.Y, e)
			return test{pos: l.pos || r.pos, noRows: l.noRows || r.noRows, elseErr: l.elseErr || r.elseErr}
		case token.LOR:
			l, r := w.testOf(x.X, e), w.testOf(x.Y, e)
			refs := func(t test) bool { return t.pos || t.noRows }
			t := test{pos: l.pos || r.pos, elseErr: l.elseErr || r.elseErr}
			t.noRows = (l.noRows || !refs(l)) && (r.noRows || !refs(r)) && (refs(l) || refs(r))
			if t.noRows {
				t.pos = false
			}
			return t
		case token.EQL, token.NEQ:
			isNil := func(x ast.Expr) bool { return info.Types[x].IsNil() }
			for _, pair := range [][2]ast.Expr{{x.X, x.Y}, {x.Y, x.X}} {
				if w.refersTo(pair[0], e) {
					switch {
					case isNil(pair[1]) && x.Op == token.NEQ:
						return test{pos: true}
					case isNil(pair[1]):
						return test{elseErr: true}
					case isNoRows(info, pair[1]) && x.Op == token.EQL:
						return test{noRows: true}
					case isNoRows(info, pair[1]):
						return test{}
					case x.Op == token.EQL:
						return test{pos: true} // pgErr.Code == "23505"
					}
					return test{elseErr: true}
				}
			}
		}
	case *ast.UnaryExpr:
		if x.Op == token.NOT {
			t := w.testOf(x.X, e)
			if t.noRows {
				return test{}
			}
			return test{elseErr: t.pos}
		}
	case *ast.CallExpr:
		refers := false
		for _, a := range x.Args {
			refers = refers || w.refersTo(a, e)
		}
		if !refers {
			return test{}
		}
		if fn, _ := typeutil.Callee(info, x).(*types.Func); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "errors" && fn.Name() == "Is" && len(x.Args) == 2 && isNoRows(info, x.Args[1]) {
			return test{noRows: true}
		}
		return test{pos: true} // errors.As, errors.Is, isUniqueViolation(err)
	}
	return test{}
}

// refersTo reports whether x mentions e or a variable derived from it.
func (w *walker) refersTo(x ast.Expr, e *types.Var) bool {
	li := w.c.localsOf(w.fr.decl)
	found := false
	ast.Inspect(x, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			v := asVar(w.c.pass.TypesInfo, id)
			for d := 0; v != nil && d < 4; d++ {
				if v == e {
					found = true
				}
				v = li.derived[v]
			}
		}
		return !found
	})
	return found
}

func isNoRows(info *types.Info, x ast.Expr) bool {
	var id *ast.Ident
	switch x := ast.Unparen(x).(type) {
	case *ast.SelectorExpr:
		id = x.Sel
	case *ast.Ident:
		id = x
	default:
		return false
	}
	v, _ := info.ObjectOf(id).(*types.Var)
	if v == nil || v.Pkg() == nil {
		return false
	}
	switch v.Pkg().Path() + "." + v.Name() {
	case pgxPath + ".ErrNoRows", pgxPath + ".ErrTooManyRows", "database/sql.ErrNoRows":
		return true
	}
	return false
}

// errVars are the error variables cond mentions, directly or through a
// derived variable.
func (w *walker) errVars(cond ast.Node) []*types.Var {
	info := w.c.pass.TypesInfo
	li := w.c.localsOf(w.fr.decl)
	errType := types.Universe.Lookup("error").Type()
	var out []*types.Var
	seen := map[*types.Var]bool{}
	ast.Inspect(cond, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		v := asVar(info, id)
		for d := 0; v != nil && li.derived[v] != nil && d < 4; d++ {
			v = li.derived[v]
		}
		if v != nil && !seen[v] && types.Identical(v.Type(), errType) {
			seen[v] = true
			out = append(out, v)
		}
		return true
	})
	return out
}

// source is the statement chain behind the value e has where cond is
// tested: the last assignment to e before it.
func (w *walker) source(e *types.Var, at token.Pos) *stmtChain {
	var last *assign
	for i, a := range w.c.localsOf(w.fr.decl).assigns[e] {
		if a.pos < at && (last == nil || a.pos > last.pos) {
			last = &w.c.localsOf(w.fr.decl).assigns[e][i]
		}
	}
	if last == nil || last.rhs == nil {
		return nil
	}
	return w.c.riskyExpr(w.fr, last.rhs, map[*types.Var]bool{})
}

func (w *walker) checkIf(s *ast.IfStmt, next ast.Stmt) {
	for _, e := range w.errVars(s.Cond) {
		ch := w.source(e, s.Cond.Pos())
		if ch == nil {
			continue
		}
		t := w.testOf(s.Cond, e)
		if t.pos && !t.noRows {
			w.checkPath(ch, s.Cond, s.Body, next, e)
		}
		if t.elseErr {
			if blk, ok := s.Else.(*ast.BlockStmt); ok {
				w.checkPath(ch, s.Cond, blk, next, e)
			} else if s.Else == nil {
				w.checkPath(ch, s.Cond, nil, next, e)
			}
		}
	}
}

func (w *walker) checkSwitch(tag ast.Expr, body *ast.BlockStmt, next ast.Stmt) {
	for _, st := range body.List {
		cc := st.(*ast.CaseClause)
		var vars []*types.Var
		if tag != nil {
			vars = w.errVars(tag)
		} else {
			for _, x := range cc.List {
				vars = append(vars, w.errVars(x)...)
			}
		}
		for _, e := range vars {
			ch := w.source(e, body.Pos())
			if ch == nil {
				continue
			}
			inspected, noRows := cc.List == nil, false
			for _, x := range cc.List {
				if tag != nil {
					noRows = noRows || isNoRows(w.c.pass.TypesInfo, x)
					inspected = inspected || !w.c.pass.TypesInfo.Types[x].IsNil()
					continue
				}
				t := w.testOf(x, e)
				inspected, noRows = inspected || t.pos, noRows || t.noRows
			}
			if inspected && !noRows {
				w.checkPath(ch, cc, &ast.BlockStmt{List: cc.Body}, next, e)
			}
		}
	}
}

func (w *walker) checkTypeSwitch(s *ast.TypeSwitchStmt, next ast.Stmt) {
	var x ast.Expr
	switch a := s.Assign.(type) {
	case *ast.AssignStmt:
		x = a.Rhs[0]
	case *ast.ExprStmt:
		x = a.X
	}
	for _, e := range w.errVars(x) {
		ch := w.source(e, s.Assign.Pos())
		if ch == nil {
			continue
		}
		for _, st := range s.Body.List {
			cc := st.(*ast.CaseClause)
			if len(cc.List) == 1 && w.c.pass.TypesInfo.Types[cc.List[0]].IsNil() {
				continue
			}
			w.checkPath(ch, cc, &ast.BlockStmt{List: cc.Body}, next, e)
		}
	}
}

// checkPath reports ch when the path taken after the error was inspected
// at where (blk, nil for none, then next) returns without an error or
// carries on.
func (w *walker) checkPath(ch *stmtChain, where ast.Node, blk *ast.BlockStmt, next ast.Stmt, e *types.Var) {
	var end ast.Node
	how := ""
	if blk != nil {
		if r := w.nonErrorReturn(blk, e); r != nil {
			end, how = r, "returns without an error"
		} else if terminates(blk) {
			return
		}
	}
	if end == nil {
		switch n := next.(type) {
		case nil:
			return
		case *ast.ReturnStmt:
			if !w.isNonError(n) {
				return
			}
			end, how = n, "returns without an error"
		case *ast.IfStmt:
			if len(w.errVars(n.Cond)) > 0 {
				return // the checks go on
			}
			end, how = n, "carries on"
		default:
			if terminates(&ast.BlockStmt{List: []ast.Stmt{n}}) {
				return
			}
			end, how = n, "carries on"
		}
	}
	c := w.c
	c.report("savepoint", ch.node, fmt.Sprintf(
		"%s: the error of %s is handled (%s) and %s at %s, but PostgreSQL has aborted the transaction (SQLSTATE 25P02): storing %s fails, a 500; run the statement in a savepoint (sp, err := tx.Begin(ctx); on its error sp.Rollback(ctx), else sp.Commit(ctx))",
		w.fr.chain(), ch.desc, c.line(where.Pos()), how, c.line(end.Pos()), w.fr.h.m.record()))
}

// nonErrorReturn finds a return without an error in blk, leaving out
// function literals and the bodies of no-rows checks of e.
func (w *walker) nonErrorReturn(blk *ast.BlockStmt, e *types.Var) *ast.ReturnStmt {
	var found *ast.ReturnStmt
	ast.Inspect(blk, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.IfStmt:
			if t := w.testOf(n.Cond, e); t.noRows {
				if n.Else != nil {
					ast.Inspect(n.Else, func(m ast.Node) bool {
						if r, ok := m.(*ast.ReturnStmt); ok && found == nil && w.isNonError(r) {
							found = r
						}
						_, lit := m.(*ast.FuncLit)
						return !lit
					})
				}
				return false
			}
		case *ast.ReturnStmt:
			if w.isNonError(n) {
				found = n
			}
		}
		return true
	})
	return found
}

// isNonError reports whether r returns no error: a nil last result, a
// function without an error result, or a call of one of the package's
// functions (or a local function literal) that only returns nil errors.
func (w *walker) isNonError(r *ast.ReturnStmt) bool {
	res := w.sig.Results()
	errType := types.Universe.Lookup("error").Type()
	if res.Len() == 0 || !types.Identical(res.At(res.Len()-1).Type(), errType) {
		return true
	}
	switch {
	case len(r.Results) == res.Len():
		return w.c.pass.TypesInfo.Types[r.Results[len(r.Results)-1]].IsNil()
	case len(r.Results) == 1:
		call, ok := ast.Unparen(r.Results[0]).(*ast.CallExpr)
		if !ok {
			return false
		}
		return w.c.onlyNilErrors(w.fr, call)
	}
	return false
}

// onlyNilErrors reports whether every return of call's callee (a function
// of the package, or a function literal assigned to a local variable
// once) has a nil error.
func (c *checker) onlyNilErrors(fr *frame, call *ast.CallExpr) bool {
	info := c.pass.TypesInfo
	var body *ast.BlockStmt
	if fn := typeutil.StaticCallee(info, call); fn != nil && c.decls[fn] != nil {
		body = c.decls[fn].Body
	} else if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
		if as := c.localsOf(fr.decl).assigns[asVar(info, id)]; len(as) == 1 {
			if lit, ok := ast.Unparen(as[0].rhs).(*ast.FuncLit); ok {
				body = lit.Body
			}
		}
	}
	if body == nil {
		return false
	}
	all, any := true, false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			any = true
			all = all && len(n.Results) > 1 && info.Types[n.Results[len(n.Results)-1]].IsNil()
		}
		return true
	})
	return any && all
}

// terminates reports whether blk ends in a return, a panic or a branch.
func terminates(blk *ast.BlockStmt) bool {
	if len(blk.List) == 0 {
		return false
	}
	switch s := blk.List[len(blk.List)-1].(type) {
	case *ast.ReturnStmt, *ast.BranchStmt:
		return true
	case *ast.ExprStmt:
		if call, ok := s.X.(*ast.CallExpr); ok {
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "panic" {
				return true
			}
		}
	case *ast.IfStmt:
		if blkElse, ok := s.Else.(*ast.BlockStmt); ok {
			return terminates(s.Body) && terminates(blkElse)
		}
	case *ast.BlockStmt:
		return terminates(s)
	}
	return false
}
