package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A clean worktree goes the way git's own remove leaves the repository:
// directory and registration gone, the branch kept, nothing for prune, the
// same path addable again. Anything git would refuse, or that is not
// plain, is left untouched for git.
func TestRemoveCleanWorktree(t *testing.T) {
	ctx := context.Background()
	repo := repoWith(t)
	add := func(name string) string {
		wt := filepath.Join(repo, ".worktrees", name)
		git(t, repo, "worktree", "add", "-q", "-b", name, wt, "main")
		return wt
	}
	m := &Manager{RepoDir: repo, Target: "main"}
	wt := add("clean")
	writeFile(t, filepath.Join(wt, "build.log"), "ignored\n")
	done, err := m.removeClean(ctx, wt, false)
	if !done || err != nil {
		t.Fatalf("clean worktree: done %v, %v", done, err)
	}
	if _, err := os.Stat(wt); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory still there: %v", err)
	}
	if l := git(t, repo, "worktree", "list", "--porcelain"); strings.Contains(l, wt) {
		t.Fatalf("still registered:\n%s", l)
	}
	if p := git(t, repo, "worktree", "prune", "--dry-run", "-v"); p != "" {
		t.Fatalf("prune would still do: %s", p)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "worktrees")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("empty worktrees directory left: %v", err)
	}
	git(t, repo, "rev-parse", "--verify", "refs/heads/clean")
	git(t, repo, "worktree", "add", "-q", wt, "clean")

	untracked := add("untracked")
	writeFile(t, filepath.Join(untracked, "new", "file.txt"), "work\n")
	// git's own status would hide it; the removal must not.
	git(t, repo, "config", "status.showUntrackedFiles", "no")
	modified := add("modified")
	writeFile(t, filepath.Join(modified, "README"), "changed\n")
	locked := add("locked")
	git(t, repo, "worktree", "lock", locked)
	nested := add("nested")
	git(t, filepath.Join(nested), "init", "-q", "inner")
	writeFile(t, filepath.Join(nested, ".gitignore"), "inner/\n")
	git(t, nested, "add", ".gitignore")
	git(t, nested, "commit", "-q", "-m", "ignore inner")
	for _, dir := range []string{untracked, modified, locked, nested, filepath.Join(repo, "missing")} {
		done, err := m.removeClean(ctx, dir, false)
		if done || err != nil {
			t.Errorf("%s: done %v, %v: want it left to git", filepath.Base(dir), done, err)
		}
		if dir == filepath.Join(repo, "missing") {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
			t.Errorf("%s was touched: %v", filepath.Base(dir), err)
		}
	}
	if l := git(t, repo, "worktree", "list"); strings.Count(l, "\n") != 5 {
		t.Fatalf("worktrees after refusals:\n%s", l)
	}
}

// Several at once: the clean ones go in-process, the dirty one through git
// once its uncommitted file is kept, a missing one is pruned.
func TestRemoveAllKeeping(t *testing.T) {
	ctx := context.Background()
	repo := repoWith(t)
	var dirs []string
	for _, name := range []string{"a", "b", "c"} {
		wt := filepath.Join(repo, ".worktrees", name)
		git(t, repo, "worktree", "add", "-q", "-b", name, wt, "main")
		dirs = append(dirs, wt)
	}
	writeFile(t, filepath.Join(dirs[1], "README"), "changed\n")
	if err := os.RemoveAll(dirs[2]); err != nil {
		t.Fatal(err)
	}
	m := &Manager{RepoDir: repo, Target: "main"}
	var gone []Gone
	for i, d := range dirs {
		gone = append(gone, Gone{Task: fmt.Sprint("t", i), Dir: d})
	}
	for i, err := range m.RemoveAllKeeping(ctx, gone, "test") {
		if err != nil {
			t.Errorf("%s: %v", dirs[i], err)
		}
	}
	if l := git(t, repo, "worktree", "list"); strings.Count(l, "\n") != 0 {
		t.Fatalf("worktrees left:\n%s", l)
	}
	kept, err := ListKept(ctx, repo)
	if err != nil || len(kept) != 1 || kept[0].Task != "t1" || kept[0].Kind != KeptWIP {
		t.Fatalf("kept %+v, %v: want t1's uncommitted README", kept, err)
	}
	if got := git(t, repo, "show", kept[0].Commit+":README"); got != "changed" {
		t.Fatalf("kept README = %q", got)
	}
}
