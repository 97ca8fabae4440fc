package merge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/hooks"
)

// The medium tier: a branch that carries a change the target already has
// (picked up by another task) and then builds on it conflicts in a 3-way
// merge, but rebases cleanly: it lands with no agent and no person, and
// its commits stay on the target's history.
func TestMediumRebaseClearsConflict(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"c.txt": "foo\n"}, false)
	b2, wt2 := r.agentBranch("ch-2", "main", map[string]string{"c.txt": "foo\n"}, true)
	r.commitIn(wt2, "[ch-2] more", map[string]string{"c.txt": "bar\n"})
	h := start(t, r, func(o *Options) { o.Merge.AgentResolve = false }, nil)
	ev := collect(t, h.svc)
	head2 := r.git("rev-parse", b2)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2})
	it := h.waitStatus("ch-2", StatusLanded, StatusWaitingHuman)
	if it.Status != StatusLanded {
		t.Fatalf("ch-2 %s: %s", it.Status, it.LastError)
	}
	if got := r.show("main", "c.txt"); got != "bar" {
		t.Fatalf("c.txt on main: %q", got)
	}
	r.git("merge-base", "--is-ancestor", head2, "main")
	if e := ev.wait(t, EventRebased); e.TaskID != "ch-2" {
		t.Fatalf("rebased event %+v", e)
	}
	if st := h.svc.Snapshot().Stats; st.Conflicts != 1 || st.MergesManual != 0 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".worktrees", "_rebase-ch-2")); !os.IsNotExist(err) {
		t.Fatalf("rebase worktree left behind: %v", err)
	}
}

// A same-line conflict does not rebase either: it goes to the back of the
// queue, is retried once the target moved, and reaches a person only when
// retrying cannot help.
func TestMediumDefersThenEscalates(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"a.txt": "a1\nONE\na3\na4\na5\n"}, false)
	b2, _ := r.agentBranch("ch-2", "main", map[string]string{"a.txt": "a1\nTWO\na3\na4\na5\n"}, false)
	b3, _ := r.agentBranch("ch-3", "main", map[string]string{"d.txt": "d\n"}, false)
	// ch-2's first attempt waits until ch-3 is queued behind it.
	queued := make(chan struct{})
	h := start(t, r, func(o *Options) {
		o.Merge.AgentResolve = false
		o.Hook = func(ctx context.Context, e hooks.Event, it Item) hooks.Answer {
			if e == hooks.PreMerge && it.TaskID == "ch-2" {
				<-queued
			}
			return hooks.Answer{}
		}
	}, nil)
	ev := collect(t, h.svc)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2})
	h.waitFor("ch-2 taken", func(s Snapshot) bool { return s.Current == "ch-2" })
	h.enqueue(Request{TaskID: "ch-3", Branch: b3})
	close(queued)
	it := h.waitStatus("ch-2", StatusWaitingHuman)
	h.waitStatus("ch-3", StatusLanded)
	d := ev.wait(t, EventDeferred)
	if d.TaskID != "ch-2" || !strings.Contains(d.Message, "conflict 1 of 3") || !strings.Contains(d.Message, "a.txt") {
		t.Fatalf("deferred event %+v", d)
	}
	// Deferred against ch-1's tip, retried against ch-3's, then sent to a
	// person because nothing moved the target any more.
	if it.Deferrals != 2 || it.Action == "" || strings.Join(it.ConflictFiles, ",") != "a.txt" {
		t.Fatalf("item %+v", it)
	}
	if r.show("main", "d.txt") != "d" || r.show("main", "a.txt") != "a1\nONE\na3\na4\na5" {
		t.Fatal("main lacks ch-3 or changed a.txt")
	}
	if st := h.svc.Snapshot().Stats; st.Conflicts != 1 {
		t.Fatalf("%d conflicts counted for one", st.Conflicts)
	}
}

// After a person moves the target outside Chorus and accepts the new tip,
// a branch that waited for a person over a conflict with the old tip is
// queued again against the new one and lands when it merges.
func TestAcceptTargetRequeuesWaitingBranches(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	initial := r.git("rev-parse", "main")
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"a.txt": "a1\nONE\na3\na4\na5\n"}, false)
	b2, _ := r.agentBranch("ch-2", "main", map[string]string{"a.txt": "a1\nTWO\na3\na4\na5\n"}, false)
	h := start(t, r, func(o *Options) {
		o.Merge.AgentResolve = false
		o.WatchInterval = 20 * time.Millisecond
	}, nil)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2})
	h.waitStatus("ch-2", StatusWaitingHuman)
	// The person takes ch-1 off main by force.
	r.git("reset", "-q", "--hard", initial)
	h.waitFor("the hold", func(s Snapshot) bool { return s.Stats.Moved != nil })
	if err := h.svc.AcceptTarget(""); err != nil {
		t.Fatal(err)
	}
	it := h.waitStatus("ch-2", StatusLanded, StatusWaitingHuman)
	if it.Status != StatusLanded {
		t.Fatalf("ch-2 %s after the new tip was accepted: %s", it.Status, it.LastError)
	}
	if got := r.show("main", "a.txt"); got != "a1\nTWO\na3\na4\na5" {
		t.Fatalf("a.txt on main: %q", got)
	}
}
