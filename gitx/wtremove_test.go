package gitx

import (
	"context"
	"errors"
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
	wt := add("clean")
	writeFile(t, filepath.Join(wt, "build.log"), "ignored\n")
	done, err := RemoveCleanWorktree(ctx, wt, nil, false)
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
		done, err := RemoveCleanWorktree(ctx, dir, nil, false)
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

// Several at once: the clean ones go, the dirty one is left for git.
func TestRemoveCleanWorktrees(t *testing.T) {
	ctx := context.Background()
	repo := repoWith(t)
	var dirs []string
	for _, name := range []string{"a", "b", "c"} {
		wt := filepath.Join(repo, ".worktrees", name)
		git(t, repo, "worktree", "add", "-q", "-b", name, wt, "main")
		dirs = append(dirs, wt)
	}
	writeFile(t, filepath.Join(dirs[1], "README"), "changed\n")
	done, errs := RemoveCleanWorktrees(ctx, dirs, nil)
	if !done[0] || done[1] || !done[2] || errs[0] != nil || errs[2] != nil {
		t.Fatalf("done %v, errors %v", done, errs)
	}
	l := git(t, repo, "worktree", "list")
	if strings.Contains(l, dirs[0]) || !strings.Contains(l, dirs[1]) || strings.Contains(l, dirs[2]) {
		t.Fatalf("worktrees:\n%s", l)
	}
	if _, err := os.Stat(filepath.Join(dirs[1], "README")); err != nil {
		t.Fatal(err)
	}
}
