package merge

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/config"
)

// Check 8: rolling back a task that a later task builds on proposes task +
// dependents; that rollback is clean and leaves main green; re-landing the
// fixed branch afterwards brings the task back (revert of the revert).
func TestRollbackWithDependentsAndReland(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	h := start(t, r, func(o *Options) { o.Quality = quality("test -f README.md") }, nil)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"a.txt": "a1\nch-1\na3\na4\na5\n", "one.txt": "1\n"}, false)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	m1 := h.waitStatus("ch-1", StatusLanded).MergeCommit
	b9, _ := r.agentBranch("ch-9", "main", map[string]string{"unrelated.txt": "u\n"}, false)
	h.enqueue(Request{TaskID: "ch-9", Branch: b9})
	h.waitStatus("ch-9", StatusLanded)
	// ch-2 edits ch-1's line and declares nothing: an implicit dependent.
	b2, _ := r.agentBranch("ch-2", "main", map[string]string{"a.txt": "a1\nch-1 and ch-2\na3\na4\na5\n"}, false)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2})
	h.waitStatus("ch-2", StatusLanded)

	_, err := h.svc.RollbackTask(t.Context(), "ch-1")
	var de *DependentsError
	if !errors.As(err, &de) || strings.Join(de.Dependents, ",") != "ch-2" {
		t.Fatalf("want dependents ch-2, got %v", err)
	}
	before := r.git("rev-parse", "main")
	ids, err := h.svc.RollbackWithDependents(t.Context(), []string{"ch-2", "ch-1"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "ch-2,ch-1" {
		t.Fatalf("ids %v", ids)
	}
	if r.git("rev-parse", "main^") != before {
		t.Fatal("want exactly one revert commit")
	}
	if got := r.show("main", "a.txt"); got != "a1\na2\na3\na4\na5" {
		t.Fatalf("a.txt %q", got)
	}
	if _, err := git(t.Context(), r.dir, "cat-file", "-e", "main:one.txt"); err == nil {
		t.Fatal("ch-1's file still there")
	}
	if r.show("main", "unrelated.txt") != "u" || r.git("status", "--porcelain") != "" || r.read("a.txt") != "a1\na2\na3\na4\na5\n" {
		t.Fatal("unrelated task or user checkout wrong")
	}
	if tr := r.git("log", "-1", "--format=%(trailers:key=Chorus-Revert,valueonly)", "main"); tr != "ch-1 ch-2" {
		t.Fatalf("trailer %q", tr)
	}
	snap := h.svc.Snapshot()
	if it, _ := item(snap, "ch-1"); it.Status != StatusReverted {
		t.Fatalf("ch-1 %s", it.Status)
	}

	// Re-land ch-1, fixed: its old commits plus a fix on top.
	r.git("branch", "agent/a/ch-1", m1+"^2")
	wt := filepath.Join(r.dir, ".worktrees", "a-ch-1-fix")
	r.git("worktree", "add", "-q", wt, "agent/a/ch-1")
	r.commitIn(wt, "[ch-1] fix", map[string]string{"one.txt": "1 fixed\n"})
	r.git("worktree", "remove", wt)
	h.enqueue(Request{TaskID: "ch-1", Branch: "agent/a/ch-1"})
	h.waitStatus("ch-1", StatusLanded)
	if got := r.show("main", "a.txt"); got != "a1\nch-1\na3\na4\na5" {
		t.Fatalf("a.txt after re-land %q", got)
	}
	if got := r.show("main", "one.txt"); got != "1 fixed" {
		t.Fatalf("one.txt after re-land %q", got)
	}
	// And it can be rolled back again.
	if _, err := h.svc.RollbackTask(t.Context(), "ch-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := git(t.Context(), r.dir, "cat-file", "-e", "main:one.txt"); err == nil {
		t.Fatal("one.txt back after second rollback")
	}
}

// A rollback whose result fails the quality commands leaves main alone.
func TestRollbackKeepsMainGreen(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	h := start(t, r, func(o *Options) { o.Quality = quality("test ! -f broken || test -f fix.txt") }, nil)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"fix.txt": "f"}, false)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
	r.write("broken", "x")
	r.git("add", "broken")
	r.git("commit", "-q", "-m", "user adds something that needs fix.txt")
	before := r.git("rev-parse", "main")
	if _, err := h.svc.RollbackTask(t.Context(), "ch-1"); err == nil || !strings.Contains(err.Error(), "fails") {
		t.Fatalf("want a quality failure, got %v", err)
	}
	if r.git("rev-parse", "main") != before {
		t.Fatal("main moved")
	}
}

func TestCheckpointsAndRollbackToCheckpoint(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	h := start(t, r, nil, nil)
	ck, err := h.svc.Checkpoint(t.Context(), "before autopilot")
	if err != nil || !strings.HasPrefix(ck, CheckpointPrefix) || !strings.HasSuffix(ck, "-before-autopilot") {
		t.Fatalf("%q %v", ck, err)
	}
	start := r.git("rev-parse", "main")
	for _, id := range []string{"ch-1", "ch-2"} {
		b, _ := r.agentBranch(id, "main", map[string]string{id + ".txt": id}, false)
		h.enqueue(Request{TaskID: id, Branch: b})
		h.waitStatus(id, StatusLanded)
	}
	list, err := h.svc.Checkpoints(t.Context())
	if err != nil || len(list) < 3 { // the manual one and two pre-merge ones
		t.Fatalf("%v %v", list, err)
	}
	r.write("README.md", "unrelated local edit\n")
	tip := r.git("rev-parse", "main")
	lost, err := h.svc.RollbackToCheckpoint(t.Context(), ck)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(lost, ",") != "ch-1,ch-2" {
		t.Fatalf("lost %v", lost)
	}
	if r.git("rev-parse", "HEAD") != start || r.read("README.md") != "unrelated local edit\n" {
		t.Fatal("not reset, or the user's edit was lost")
	}
	if _, err := os.Stat(filepath.Join(r.dir, "ch-1.txt")); !os.IsNotExist(err) {
		t.Fatal("ch-1.txt still in checkout")
	}
	// The previous tip is kept.
	if !strings.Contains(r.git("for-each-ref", "--format=%(objectname)", "refs/chorus/kept/main/"), tip) {
		t.Fatal("no backup of the previous tip")
	}
	// The queue goes on from the checkpoint without calling it a foreign move.
	b3, _ := r.agentBranch("ch-3", "main", map[string]string{"3.txt": "3"}, false)
	h.enqueue(Request{TaskID: "ch-3", Branch: b3})
	h.waitStatus("ch-3", StatusLanded)
	if h.svc.Snapshot().Stats.Paused {
		t.Fatal("paused")
	}
}

func TestPeriodicCheckpoint(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	h := start(t, r, func(o *Options) { o.Checkpoints = configCheckpoints(2) }, nil)
	for _, id := range []string{"ch-1", "ch-2", "ch-3"} {
		b, _ := r.agentBranch(id, "main", map[string]string{id + ".txt": id}, false)
		h.enqueue(Request{TaskID: id, Branch: b})
		h.waitStatus(id, StatusLanded)
	}
	out := r.git("for-each-ref", "--format=%(refname)", CheckpointPrefix)
	if strings.Count(out, "-periodic") != 1 || strings.Contains(out, "pre-merge") {
		t.Fatalf("checkpoints:\n%s", out)
	}
}

func configCheckpoints(n int) config.Checkpoints {
	return config.Checkpoints{Enabled: true, Periodic: n}
}

// A checkpoint is listed with the time it was taken, not its commit's
// date; rolling back to one at the target's tip is an error saying so,
// and the default (no checkpoint named) is the newest one that differs.
func TestCheckpointOwnTimeAndNotAtTip(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	when := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	h := start(t, r, func(o *Options) { o.Now = func() time.Time { return when } }, nil)
	old, err := h.svc.Checkpoint(t.Context(), "first")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.agentBranch("ch-1", "main", map[string]string{"1.txt": "1"}, false)
	h.enqueue(Request{TaskID: "ch-1", Branch: b})
	h.waitStatus("ch-1", StatusLanded)
	when = when.Add(time.Hour)
	atTip, err := h.svc.Checkpoint(t.Context(), "now")
	if err != nil {
		t.Fatal(err)
	}
	list, err := h.svc.Checkpoints(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	byRef := map[string]Checkpoint{}
	for _, c := range list {
		byRef[c.Ref] = c
	}
	if c := byRef[atTip]; !c.Time.Equal(when) || !c.AtTip {
		t.Fatalf("checkpoint at tip listed as %+v, want time %s and at tip", c, when)
	}
	if c := byRef[old]; !c.Time.Equal(when.Add(-time.Hour)) || c.AtTip {
		t.Fatalf("older checkpoint listed as %+v", c)
	}
	if list[0].Ref != atTip {
		t.Fatalf("not newest first: %+v", list)
	}
	tip := r.git("rev-parse", "main")
	if _, err := h.svc.RollbackToCheckpoint(t.Context(), atTip); !errors.Is(err, ErrNothingToRollBack) || !strings.Contains(err.Error(), "current tip") {
		t.Fatalf("rollback to the tip: %v", err)
	}
	if r.git("rev-parse", "main") != tip {
		t.Fatal("main moved")
	}
	lost, err := h.svc.RollbackToCheckpoint(t.Context(), "")
	if err != nil || strings.Join(lost, ",") != "ch-1" {
		t.Fatalf("default rollback: %v %v", lost, err)
	}
	if r.git("rev-parse", "main") == tip {
		t.Fatal("the default rollback changed nothing")
	}
}
