package merge

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// lockOf names the service lock a call locks or unlocks ("" for none):
// x.mu.Lock() → "mu", s.memMu.Unlock() → "memMu".
func lockOf(call *ast.CallExpr) (name string, lock bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || (sel.Sel.Name != "Lock" && sel.Sel.Name != "Unlock") {
		return "", false
	}
	inner, ok := sel.X.(*ast.SelectorExpr)
	if !ok || !slices.Contains(lockOrder, inner.Sel.Name) {
		return "", false
	}
	return inner.Sel.Name, sel.Sel.Name == "Lock"
}

// The service's parts as the source names them: receivers (s, in, rs)
// and the fields that lead from one to another (s.in, s.res, rs.q, in.q).
var (
	receivers = map[string]string{"s": "Service", "in": "integrator", "rs": "resolvers"}
	fields    = map[string]string{"in": "integrator", "res": "resolvers", "q": "Service"}
)

// serviceCall names the method a call invokes on the service (s.f), its
// integrator (s.in.f, in.f) or its resolvers (s.res.f, rs.f), and back
// (rs.q.f, in.q.res.f…), as "Service.f", "integrator.f" or "resolvers.f".
func serviceCall(call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if t := partOf(sel.X); t != "" {
		return t + "." + sel.Sel.Name
	}
	return ""
}

// partOf names the part of the service an expression is: a receiver, or
// a field of a part leading to another.
func partOf(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return receivers[x.Name]
	case *ast.SelectorExpr:
		if partOf(x.X) != "" {
			return fields[x.Sel.Name]
		}
	}
	return ""
}

// receiver names a method's receiver type: "Service", "integrator", "resolvers".
func receiver(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if st, ok := t.(*ast.StarExpr); ok {
		t = st.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

type lockFacts struct {
	// direct: the locks a method takes itself; calls: what it calls on s,
	// with the locks held at each call.
	direct map[string]bool
	calls  []heldCall
	bad    []string
}

type heldCall struct {
	method string
	held   []string
	pos    token.Position
}

func rank(l string) int { return slices.Index(lockOrder, l) }

// walk follows a function body in source order. Branches start from the
// locks held before them and leave them as they were (each branch unlocks
// what it locks, or returns); defers keep a lock to the end. Function
// literals are walked on their own: they run later or elsewhere.
func walk(fset *token.FileSet, body ast.Node, f *lockFacts, lits *[]*ast.FuncLit) {
	var held []string
	var stmts func(list []ast.Stmt)
	visit := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				*lits = append(*lits, n)
				return false
			case *ast.BlockStmt:
				saved := slices.Clone(held)
				stmts(n.List)
				held = saved
				return false
			case *ast.DeferStmt:
				return false // a deferred unlock keeps the lock held
			case *ast.GoStmt:
				if lit, ok := n.Call.Fun.(*ast.FuncLit); ok {
					*lits = append(*lits, lit)
				}
				return false
			case *ast.CallExpr:
				if name, lock := lockOf(n); name != "" {
					if lock {
						f.direct[name] = true
						for _, h := range held {
							if rank(h) >= rank(name) {
								f.bad = append(f.bad, fset.Position(n.Pos()).String()+": takes "+name+" holding "+h)
							}
						}
						held = append(held, name)
					} else if i := slices.Index(held, name); i >= 0 {
						held = slices.Delete(held, i, i+1)
					}
					return true
				}
				if m := serviceCall(n); m != "" {
					f.calls = append(f.calls, heldCall{m, slices.Clone(held), fset.Position(n.Pos())})
				}
			}
			return true
		})
	}
	stmts = func(list []ast.Stmt) {
		for _, s := range list {
			visit(s)
		}
	}
	visit(body)
}

func TestLockOrder(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := map[string]*lockFacts{}
	var anon []*lockFacts
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			f := &lockFacts{direct: map[string]bool{}}
			var lits []*ast.FuncLit
			walk(fset, fd.Body, f, &lits)
			for len(lits) > 0 {
				lit := lits[0]
				lits = lits[1:]
				lf := &lockFacts{direct: map[string]bool{}}
				walk(fset, lit.Body, lf, &lits)
				anon = append(anon, lf)
			}
			if fd.Recv != nil {
				methods[receiver(fd)+"."+fd.Name.Name] = f
			} else {
				anon = append(anon, f)
			}
		}
	}
	// takes: the locks a method takes, itself or through the methods it
	// calls, to a fixed point.
	takes := map[string]map[string]bool{}
	for m, f := range methods {
		takes[m] = map[string]bool{}
		for l := range f.direct {
			takes[m][l] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for m, f := range methods {
			for _, c := range f.calls {
				for l := range takes[c.method] {
					if !takes[m][l] {
						takes[m][l], changed = true, true
					}
				}
			}
		}
	}
	all := append(slices.Collect(func(yield func(*lockFacts) bool) {
		for _, f := range methods {
			if !yield(f) {
				return
			}
		}
	}), anon...)
	var bad []string
	for _, f := range all {
		bad = append(bad, f.bad...)
		for _, c := range f.calls {
			for l := range takes[c.method] {
				for _, h := range c.held {
					if rank(h) >= rank(l) {
						bad = append(bad, c.pos.String()+": calls "+c.method+", which takes "+l+", holding "+h)
					}
				}
			}
		}
	}
	slices.Sort(bad)
	for _, b := range slices.Compact(bad) {
		t.Error(b)
	}
	// The check must see the locks it checks: a rename would make it pass
	// on nothing.
	for _, l := range lockOrder {
		found := false
		for _, f := range all {
			found = found || f.direct[l]
		}
		if !found {
			t.Errorf("no function takes %s: lockOrder is out of date", l)
		}
	}
}
