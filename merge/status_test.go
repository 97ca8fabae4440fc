package merge

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusOnlyThroughMove reads the service's and the queue's source:
// an item's status is assigned in one place, queue.Move, which checks the
// change against the transition table. Anything else would change a
// status no rule allows.
func TestStatusOnlyThroughMove(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	q, err := filepath.Glob(filepath.Join("queue", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	moves := 0
	for _, name := range append(files, q...) {
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
			allowed := file.Name.Name == "queue" && fd.Recv == nil && fd.Name.Name == "Move"
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok {
					return true
				}
				for _, l := range as.Lhs {
					if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "Status" {
						if allowed {
							moves++
						} else {
							t.Errorf("%s: %s assigns a status; use queue.Move", fset.Position(as.Pos()), fd.Name.Name)
						}
					}
				}
				return true
			})
		}
	}
	if moves != 1 {
		t.Errorf("queue.Move assigns a status %d times, want once: the check is out of date", moves)
	}
}
