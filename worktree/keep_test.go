package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/proc"
)

// git runs git in dir with an identity of the test's own; it returns
// trimmed stdout.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	res, err := proc.Run(context.Background(), proc.Spec{Dir: dir,
		Argv: append([]string{"git", "-c", "user.name=Keep Test", "-c", "user.email=keep@example.com", "-c", "protocol.file.allow=always"}, args...)})
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("git %v: exit %d: %s", args, res.ExitCode, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "init")
	return dir
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// agentWorktree is a linked worktree on branch agent with one commit of its
// own, plus a staged change, an unstaged change, an untracked file and an
// ignored file.
func agentWorktree(t *testing.T) (repo, wt string) {
	repo = repoWith(t)
	wt = filepath.Join(repo, ".worktrees", "a")
	git(t, repo, "worktree", "add", "-q", "-b", "agent", wt, "main")
	writeFile(t, filepath.Join(wt, "committed.txt"), "on the branch\n")
	git(t, wt, "add", "committed.txt")
	git(t, wt, "commit", "-q", "-m", "agent work")
	writeFile(t, filepath.Join(wt, "staged.txt"), "staged\n")
	git(t, wt, "add", "staged.txt")
	writeFile(t, filepath.Join(wt, "README"), "changed, not staged\n")
	writeFile(t, filepath.Join(wt, "new", "untracked.txt"), "untracked\n")
	writeFile(t, filepath.Join(wt, "build.log"), "ignored\n")
	return repo, wt
}

func repoWith(t *testing.T) string {
	dir := repo(t)
	writeFile(t, filepath.Join(dir, "README"), "hello\n")
	writeFile(t, filepath.Join(dir, ".gitignore"), "*.log\n/.worktrees/\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "files")
	return dir
}

func TestSnapshotWIPLeavesWorktreeAlone(t *testing.T) {
	_, wt := agentWorktree(t)
	ctx := context.Background()
	statusBefore := git(t, wt, "status", "--porcelain", "--untracked-files=all")
	cachedBefore := git(t, wt, "diff", "--cached", "--name-only")
	head := git(t, wt, "rev-parse", "HEAD")

	c, err := SnapshotWIP(ctx, wt, "snap")
	if err != nil || c == "" {
		t.Fatalf("snapshot: %q %v", c, err)
	}
	if got := git(t, wt, "status", "--porcelain", "--untracked-files=all"); got != statusBefore {
		t.Fatalf("status changed:\n%s\nwas:\n%s", got, statusBefore)
	}
	if got := git(t, wt, "diff", "--cached", "--name-only"); got != cachedBefore {
		t.Fatalf("index changed: %q, was %q", got, cachedBefore)
	}
	if got := git(t, wt, "rev-parse", c+"^"); got != head {
		t.Fatalf("snapshot parent %s, want HEAD %s", got, head)
	}
	files := git(t, wt, "ls-tree", "-r", "--name-only", c)
	for _, f := range []string{"committed.txt", "staged.txt", "README", "new/untracked.txt"} {
		if !strings.Contains("\n"+files+"\n", "\n"+f+"\n") {
			t.Errorf("snapshot lacks %s:\n%s", f, files)
		}
	}
	if strings.Contains(files, "build.log") {
		t.Errorf("snapshot holds the ignored file")
	}
	if got := git(t, wt, "show", c+":README"); got != "changed, not staged" {
		t.Errorf("README in snapshot = %q", got)
	}

	// A clean worktree has nothing to keep.
	git(t, wt, "add", "-A")
	git(t, wt, "commit", "-q", "-m", "all")
	if c, err := SnapshotWIP(ctx, wt, "snap"); err != nil || c != "" {
		t.Fatalf("clean worktree: %q %v", c, err)
	}
}

func TestKeepBeforeRemoval(t *testing.T) {
	repo, wt := agentWorktree(t)
	ctx := context.Background()
	tip := git(t, repo, "rev-parse", "agent")
	kept, err := Keep(ctx, KeepOptions{Repo: repo, Task: "ch-1", Branch: "agent", Worktree: wt, Target: "main", Why: "removal"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 || kept[0].Kind != KeptWIP || kept[1].Kind != KeptTip || kept[1].Commit != tip {
		t.Fatalf("kept %+v", kept)
	}
	// Now removal loses nothing: the refs keep both.
	git(t, repo, "worktree", "remove", "--force", wt)
	git(t, repo, "branch", "-D", "agent")
	list, err := ListKept(ctx, repo)
	if err != nil || len(list) != 2 {
		t.Fatalf("list %+v %v", list, err)
	}
	for _, k := range list {
		if k.Task != "ch-1" || k.Time.IsZero() || !strings.HasPrefix(k.Ref, KeptPrefix+"ch-1/") {
			t.Errorf("listed %+v", k)
		}
	}
	wip := list[0]
	if wip.Kind != KeptWIP {
		wip = list[1]
	}
	if got := git(t, repo, "show", wip.Commit+":new/untracked.txt"); got != "untracked" {
		t.Errorf("untracked file in kept wip = %q", got)
	}

	// A merged branch and a clean worktree keep nothing.
	git(t, repo, "branch", "merged", "main")
	if kept, err := Keep(ctx, KeepOptions{Repo: repo, Task: "ch-2", Branch: "merged", Target: "main"}); err != nil || len(kept) != 0 {
		t.Fatalf("merged branch kept %+v %v", kept, err)
	}
}

func TestKeepRewound(t *testing.T) {
	repo, wt := agentWorktree(t)
	ctx := context.Background()
	old := git(t, wt, "rev-parse", "HEAD")
	git(t, wt, "commit", "-q", "-m", "more")
	ahead := git(t, wt, "rev-parse", "HEAD")
	if _, ok, err := KeepRewound(ctx, repo, "ch-1", old, ahead); ok || err != nil {
		t.Fatalf("fast-forward kept: %v %v", ok, err)
	}
	git(t, wt, "reset", "-q", "--hard", "main")
	k, ok, err := KeepRewound(ctx, repo, "ch-1", ahead, git(t, wt, "rev-parse", "HEAD"))
	if !ok || err != nil || k.Commit != ahead || k.Kind != KeptRewound {
		t.Fatalf("rewind: %+v %v %v", k, ok, err)
	}
}

func TestPruneKept(t *testing.T) {
	repo := repoWith(t)
	ctx := context.Background()
	head := git(t, repo, "rev-parse", "HEAD")
	now := time.Date(2030, 1, 10, 12, 0, 0, 0, time.UTC)
	for _, age := range []time.Duration{240 * time.Hour, time.Hour} {
		if _, err := keepRef(ctx, repo, "ch-9", KeptTip, head, now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	gone, err := PruneKept(ctx, repo, 48*time.Hour, now)
	if err != nil || len(gone) != 1 {
		t.Fatalf("pruned %+v %v", gone, err)
	}
	if left, _ := ListKept(ctx, repo); len(left) != 1 || now.Sub(left[0].Time) != time.Hour {
		t.Fatalf("left %+v", left)
	}
	if gone, err := PruneKept(ctx, repo, 0, now); err != nil || len(gone) != 1 {
		t.Fatalf("prune all: %+v %v", gone, err)
	}
}

// A dirty worktree is kept before it goes; a clean one (an ignored file
// aside) goes without a kept ref.
func TestRemoveWorktreeKeepsOnlyWhatWouldBeLost(t *testing.T) {
	ctx := context.Background()
	repo, wt := agentWorktree(t)
	m := &Manager{RepoDir: repo, Target: "main"}
	if err := m.RemoveKeeping(ctx, "t1", wt, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("worktree still there: %v", err)
	}
	kept, err := ListKept(ctx, repo)
	if err != nil || len(kept) != 1 || kept[0].Kind != KeptWIP {
		t.Fatalf("kept %+v, %v: want one WIP snapshot", kept, err)
	}
	for _, f := range []string{"staged.txt", "README", "new/untracked.txt"} {
		if _, err := gitx.Git(ctx, repo, "cat-file", "-e", kept[0].Commit+":"+f); err != nil {
			t.Errorf("%s not in the kept snapshot: %v", f, err)
		}
	}

	clean := filepath.Join(repo, ".worktrees", "b")
	git(t, repo, "worktree", "add", "-q", "-b", "clean", clean, "main")
	writeFile(t, filepath.Join(clean, "build.log"), "ignored\n")
	if err := m.RemoveKeeping(ctx, "t2", clean, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(clean); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clean worktree with an ignored file still there: %v", err)
	}
	if kept, _ := ListKept(ctx, repo); len(kept) != 1 {
		t.Fatalf("a clean worktree was kept: %+v", kept)
	}
}
