package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// owner is the one package that adds, removes and prunes worktrees,
// deletes branches and keeps work under refs/chorus/kept/.
const owner = "worktree"

// notChorus holds code that is not Chorus's engine: the throughput
// benchmark's plain shell-like pipeline, which Chorus is measured against.
var notChorus = []string{"scripts/bench-throughput"}

// A worktree or branch going anywhere else could skip keeping what it
// would lose, and a kept ref written anywhere else could miss the one
// naming `chorus status` and `chorus prune` read. The rule is read from
// the code: git argv written as string literals, and ref names.
func TestOneOwnerOfWorktreesAndBranches(t *testing.T) {
	root, _ := moduleRoot(t)
	for _, bad := range ownerViolations(t, root) {
		t.Error(bad)
	}
}

// The rule catches what the code did before it had one owner.
func TestOwnerRuleCatchesStrayCalls(t *testing.T) {
	dir := t.TempDir()
	src := `package merge

var WorktreeMu struct{}

func f(ctx any, repo, wt, b, c string) {
	git(ctx, repo, "worktree", "remove", "--force", wt)
	run(ctx, repo, "", "worktree", "prune")
	gitx.Git(ctx, repo, "branch", "-D", "--", b)
	git(ctx, repo, "update-ref", "refs/chorus/kept/x/"+c, c)
	git(ctx, repo, "update-ref", "refs/chorus/backup/"+c, c)
	git(ctx, repo, "worktree", "list", "--porcelain")
}
`
	if err := os.MkdirAll(filepath.Join(dir, "merge"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "merge", "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := ownerViolations(t, dir)
	if len(got) != 6 {
		t.Fatalf("found %d violations, want 6 (remove, prune, branch -D, two kept refs, the global lock):\n%s", len(got), strings.Join(got, "\n"))
	}
}

// keptElsewhere are where work was kept before it had one naming, and
// that naming's own prefix.
var keptElsewhere = []string{"refs/chorus/kept", "refs/chorus/backup", "refs/chorus/resolver"}

// ownerViolations lists, file:line first, every non-test file outside the
// owner that runs `git worktree add|remove|prune|move|lock|unlock|repair`,
// `git branch -d|-D|--delete`, names a ref where work is kept, or
// declares a package-level lock named like the old global WorktreeMu.
func ownerViolations(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) ||
				rel == owner || slices.Contains(notChorus, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		at := func(n ast.Node) string { return rel + ":" + strconv.Itoa(fset.Position(n.Pos()).Line) }
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				args := make([]string, len(n.Args))
				for i, a := range n.Args {
					args[i] = literal(a)
				}
				for i := 0; i+1 < len(args); i++ {
					switch {
					case args[i] == "worktree" && slices.Contains([]string{"add", "remove", "prune", "move", "lock", "unlock", "repair"}, args[i+1]):
						out = append(out, at(n)+": runs `git worktree "+args[i+1]+"`: only package "+owner+" adds and removes worktrees (call its Manager)")
					case args[i] == "branch" && slices.Contains([]string{"-d", "-D", "--delete"}, args[i+1]):
						out = append(out, at(n)+": runs `git branch "+args[i+1]+"`: only package "+owner+" deletes branches, after keeping their tips (Manager.DeleteBranch)")
					}
				}
			case *ast.BasicLit:
				s := literal(n)
				for _, p := range keptElsewhere {
					if strings.HasPrefix(s, p) {
						out = append(out, at(n)+": names "+s+": only package "+owner+" keeps work, under refs/chorus/kept/ with its one naming (worktree.Keep, KeepCommit)")
					}
				}
			}
			return true
		})
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, sp := range g.Specs {
				for _, id := range sp.(*ast.ValueSpec).Names {
					if strings.Contains(strings.ToLower(id.Name), "worktree") && strings.HasSuffix(id.Name, "Mu") {
						out = append(out, at(id)+": package-level "+id.Name+": the worktree lock is a field of package "+owner+"'s Manager")
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// literal is the value of a string literal, "" for anything else.
func literal(e ast.Expr) string {
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
		if s, err := strconv.Unquote(b.Value); err == nil {
			return s
		}
	}
	return ""
}
