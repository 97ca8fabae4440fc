package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/worktree"
)

func TestJudgeComplete(t *testing.T) {
	plain := signal.Signal{Type: signal.Complete}
	why := signal.Signal{Type: signal.Complete, Payload: "nothing to change: already there"}
	many := make([]string, 25)
	for i := range many {
		many[i] = fmt.Sprintf("f%02d", i)
	}
	for _, c := range []struct {
		name       string
		w          worktree.Work
		s          signal.Signal
		gate       bool
		noChange   string
		refuseHas  []string
		refuseLack []string
	}{
		{name: "committed work", w: worktree.Work{Committed: true}, s: plain, gate: true},
		{name: "committed work, reason given anyway", w: worktree.Work{Committed: true}, s: why, gate: true},
		{name: "nothing at all", s: plain, refuseHas: []string{"nothing to merge", "agent/x/t-1", "nothing to change: <why>"}},
		{name: "nothing, with a reason", s: why, noChange: "nothing to change: already there"},
		{name: "a scratch file only", w: worktree.Work{Uncommitted: []string{"scratch.txt"}}, s: plain,
			refuseHas: []string{"1 file(s)", "scratch.txt", "Commit the files that belong", "delete the rest"}},
		{name: "a scratch file and a reason", w: worktree.Work{Uncommitted: []string{"scratch.txt"}}, s: why,
			refuseHas: []string{"scratch.txt"}},
		{name: "committed plus uncommitted", w: worktree.Work{Committed: true, Uncommitted: []string{"a.go", "notes.tmp"}}, s: plain,
			refuseHas: []string{"2 file(s)", "a.go, notes.tmp"}},
		{name: "many uncommitted", w: worktree.Work{Uncommitted: many}, s: plain,
			refuseHas: []string{"25 file(s)", "f19", "and 5 more"}, refuseLack: []string{"f20"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := judgeComplete(c.w, c.s, "agent/x/t-1")
			if v.gate != c.gate || v.noChange != c.noChange {
				t.Fatalf("verdict %+v", v)
			}
			if (v.refuse != "") != (c.refuseHas != nil) || (v.refuse != "") != (v.alert != "") {
				t.Fatalf("verdict %+v", v)
			}
			for _, s := range c.refuseHas {
				if !strings.Contains(v.refuse, s) {
					t.Errorf("refusal lacks %q: %s", s, v.refuse)
				}
			}
			for _, s := range c.refuseLack {
				if strings.Contains(v.refuse, s) {
					t.Errorf("refusal has %q: %s", s, v.refuse)
				}
			}
		})
	}
}

// refusals returns the uncommitted files named by each COMPLETE refusal of
// a task, in order.
func (h *harness) refusals(task string) [][]string {
	var out [][]string
	for _, ev := range h.log {
		if ev.Kind == EvAlert && ev.Task == task && strings.HasPrefix(ev.Text, "COMPLETE refused") {
			var files []string
			if l, ok := ev.Fields["uncommitted"].([]string); ok {
				files = l
			}
			out = append(out, files)
		}
	}
	return out
}

// A COMPLETE whose only change is an untracked scratch file is refused,
// the file named to the agent and never committed for it; nothing lands.
func TestCompleteScratchFileOnlyRefused(t *testing.T) {
	h := newHarness(t, `
write scratch.txt "thinking out loud"
signal COMPLETE
wait-input
run "until [ -f $CHORUS_DIR/told ]; do sleep 0.05; done"
signal BLOCKED "gave up"
hang
`, nil)
	id := h.task("scratch only", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	h.waitScreen("script-"+id, "received:")
	if sc := h.eng.Screen("script-" + id); !strings.Contains(strings.ReplaceAll(sc.AllText(), "\n", ""), "not committed: scratch.txt") {
		t.Fatalf("the agent was not told which file\n%s", h.report())
	}
	if err := os.WriteFile(filepath.Join(h.dir.Path, "told"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(EvBlocked, id))
	if r := h.refusals(id); len(r) != 1 || !slices.Equal(r[0], []string{"scratch.txt"}) {
		t.Fatalf("refusals %q\n%s", r, h.report())
	}
	if tk := h.get(id); tk.Status == beads.StatusClosed {
		t.Fatalf("task closed: %+v", tk)
	}
	if n := h.count(EvMergeQueued); n != 0 {
		t.Fatalf("a merge was queued\n%s", h.report())
	}
	if _, err := os.Stat(filepath.Join(h.root, "scratch.txt")); err == nil {
		t.Fatal("the scratch file reached the checkout")
	}
	if out := git(t, h.root, "log", "--format=%s", "main"); strings.Contains(out, "final changes") {
		t.Fatalf("main has a commit made for the agent:\n%s", out)
	}
}

// A branch that only fast-forwarded to the target (another task's landed
// commit, nothing of its own) is refused as nothing to merge, though its
// worktree's HEAD moved since it was made.
func TestCompleteFastForwardOnlyRefused(t *testing.T) {
	h := newHarness(t, "", func(c *config.Config) { c.Agents.MaxParallel = 2 })
	a := h.task("lands first", beads.CreateOptions{})
	b := h.task("only follows main", beads.CreateOptions{})
	script := fmt.Sprintf(`
@ task=%s
write a.txt "from a"
commit "feat: a"
run "while [ ! -f $CHORUS_DIR/b-started ]; do sleep 0.05; done"
signal COMPLETE
hang
@ task=%s
run "touch $CHORUS_DIR/b-started"
run "until git cat-file -e main:a.txt 2>/dev/null; do sleep 0.05; done"
run "git merge -q --ff-only main"
signal COMPLETE
wait-input
signal BLOCKED "nothing of mine"
hang
`, a, b)
	if err := os.WriteFile(filepath.Join(h.root, "agent.script"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: a})
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: b})
	h.waitFor(kind(EvBlocked, b))
	if r := h.refusals(b); len(r) != 1 || r[0] != nil {
		t.Fatalf("refusals %q\n%s", r, h.report())
	}
	if tk := h.get(b); tk.Status == beads.StatusClosed {
		t.Fatalf("task closed as done: %+v\n%s", tk, h.report())
	}
	for _, ev := range h.log {
		if (ev.Kind == EvCompleted || ev.Kind == EvMergeQueued) && ev.Task == b {
			t.Fatalf("%s for the fast-forwarded branch\n%s", ev.Kind, h.report())
		}
	}
}

// Committed work with an uncommitted file beside it: the COMPLETE is
// refused naming the file; once the agent deletes it, the next COMPLETE
// lands the commit alone.
func TestCompleteUncommittedBesideCommitted(t *testing.T) {
	h := newHarness(t, `
write work.txt done
commit "feat: the work"
write notes.tmp "half a thought"
append work.txt "an edit not committed"
signal COMPLETE
wait-input
run "rm notes.tmp && git checkout -- work.txt"
signal COMPLETE
hang
`, nil)
	id := h.task("work and leftovers", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvCompleted, id))
	if r := h.refusals(id); len(r) != 1 || !slices.Equal(r[0], []string{"notes.tmp", "work.txt"}) && !slices.Equal(r[0], []string{"work.txt", "notes.tmp"}) {
		t.Fatalf("refusals %q\n%s", r, h.report())
	}
	if n := h.count(EvStarted); n != 1 {
		t.Fatalf("started %d times; the refusal belongs in the live agent\n%s", n, h.report())
	}
	h.waitIdle()
	if got := git(t, h.root, "show", "main:work.txt"); got != "done" {
		t.Fatalf("main:work.txt = %q", got)
	}
	if out := git(t, h.root, "ls-tree", "-r", "--name-only", "main"); strings.Contains(out, "notes.tmp") {
		t.Fatalf("the leftover landed:\n%s", out)
	}
}

// A run stopped with a scratch file left: the file is saved as a WIP
// commit while the task waits, and uncommitted again when the task runs
// next, so a COMPLETE from that run is refused naming the file, never
// counted as the task's work; the WIP commit stays kept; nothing lands.
func TestCompleteAfterStopLeftoversRefused(t *testing.T) {
	h := newHarness(t, `
@ prompt~SECOND-RUN
signal COMPLETE
wait-input
signal BLOCKED "leftovers only"
hang
@ *
write scratch.txt "thinking out loud"
signal PROGRESS 5
hang
`, nil)
	id := h.task("stopped with a scratch file", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvSignal, id))
	h.do(Command{Kind: CmdStop, AgentID: "script-" + id})
	h.waitFor(kind(EvReleased, id))
	branch := "agent/script/" + id
	wip := git(t, h.root, "rev-parse", branch)
	if log := git(t, h.root, "log", "-1", "--format=%s", branch); !strings.HasPrefix(log, "wip(") {
		t.Fatalf("the stopped run's work was not saved: %q", log)
	}
	desc := "SECOND-RUN: finish it"
	h.do(Command{Kind: CmdEdit, TaskID: id, Description: &desc})
	h.do(Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvBlocked, id))
	if r := h.refusals(id); len(r) != 1 || !slices.Equal(r[0], []string{"scratch.txt"}) {
		t.Fatalf("refusals %q\n%s", r, h.report())
	}
	if n := h.count(EvMergeQueued); n != 0 {
		t.Fatalf("a merge was queued\n%s", h.report())
	}
	if out := git(t, h.root, "for-each-ref", "--format=%(objectname)", "refs/chorus/kept/"); !strings.Contains(out, wip) {
		t.Fatalf("the WIP commit %s is not kept:\n%s", wip, out)
	}
}

// A COMPLETE from a worktree whose git state cannot be read (its .git
// file torn) is refused, not passed to the gate, where a branch read as
// nothing would "land" with the work left behind; once the worktree reads
// again, the next COMPLETE lands the commit.
func TestCompleteUnreadableWorktreeRefused(t *testing.T) {
	h := newHarness(t, `
write a.txt "from a"
commit "feat: a"
run "mv .git .git.kept && printf 'torn' > .git"
signal COMPLETE
wait-input
run "rm .git && mv .git.kept .git"
signal COMPLETE
hang
`, nil)
	id := h.task("torn worktree", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvCompleted, id))
	if r := h.refusals(id); len(r) != 1 {
		t.Fatalf("refusals %q\n%s", r, h.report())
	}
	refused := false
	for _, ev := range h.log {
		if ev.Task != id {
			continue
		}
		refused = refused || ev.Kind == EvAlert
		if ev.Kind == EvMergeQueued && !refused {
			t.Fatalf("a merge was queued before the refusal\n%s", h.report())
		}
	}
	if got := git(t, h.root, "show", "main:a.txt"); got != "from a" {
		t.Fatalf("main:a.txt = %q\n%s", got, h.report())
	}
}
