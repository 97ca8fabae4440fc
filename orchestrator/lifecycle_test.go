package orchestrator

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
)

// Autopilot runs every ready task, dependents after their blockers, each
// agent editing, committing and signalling through `chorus signal`.
func TestAutopilotCompletesDependentTasks(t *testing.T) {
	script := `
run "echo work done > out-$CHORUS_TASK_ID.txt"
commit "feat: work"
signal COMPLETE
`
	h := newHarness(t, script, func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 2
		c.QualityCommands = []config.QualityCommand{{Name: "file", Command: "test -f out-$CHORUS_TASK_ID.txt", Required: true, Order: 1}}
	})
	a := h.task("first", beads.CreateOptions{Priority: 1})
	b := h.task("second", beads.CreateOptions{Priority: 1, Deps: []string{a}})
	c := h.task("third", beads.CreateOptions{Priority: 2})
	h.start()
	closed := map[string]bool{}
	for len(closed) < 3 {
		ev := h.waitFor(kind(EvCompleted, ""))
		if ev.Task == b && !closed[a] {
			t.Fatalf("%s ran before its blocker %s closed", b, a)
		}
		closed[ev.Task] = true
	}
	h.waitIdle()
	for _, id := range []string{a, b, c} {
		tk := h.get(id)
		if tk.Status != beads.StatusClosed {
			t.Errorf("%s: status %s", id, tk.Status)
		}
		// Landed on main with its trailer; worktree and branch removed only now.
		if log := git(t, h.root, "log", "--format=%B", "main"); !strings.Contains(log, "Chorus-Task: "+id) {
			t.Errorf("%s: not merged into main:\n%s", id, log)
		}
		if _, err := os.Stat(filepath.Join(h.root, ".worktrees", "script-"+id)); !os.IsNotExist(err) {
			t.Errorf("%s: worktree still there after landing: %v", id, err)
		}
	}
	for _, id := range []string{a, b, c} {
		if got := git(t, h.root, "show", "main:out-"+id+".txt"); got != "work done" {
			t.Errorf("main:out-%s.txt = %q", id, got)
		}
	}
	st, err := LoadState(h.dir.State())
	if err != nil || st.Stats.TasksCompleted != 3 || len(st.Agents) != 0 || st.Stats.MergesAuto != 3 {
		t.Fatalf("state: %+v %v", st, err)
	}
	if git(t, h.root, "status", "--porcelain", "--untracked-files=no") != "" {
		t.Error("the main checkout was changed")
	}
}

// A tag printed by the agent completes the task; the same tag inside the
// echoed prompt never does.
func TestTagCompletesEchoDoesNot(t *testing.T) {
	script := `
@ iteration=1
echo-prompt
exit 0
@ *
echo-prompt
write done.txt yes
commit "feat: done"
print "All done."
tag COMPLETE
hang
`
	h := newHarness(t, script, nil)
	id := h.task("tagged", beads.CreateOptions{})
	h.start()
	if err := h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(EvCompleted, id))
	its := 0
	for _, ev := range h.log {
		if ev.Kind == EvIteration {
			its++
		}
		if ev.Kind == EvSignal && ev.Fields["source"] == "output" && its < 2 {
			t.Fatalf("the echoed prompt counted as a signal: %+v", ev)
		}
	}
	if its != 2 {
		t.Fatalf("iterations: %d", its)
	}
	if h.get(id).Status != beads.StatusClosed {
		t.Fatal("not closed")
	}
}

// COMPLETE with a failing required quality command: the failure is typed
// into the live agent, which fixes it and signals again.
func TestQualityFailureFeedbackIntoLiveAgent(t *testing.T) {
	script := `
write result.txt bad
commit "first try"
tag COMPLETE
wait-input
write result.txt good
commit "fix"
tag COMPLETE
hang
`
	h := newHarness(t, script, func(c *config.Config) {
		c.QualityCommands = []config.QualityCommand{
			{Name: "lint", Command: "false", Required: false, Order: 1},
			{Name: "check", Command: "grep -q good result.txt", Required: true, Order: 2},
		}
	})
	id := h.task("needs two tries", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvCompleted, id))
	if n := h.count(EvStarted); n != 1 {
		t.Fatalf("the agent was started %d times; feedback should go into the live one", n)
	}
	if n := h.count(EvIteration); n != 2 {
		t.Fatalf("iterations: %d", n)
	}
	if h.get(id).Status != beads.StatusClosed {
		t.Fatal("not closed")
	}
}

// BLOCKED stops the agent and blocks the task with the reason.
func TestBlockedSignal(t *testing.T) {
	h := newHarness(t, "signal BLOCKED \"no API key\"\nhang\n", nil)
	id := h.task("blocked one", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvBlocked, id))
	tk := h.get(id)
	if tk.Status != beads.StatusBlocked || !strings.Contains(tk.Notes, "no API key") {
		t.Fatalf("task: %+v", tk)
	}
}

// A crash (non-zero exit) starts the next iteration with a handover; the
// task finishes there.
func TestCrashThenRecoverNextIteration(t *testing.T) {
	script := `
@ iteration=1
write partial.txt half
exit 3
@ *
commit "finish"
signal COMPLETE
`
	h := newHarness(t, script, nil)
	id := h.task("crashy", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	// Landed, the branch and worktree may be gone already: the work is
	// looked for on the target.
	h.waitFor(kind("merge_landed", id))
	if log := git(t, h.root, "log", "--format=%s", "main"); !strings.Contains(log, "finish") {
		t.Fatalf("log %q", log)
	}
	if got := git(t, h.root, "show", "main:partial.txt"); got != "half" {
		t.Fatalf("work of the crashed iteration lost: partial.txt on main is %q", got)
	}
}

// Reaching maxIterations fails the task: blocked, labelled failed, with
// the reason; autopilot does not pick it again.
func TestMaxIterationsFails(t *testing.T) {
	h := newHarness(t, "print nothing to see\nexit 0\n", func(c *config.Config) {
		c.Completion.MaxIterations = 2
		c.Mode = config.ModeAutopilot
	})
	id := h.task("never done", beads.CreateOptions{})
	h.start()
	h.waitFor(kind(EvFailed, id))
	h.waitIdle()
	tk := h.get(id)
	if tk.Status != beads.StatusBlocked || !tk.HasLabel(beads.LabelFailed) || !strings.Contains(tk.Notes, "maxIterations") {
		t.Fatalf("task: %+v", tk)
	}
	if n := h.count(EvAssigned); n != 1 {
		t.Fatalf("assigned %d times", n)
	}
	// Paused first: autopilot would otherwise take the reopened task at
	// once, and the test would see it in progress.
	h.do(Command{Kind: CmdPause})
	if err := h.eng.Do(context.Background(), Command{Kind: CmdRetry, TaskID: id}); err != nil {
		t.Fatal(err)
	}
	if tk := h.get(id); tk.Status != beads.StatusOpen || tk.HasLabel(beads.LabelFailed) {
		t.Fatalf("after retry: %+v", tk)
	}
}

// Stopping an agent puts its task back to open with no assignee and keeps
// uncommitted work as a WIP commit.
func TestStopKeepsWork(t *testing.T) {
	h := newHarness(t, "write draft.txt wip\nsignal PROGRESS 10\nhang\n", nil)
	id := h.task("to stop", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvStarted, id))
	agent := "script-" + id
	h.waitFor(kind(EvSignal, id))
	h.sync()
	if a := h.eng.Snapshot().Agents[agent]; a == nil || a.Progress != 10 {
		t.Fatalf("progress not recorded: %+v", a)
	}
	if err := h.eng.Do(context.Background(), Command{Kind: CmdStop, AgentID: agent}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(EvReleased, id))
	tk := h.get(id)
	if tk.Status != beads.StatusOpen || tk.Assignee != "" {
		t.Fatalf("task: %+v", tk)
	}
	if log := git(t, h.root, "log", "-1", "--format=%s", "agent/script/"+id); !strings.HasPrefix(log, "wip(") {
		t.Fatalf("no WIP commit: %q", log)
	}
}

// NEEDS_HELP waits for a human; the answer is typed into the live agent.
func TestNeedsHelpAnswered(t *testing.T) {
	script := `
signal NEEDS_HELP "which colour?"
wait-input
write colour.txt blue
commit "painted"
signal COMPLETE
hang
`
	h := newHarness(t, script, nil)
	id := h.task("ask", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(kind(EvNeedsHelp, id))
	if ev.Text != "which colour?" {
		t.Fatalf("question %q", ev.Text)
	}
	if err := h.eng.Do(context.Background(), Command{Kind: CmdAnswer, AgentID: ev.Agent, Text: "blue"}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(EvCompleted, id))
	h.sync()
	if s := h.eng.Snapshot(); len(s.Agents) != 0 {
		t.Fatalf("agents left: %+v", s.Agents)
	}
}

// After a crash of Chorus itself, a restart puts the dead agent's task back
// to open and keeps its worktree.
func TestRecoverReleasesDeadAgentsTask(t *testing.T) {
	h := newHarness(t, "hang\n", nil)
	id := h.task("orphan", beads.CreateOptions{})
	in, err := h.dir.Instance()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Claim(context.Background(), id, ActorPrefix(in.ID)+"script-"+id); err != nil {
		t.Fatal(err)
	}
	st := newState(config.ModeSemiAuto)
	st.Agents["script-"+id] = &AgentState{ID: "script-" + id, TaskID: id, PID: 999999, PStart: 1}
	if err := st.save(h.dir.State()); err != nil {
		t.Fatal(err)
	}
	h.start()
	if tk := h.get(id); tk.Status != beads.StatusOpen || tk.Assignee != "" {
		t.Fatalf("task after recovery: %+v", tk)
	}
	if s := h.eng.Snapshot(); len(s.Agents) != 0 {
		t.Fatalf("agents: %+v", s.Agents)
	}
}

// An agent that resets its branch behind the tip Chorus recorded: the old
// tip is kept under refs/chorus/kept/ so its commit stays reachable.
func TestRewoundBranchTipKept(t *testing.T) {
	script := `
run "m=$(git rev-parse --git-dir)/chorus-test-second; if [ -f $m ]; then git reset -q --hard HEAD~1; else touch $m; echo x > a.txt; git add a.txt; git -c user.name=a -c user.email=a@a commit -q -m 'work to lose'; fi"
exit 0
`
	h := newHarness(t, script, func(c *config.Config) {
		c.Completion.MaxIterations = 3
	})
	id := h.task("rewinds", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(func(ev Event) bool {
		return ev.Kind == EvAlert && ev.Task == id && strings.Contains(ev.Text, "refs/chorus/kept/")
	})
	refs := strings.Fields(git(t, h.root, "for-each-ref", "--format=%(refname)", "refs/chorus/kept/"+id+"/"))
	if len(refs) != 1 || !strings.HasSuffix(refs[0], "-rewound") {
		t.Fatalf("kept refs: %v", refs)
	}
	if got := git(t, h.root, "log", "-1", "--format=%s", refs[0]); got != "work to lose" {
		t.Fatalf("kept %q", got)
	}
}

// With no check before the landing, a finished agent's slot is kept until
// its task has landed: the next task's agent starts from a target that
// holds the last one's work (and its start does not compete with the
// landing).
func TestNextAgentStartsAfterTheLanding(t *testing.T) {
	h := newHarness(t, "write f-$CHORUS_TASK_ID.txt work\ncommit \"feat: work\"\nsignal COMPLETE\n", func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 1
	})
	ids := []string{h.task("first", beads.CreateOptions{Priority: 1}), h.task("second", beads.CreateOptions{Priority: 1}),
		h.task("third", beads.CreateOptions{Priority: 1})}
	h.start()
	for _, id := range ids {
		h.waitFor(kind("merge_landed", id))
	}
	h.waitIdle()
	// main's merges, newest first: each task's branch holds the merge before it.
	merges := strings.Fields(git(t, h.root, "log", "--first-parent", "--merges", "--format=%H", "main"))
	if len(merges) != len(ids) {
		t.Fatalf("%d merges on main, want %d", len(merges), len(ids))
	}
	for i := 0; i+1 < len(merges); i++ {
		cmd := exec.Command("git", "-C", h.root, "merge-base", "--is-ancestor", merges[i+1], merges[i]+"^2")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("the task of %s started before %s landed: %v %s\n%s", merges[i][:10], merges[i+1][:10], err, out, h.report())
		}
	}
}
