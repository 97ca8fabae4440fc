package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/worktree"
)

// A run that finds its task's worktree holding a lock a killed git left
// (an agent host stopped at a start, or Chorus killed, mid-command, before
// the state named the worktree, so the start's recovery did not clear
// it) clears it before its agent starts; the old code started the agent
// there, and its every commit failed until the task failed.
func TestStaleLockInReusedWorktreeCleared(t *testing.T) {
	h := newHarness(t, `
write a.txt "from a"
commit "feat: a"
signal COMPLETE
hang
`, nil)
	id := h.task("stale lock", beads.CreateOptions{})
	m := &worktree.Manager{RepoDir: h.root, Target: "main"}
	wt, err := m.Ensure(context.Background(), "script", id, worktree.Options{})
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	gd := git(t, wt.Dir, "rev-parse", "--absolute-git-dir")
	if err := os.WriteFile(filepath.Join(gd, "index.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(func(ev Event) bool { return ev.Task == id && (ev.Kind == EvCompleted || ev.Kind == EvFailed) })
	if ev.Kind != EvCompleted {
		t.Fatalf("%s: %s\n%s", ev.Kind, ev.Text, h.report())
	}
	if got := git(t, h.root, "show", "main:a.txt"); got != "from a" {
		t.Fatalf("main:a.txt = %q\n%s", got, h.report())
	}
}
