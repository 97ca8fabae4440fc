package orchestrator

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// `chorus ask` from an agent: the question and its options are recorded
// on the agent; an answer from a front end (a number) reaches the asking
// process as the option's text, and the agent goes on.
func TestAskAnsweredFromFrontEnd(t *testing.T) {
	h := newHarness(t, `
run "chorus ask 'Pick a colour' --option red --option blue > pick.txt"
commit "feat: picked"
signal COMPLETE
`, nil)
	id := h.task("colour", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(kind(EvNeedsHelp, id))
	if ev.Text != "Pick a colour" {
		t.Fatalf("question %q", ev.Text)
	}
	_ = h.eng.Sync(context.Background())
	a := h.eng.Snapshot().Agents[ev.Agent]
	if a == nil || a.Status != AgentNeedsHelp || strings.Join(a.Options, "|") != "red|blue" || a.QuestionID == "" {
		t.Fatalf("agent %+v", a)
	}
	if err := h.eng.Do(context.Background(), Command{Kind: CmdAnswer, AgentID: ev.Agent, Text: "3"}); err == nil {
		t.Fatal("option 3 of 2 was accepted")
	}
	if err := h.eng.Do(context.Background(), Command{Kind: CmdAnswer, AgentID: ev.Agent, Text: "2"}); err != nil {
		t.Fatal(err)
	}
	if got := h.waitFor(kind(EvAnswered, id)); got.Text != "blue" {
		t.Fatalf("answered %q", got.Text)
	}
	h.waitFor(kind(EvCompleted, id))
	h.waitIdle()
	if got := git(t, h.root, "show", "main:pick.txt"); got != "blue" {
		t.Fatalf("the agent got %q", got)
	}
}

// A question whose asking agent died is dropped: the next iteration does
// not inherit it.
func TestAskDroppedWhenAgentDies(t *testing.T) {
	h := newHarness(t, `
@ iteration=1
run "chorus ask 'Pick' --option a &"
hang
@ *
print "second iteration"
hang
`, nil)
	id := h.task("dies", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(kind(EvNeedsHelp, id))
	_ = h.eng.Sync(context.Background())
	a := h.eng.Snapshot().Agents[ev.Agent]
	if a == nil || a.QuestionID == "" || a.PID == 0 {
		t.Fatalf("agent %+v", a)
	}
	if err := syscall.Kill(a.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.waitFor(func(e Event) bool { return e.Kind == EvIteration && e.Task == id && e.Fields["iteration"] == 2 })
	_ = h.eng.Sync(context.Background())
	a = h.eng.Snapshot().Agents[ev.Agent]
	if a == nil || a.QuestionID != "" || a.Question != "" || a.Status == AgentNeedsHelp {
		t.Fatalf("the dead agent's question survived: %+v", a)
	}
}

// Files an agent can put where Chorus reads never stall it: a FIFO, then
// a link to /dev/zero, put in place of the answer to the agent's pending
// question (the engine reads it on its loop, the asking process too), are
// refused at once, and the agent's next signal still completes its task.
func TestAnswerFifoAndDevZeroLeaveSignallingWorking(t *testing.T) {
	h := newHarness(t, `
run "chorus ask 'First?' --option a > ask1.out 2>&1; echo $? > ask1.code"
run "chorus ask 'Second?' --option a > ask2.out 2>&1; echo $? > ask2.code"
commit "feat: asked"
signal COMPLETE
hang
`, nil)
	id := h.task("asks", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	for i, plant := range []func(path string) error{
		func(p string) error { return syscall.Mkfifo(p, 0o600) },
		func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		ev := h.waitFor(func(e Event) bool {
			return e.Kind == EvNeedsHelp && e.Task == id && e.Text == []string{"First?", "Second?"}[i]
		})
		_ = h.eng.Sync(context.Background())
		a := h.eng.Snapshot().Agents[ev.Agent]
		if a == nil || a.QuestionID == "" {
			t.Fatalf("agent %+v", a)
		}
		if err := plant(signal.AnswerPath(h.dir.Path, a.QuestionID)); err != nil {
			t.Fatal(err)
		}
	}
	// The worktree goes once the work lands: read what the agent
	// committed from the target branch.
	h.waitFor(kind("merge_landed", id))
	for _, n := range []string{"ask1", "ask2"} {
		out := testkit.Git(t, h.root, "show", "main:"+n+".out")
		if !strings.Contains(out, "refused") {
			t.Errorf("%s: the asking process read %q", n, out)
		}
	}
}
