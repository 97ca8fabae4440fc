package orchestrator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
)

func (h *harness) do(c Command) {
	h.t.Helper()
	if err := h.eng.Do(context.Background(), c); err != nil {
		h.t.Fatalf("%s: %v", c.Kind, err)
	}
}

// Redirect: the agent leaves its task (back to open, work kept) and takes
// the other one.
func TestRedirect(t *testing.T) {
	h := newHarness(t, "@ prompt~first\nwrite a.txt x\nsignal PROGRESS 5\nhang\n@ *\nwrite b.txt y\ncommit second\nsignal COMPLETE\n", nil)
	a := h.task("first", beads.CreateOptions{})
	b := h.task("second", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: a})
	h.waitFor(kind(EvSignal, a))
	h.do(Command{Kind: CmdRedirect, AgentID: "script-" + a, TaskID: b})
	h.waitFor(kind(EvReleased, a))
	h.waitFor(kind(EvCompleted, b))
	if tk := h.get(a); tk.Status != beads.StatusOpen || tk.Assignee != "" {
		t.Fatalf("old task: %+v", tk)
	}
	if log := git(t, h.root, "log", "-1", "--format=%s", "agent/script/"+a); !strings.HasPrefix(log, "wip(") {
		t.Fatalf("old task's work not kept: %q", log)
	}
}

// Editing a running task restarts its agent with the new text.
func TestEditRestartsAgent(t *testing.T) {
	h := newHarness(t, "@ prompt~NEWTEXT\nwrite e.txt y\ncommit edited\nsignal COMPLETE\n@ *\nsignal PROGRESS 1\nhang\n", nil)
	id := h.task("to edit", beads.CreateOptions{Description: "old text"})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvSignal, id))
	desc := "NEWTEXT please"
	h.do(Command{Kind: CmdEdit, TaskID: id, Description: &desc})
	h.waitFor(kind(EvCompleted, id))
	if n := h.count(EvStarted); n != 2 {
		t.Fatalf("agent started %d times", n)
	}
	if tk := h.get(id); tk.Description != desc {
		t.Fatalf("description %q", tk.Description)
	}
}

// Kill all stops every agent, puts their tasks back and pauses autopilot.
func TestKillAllAndPauseResume(t *testing.T) {
	h := newHarness(t, "@ prompt~quick\nwrite q.txt y\ncommit q\nsignal COMPLETE\n@ *\nsignal PROGRESS 1\nhang\n", func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 2
	})
	a := h.task("slow one", beads.CreateOptions{Priority: 1})
	b := h.task("slow two", beads.CreateOptions{Priority: 1})
	q := h.task("quick", beads.CreateOptions{Priority: 3})
	h.start()
	h.waitFor(kind(EvSignal, a))
	h.waitFor(kind(EvSignal, b))
	h.do(Command{Kind: CmdKillAll})
	h.waitFor(kind(EvReleased, a))
	h.waitFor(kind(EvReleased, b))
	h.sync()
	if s := h.eng.Snapshot(); !s.Paused || len(s.Agents) != 0 {
		for _, ev := range h.log {
			t.Logf("%s %s %s", ev.Kind, ev.Task, ev.Text)
		}
		t.Fatalf("after kill-all: paused=%v agents=%v", s.Paused, s.Agents)
	}
	for _, id := range []string{a, b} {
		if tk := h.get(id); tk.Status != beads.StatusOpen {
			t.Fatalf("%s: %s", id, tk.Status)
		}
	}
	// Paused: nothing starts. Block the slow ones, resume: the quick one runs.
	h.do(Command{Kind: CmdBlock, TaskID: a, Text: "later"})
	h.do(Command{Kind: CmdBlock, TaskID: b, Text: "later"})
	h.sync()
	if n := len(h.eng.Snapshot().Agents); n != 0 {
		t.Fatalf("agents started while paused: %d", n)
	}
	h.do(Command{Kind: CmdResume})
	h.waitFor(kind(EvCompleted, q))
	if tk := h.get(a); tk.Status != beads.StatusBlocked || !strings.Contains(tk.Notes, "later") {
		t.Fatalf("blocked task: %+v", tk)
	}
}

// A task past completion.taskTimeout fails: blocked, labelled failed.
func TestTaskTimeoutFails(t *testing.T) {
	h := newHarness(t, "signal PROGRESS 1\nignore-term\nhang\n", func(c *config.Config) {
		c.Completion.TaskTimeout = 1
		c.Completion.StopGraceSeconds = 1
	})
	id := h.task("slow", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvSignal, id))
	// Move the start back instead of waiting a minute; the check is the
	// one the loop's ticker runs.
	if err := h.eng.do(context.Background(), func() {
		h.eng.st.Tasks[id].FirstStarted = time.Now().Add(-2 * time.Minute)
		h.eng.checkTimeouts()
	}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(EvFailed, id))
	tk := h.get(id)
	if tk.Status != beads.StatusBlocked || !tk.HasLabel(beads.LabelFailed) || !strings.Contains(tk.Notes, "timeout") {
		t.Fatalf("task: %+v", tk)
	}
}

// An agent stuck without commits raises an alert every stuckIterations.
func TestStuckAlert(t *testing.T) {
	h := newHarness(t, "exit 0\n", func(c *config.Config) {
		c.Completion.StuckIterations = 2
		c.Completion.MaxIterations = 3
	})
	id := h.task("stuck", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(func(e Event) bool { return e.Kind == EvAlert && strings.Contains(e.Text, "stuck") })
	if ev.Task != id {
		t.Fatalf("alert for %s", ev.Task)
	}
	h.waitFor(kind(EvFailed, id))
}

// A flood of output does not stall the agent or the engine.
func TestFloodingAgent(t *testing.T) {
	h := newHarness(t, "flood 5000000\nwrite f.txt y\ncommit flood\nsignal COMPLETE\n", nil)
	id := h.task("loud", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvCompleted, id))
}
