package idemvet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/types/typeutil"
)

// riskyExpr finds, in the value x of fr's function, a call whose error
// would come from a statement on the handed tx outside a savepoint: the
// statement itself (tx.Exec, q.Insert on New(tx), tx.QueryRow(...).Scan),
// a method of what one returned (row.Scan, rows.Err), a function of the
// package that runs one, or another package's function given tx
// (events.Enqueue(ctx, tx, ...)).
func (c *checker) riskyExpr(fr *frame, x ast.Expr, visiting map[*types.Var]bool) *stmtChain {
	info := c.pass.TypesInfo
	var found *stmtChain
	ast.Inspect(x, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			found = c.riskyCall(fr, n)
			if found != nil {
				return false
			}
			// row.Scan, rows.Err, pgx.CollectRows(rows, ...): what a
			// statement returned.
			var operands []ast.Expr
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok {
				operands = append(operands, sel.X)
			}
			operands = append(operands, n.Args...)
			for _, o := range operands {
				id, ok := ast.Unparen(o).(*ast.Ident)
				if !ok {
					continue
				}
				v := asVar(info, id)
				if v == nil || visiting[v] || c.isHandle(v.Type()) || c.isQueries(v.Type()) {
					continue // a handle's own statements are judged by riskyCall
				}
				visiting[v] = true
				for _, a := range c.localsOf(fr.decl).assigns[v] {
					if a.rhs != nil && !a.beginFunc {
						if ch := c.riskyExpr(fr, a.rhs, visiting); ch != nil {
							found = ch
							return false
						}
					}
				}
			}
		}
		return true
	})
	return found
}

// riskyCall reports call itself (not its operands) as riskyExpr does.
func (c *checker) riskyCall(fr *frame, call *ast.CallExpr) *stmtChain {
	info := c.pass.TypesInfo
	if recv := c.isStatement(call); recv != nil {
		if o := fr.classify(recv, nil); o.kind == handedOrigin && !c.safe(fr, o) {
			return &stmtChain{node: call, desc: types.ExprString(call.Fun)}
		}
		return nil
	}
	if child := fr.enter(call); child != nil {
		if inner := c.calleeRisky(child); inner != nil {
			return &stmtChain{node: call, desc: types.ExprString(call.Fun) + " (which runs " + inner.desc + " at " + c.line(inner.node.Pos()) + ")"}
		}
		return nil
	}
	fn, _ := typeutil.Callee(info, call).(*types.Func)
	if fn == nil || fn.Pkg() == nil || fn.Pkg() == c.pass.Pkg {
		return nil
	}
	if fn.Pkg().Path() == pgxPath && (fn.Name() == "BeginFunc" || fn.Name() == "BeginTxFunc") {
		return nil // a savepoint, rolled back when the function fails
	}
	sig := fn.Signature()
	for i := range sig.Results().Len() {
		if t := sig.Results().At(i).Type(); c.isHandle(t) || c.isQueries(t) {
			return nil // New(tx), q.WithTx(tx)
		}
	}
	for _, a := range call.Args {
		if t := info.TypeOf(a); t != nil && (c.isHandle(t) || c.isQueries(t)) {
			if o := fr.classify(a, nil); o.kind == handedOrigin && !c.safe(fr, o) {
				return &stmtChain{node: call, desc: types.ExprString(call.Fun)}
			}
		}
	}
	return nil
}

// calleeRisky finds a statement on the handed tx outside a savepoint in
// child's function or what it calls.
func (c *checker) calleeRisky(child *frame) *stmtChain {
	k := child.key()
	if ch, ok := c.risky[k]; ok {
		return ch
	}
	c.risky[k] = nil // recursion
	var found *stmtChain
	ast.Inspect(child.decl.Body, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if call, ok := n.(*ast.CallExpr); ok {
			found = c.riskyCall(child, call)
		}
		return found == nil
	})
	c.risky[k] = found
	return found
}

// safe reports whether a statement on o cannot abort the handed tx: o is
// a savepoint rolled back on failure (pgx.BeginFunc's, or one whose
// variable has a Rollback call), or the function runs SAVEPOINT and
// ROLLBACK TO statements itself.
func (c *checker) safe(fr *frame, o origin) bool {
	if m := c.localsOf(fr.decl).sqlMark; m.savepoint && m.rollbackTo {
		return true
	}
	if !o.savepoint {
		return false
	}
	if o.autoRollback || o.spVar == nil {
		return true
	}
	info := c.pass.TypesInfo
	for f := fr; f != nil; f = f.caller {
		found := false
		ast.Inspect(f.decl.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Rollback" {
					if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok && asVar(info, id) == o.spVar {
						found = true
					}
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}
