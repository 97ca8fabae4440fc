package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One spelling check for the exclude file: any of git's four spellings of
// the folder counts, anything else gets /d/ appended with the rest of the
// file (and a missing last newline) left as it was.
func TestExcludeAcceptsEverySpelling(t *testing.T) {
	ctx := context.Background()
	for _, have := range []string{"/.worktrees/", ".worktrees/", "/.worktrees", ".worktrees", "  /.worktrees/  "} {
		r := repo(t)
		p := filepath.Join(r, ".git", "info", "exclude")
		writeFile(t, p, "# mine\n"+have)
		if err := (&Manager{RepoDir: r}).Exclude(ctx, filepath.Join(r, ".worktrees")); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(p); string(got) != "# mine\n"+have {
			t.Errorf("%q rewritten as %q", have, got)
		}
	}
	r := repo(t)
	p := filepath.Join(r, ".git", "info", "exclude")
	writeFile(t, p, "# mine\n/.worktrees-old/")
	m := &Manager{RepoDir: r}
	for range 2 {
		if err := m.Exclude(ctx, filepath.Join(r, ".worktrees")); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(p); string(got) != "# mine\n/.worktrees-old/\n/.worktrees/\n" {
		t.Errorf("exclude file %q", got)
	}
	if err := m.Exclude(ctx, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if got := git(t, r, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("status %q", got)
	}
}

// A scratch worktree is added detached (locked when asked, so prune keeps
// it) and removed with whatever is in it; a stray directory goes too.
func TestScratchWorktrees(t *testing.T) {
	ctx := context.Background()
	r := repoWith(t)
	m := &Manager{RepoDir: r, Target: "main"}
	wt := filepath.Join(r, ".worktrees", "_integration")
	if err := m.AddDetached(ctx, wt, "main", "chorus integration worktree"); err != nil {
		t.Fatal(err)
	}
	if l := git(t, r, "worktree", "list", "--porcelain"); !strings.Contains(l, "detached") || !strings.Contains(l, "locked chorus integration worktree") {
		t.Fatalf("worktree list:\n%s", l)
	}
	writeFile(t, filepath.Join(wt, "build.out"), "x\n")
	m.RemoveScratch(ctx, wt)
	// A locked worktree needs git's double force: it is gone from disk and
	// from git's registry all the same.
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("scratch worktree still there: %v", err)
	}
	if l := git(t, r, "worktree", "list"); strings.Contains(l, wt) {
		t.Fatalf("still registered:\n%s", l)
	}
	stray := filepath.Join(r, ".worktrees", "_rebase-x")
	writeFile(t, filepath.Join(stray, "f"), "x\n")
	m.RemoveScratch(ctx, stray)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("stray directory still there: %v", err)
	}
}

// Renewing a resolver's worktree keeps what the earlier one held (its
// uncommitted file, a tip the new start lacks) before replacing both.
func TestRenewKeepsTheEarlierWork(t *testing.T) {
	ctx := context.Background()
	r := repoWith(t)
	m := &Manager{RepoDir: r, Target: "main"}
	wt := filepath.Join(r, ".worktrees", "_resolve-ch-1")
	base := git(t, r, "rev-parse", "main")
	if err := m.Renew(ctx, "ch-1", wt, "chorus/resolve/ch-1", base, "test"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(wt, "a.txt"), "committed\n")
	git(t, wt, "add", "a.txt")
	git(t, wt, "commit", "-q", "-m", "resolver work")
	tip := git(t, wt, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(wt, "b.txt"), "uncommitted\n")
	if kept, _ := ListKept(ctx, r); len(kept) != 0 {
		t.Fatalf("a first worktree kept %+v", kept)
	}

	if err := m.Renew(ctx, "ch-1", wt, "chorus/resolve/ch-1", base, "test"); err != nil {
		t.Fatal(err)
	}
	if got := git(t, wt, "rev-parse", "HEAD"); got != base {
		t.Fatalf("renewed worktree at %s, want %s", got, base)
	}
	if _, err := os.Stat(filepath.Join(wt, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("the old file is still in the renewed worktree: %v", err)
	}
	kept, err := ListKept(ctx, r)
	if err != nil || len(kept) != 2 {
		t.Fatalf("kept %+v, %v: want the wip and the tip", kept, err)
	}
	kinds := map[string]string{}
	for _, k := range kept {
		kinds[k.Kind] = k.Commit
	}
	if kinds[KeptTip] != tip || git(t, r, "show", kinds[KeptWIP]+":b.txt") != "uncommitted" {
		t.Fatalf("kept %+v", kept)
	}
}

// Deleting a branch keeps its tip under the one naming first, which
// ListKept dates and PruneKept's age filter can prune.
func TestDeleteBranchKeepsTheTip(t *testing.T) {
	ctx := context.Background()
	r := repoWith(t)
	m := &Manager{RepoDir: r}
	git(t, r, "checkout", "-q", "-b", "agent/claude/ch-3")
	writeFile(t, filepath.Join(r, "x.txt"), "x\n")
	git(t, r, "add", "x.txt")
	git(t, r, "commit", "-q", "-m", "work")
	tip := git(t, r, "rev-parse", "HEAD")
	git(t, r, "checkout", "-q", "main")
	kept, err := m.DeleteBranch(ctx, "ch-3", "agent/claude/ch-3", "test")
	if err != nil || len(kept) != 1 || kept[0].Commit != tip || kept[0].Kind != KeptTip {
		t.Fatalf("kept %+v, %v", kept, err)
	}
	if out := git(t, r, "branch", "--list", "agent/*"); out != "" {
		t.Fatalf("branch still there: %q", out)
	}
	list, _ := ListKept(ctx, r)
	if len(list) != 1 || list[0].Time.IsZero() || !strings.HasSuffix(list[0].Ref, "-tip") || list[0].Task != "ch-3" {
		t.Fatalf("listed %+v", list)
	}
	if gone, err := PruneKept(ctx, r, 1, list[0].Time.Add(1e9)); err != nil || len(gone) != 1 {
		t.Fatalf("prune --older-than: %+v %v", gone, err)
	}
}

// Rolling back an iteration keeps the tip it leaves and the uncommitted
// state, untracked files included, before the reset and clean; a commit
// that is not an earlier one of the branch is refused.
func TestRewindKeepsTipAndUncommitted(t *testing.T) {
	ctx := context.Background()
	r := repoWith(t)
	wt := filepath.Join(r, ".worktrees", "a-ch-1")
	git(t, r, "worktree", "add", "-q", "-b", "agent/a/ch-1", wt, "main")
	start := git(t, wt, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(wt, "x.txt"), "2\n")
	git(t, wt, "add", "x.txt")
	git(t, wt, "commit", "-q", "-m", "iteration 2")
	last := git(t, wt, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(wt, "x.txt"), "uncommitted\n")
	writeFile(t, filepath.Join(wt, "new.txt"), "untracked\n")
	m := &Manager{RepoDir: r, Target: "main"}
	if err := m.Rewind(ctx, "ch-1", wt, start); err != nil {
		t.Fatal(err)
	}
	if git(t, wt, "rev-parse", "HEAD") != start || git(t, wt, "status", "--porcelain", "--untracked-files=all") != "" {
		t.Fatal("not reset")
	}
	kept, err := ListKept(ctx, r)
	if err != nil || len(kept) != 2 {
		t.Fatalf("kept %+v, %v", kept, err)
	}
	by := map[string]Kept{}
	for _, k := range kept {
		by[k.Kind] = k
	}
	if by[KeptRewound].Commit != last || by[KeptRewound].Task != "ch-1" {
		t.Fatalf("rewound %+v, want %s", by[KeptRewound], last)
	}
	if got := git(t, r, "show", by[KeptWIP].Commit+":new.txt"); got != "untracked" {
		t.Fatalf("untracked file in the kept wip = %q", got)
	}
	if err := m.Rewind(ctx, "ch-1", wt, last); err == nil {
		t.Fatal("rewinding to a commit that is not an earlier one was accepted")
	}
}
