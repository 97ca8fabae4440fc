package worktree

import (
	"context"
	"path/filepath"
	"testing"
)

// A stopped run's WIP commits are undone at the next run: the agent's own
// commit stays, the leftovers are uncommitted again exactly as they were,
// and the old tip is kept. Another task's WIP commit, a merge, and a WIP
// commit the target already holds are never undone.
func TestReopenWIP(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, false)
	m := &Manager{RepoDir: repo, Target: "main"}
	wt, err := m.Ensure(ctx, "claude", "t1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := m.ReopenWIP(ctx, wt, "t1"); n != 0 || err != nil {
		t.Fatalf("fresh worktree: %d, %v", n, err)
	}
	write(t, filepath.Join(wt.Dir, "work.txt"), "the agent's work\n")
	run(t, wt.Dir, "git", "add", "work.txt")
	run(t, wt.Dir, "git", "-c", "user.name=A", "-c", "user.email=a@a", "commit", "-q", "-m", "feat: work")
	own := run(t, wt.Dir, "git", "rev-parse", "HEAD")

	write(t, filepath.Join(wt.Dir, "scratch.txt"), "thinking\n")
	write(t, filepath.Join(wt.Dir, "README.md"), "edited\n")
	if ok, err := m.CommitWIP(ctx, wt, WIPMessage("t1", "paused")); !ok || err != nil {
		t.Fatalf("CommitWIP: %v %v", ok, err)
	}
	write(t, filepath.Join(wt.Dir, "more.txt"), "second stop\n")
	if ok, err := m.CommitWIP(ctx, wt, WIPMessage("t1", "blocked")); !ok || err != nil {
		t.Fatalf("CommitWIP: %v %v", ok, err)
	}
	tip := run(t, wt.Dir, "git", "rev-parse", "HEAD")
	if n, err := m.ReopenWIP(ctx, wt, "t2"); n != 0 || err != nil {
		t.Fatalf("another task's WIP undone: %d, %v", n, err)
	}
	n, err := m.ReopenWIP(ctx, wt, "t1")
	if n != 2 || err != nil {
		t.Fatalf("ReopenWIP = %d, %v; want 2", n, err)
	}
	if head := run(t, wt.Dir, "git", "rev-parse", "HEAD"); head != own {
		t.Fatalf("HEAD %s, want the agent's own commit %s", head, own)
	}
	if st := run(t, wt.Dir, "git", "status", "--porcelain", "--untracked-files=all"); st != "M README.md\n?? more.txt\n?? scratch.txt" {
		t.Fatalf("status after:\n%s", st)
	}
	if got := read(t, filepath.Join(wt.Dir, "README.md")); got != "edited\n" {
		t.Fatalf("README.md = %q", got)
	}
	kept, err := ListKept(ctx, repo)
	if err != nil || len(kept) != 1 || kept[0].Commit != tip || kept[0].Task != "t1" {
		t.Fatalf("kept %+v, %v; want the old tip %s", kept, err, tip)
	}
	if w, err := m.OwnWork(ctx, wt, ""); err != nil || !w.Committed || len(w.Uncommitted) != 3 {
		t.Fatalf("own work %+v, %v", w, err)
	}

	// A WIP commit the target holds is history.
	if ok, err := m.CommitWIP(ctx, wt, WIPMessage("t1", "landed anyway")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	run(t, repo, "git", "merge", "-q", "--ff-only", wt.Branch)
	if n, err := m.ReopenWIP(ctx, wt, "t1"); n != 0 || err != nil {
		t.Fatalf("a landed WIP commit undone: %d, %v", n, err)
	}
}
