package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
)

// A task over its token cap is stopped cleanly and blocked with the
// reason; with onExceeded "continue" autopilot goes on with the next task.
func TestTaskTokenBudgetBlocksAndAutopilotContinues(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 1
		c.Agents.Default = "claude-headless"
		c.Budget.TaskTokens = 10_000
		c.Budget.OnExceeded = "continue"
		c.QualityCommands = quality
	})
	big := h.task("expensive", beads.CreateOptions{Priority: 1})
	small := h.task("cheap", beads.CreateOptions{Priority: 2})
	never := make(chan struct{}) // the expensive agent would go on forever
	h.srv.Add(modelserver.Script{Match: []string{big}, Turns: []modelserver.Turn{
		// The cap is crossed only on the turn after the file is written: the
		// stop may come before the CLI runs the tool of the turn that
		// crossed it, and then that tool's work never existed.
		{Tools: []modelserver.Tool{modelserver.Bash("echo started > big.txt")}, Usage: modelserver.Usage{Input: 2000, Output: 50}},
		{Tools: []modelserver.Tool{modelserver.Bash("echo more >> big.txt")}, Usage: modelserver.Usage{Input: 40_000, Output: 500}},
		{Text: "still thinking", Hold: never},
	}})
	h.srv.Add(modelserver.Script{Match: []string{small}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("echo hello > hello.txt && " + commit("feat: hello", small))}, Usage: modelserver.Usage{Input: 2000, Output: 50}},
		{Text: "<chorus>COMPLETE</chorus>", Usage: modelserver.Usage{Input: 2100, Output: 10}},
	}})
	h.start()
	ev := h.waitFor(kind(orchestrator.EvBlocked, big))
	if !strings.Contains(ev.Text, "task token budget reached") {
		t.Fatalf("blocked with %q", ev.Text)
	}
	if tk := h.get(big); tk.Status != beads.StatusBlocked || !strings.Contains(tk.Notes, "task token budget reached") {
		t.Fatalf("task %+v", tk)
	}
	h.waitFor(kind(orchestrator.EvCompleted, small))
	h.waitIdle()
	snap := h.eng.Snapshot()
	if snap.Paused {
		t.Fatal("autopilot paused; onExceeded is continue")
	}
	if u := snap.Tasks[big].Usage; u.Input < 40_000 {
		t.Fatalf("usage of the stopped task: %+v", u)
	}
	if snap.Usage.Tokens() < snap.Tasks[big].Usage.Tokens()+h.completedUsage(small).Tokens() {
		t.Fatalf("session usage %+v", snap.Usage)
	}
	// The stopped agent's work is kept.
	if log := git(t, h.worktree("claude-headless", big), "log", "-1", "--format=%s"); !strings.HasPrefix(log, "wip(") {
		t.Fatalf("no WIP commit: %q", log)
	}
}

// A session cost cap, reached by an interactive Claude Code whose usage
// is read from its transcript: the agent is stopped, its task blocked,
// and autopilot stops without starting the next task.
func TestSessionDollarBudgetStopsAutopilot(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 1
		c.Budget.SessionDollars = 0.50
		c.Budget.OnExceeded = "stop"
	})
	first := h.task("first", beads.CreateOptions{Priority: 1})
	second := h.task("second", beads.CreateOptions{Priority: 2})
	never := make(chan struct{})
	h.srv.Add(modelserver.Script{Match: []string{first}, Turns: []modelserver.Turn{
		// 200k uncached input tokens at list price are well over $0.50.
		{Tools: []modelserver.Tool{modelserver.Bash("echo working > w.txt")}, Usage: modelserver.Usage{Input: 200_000, Output: 1000}},
		{Text: "still thinking", Hold: never},
	}})
	h.start()
	ev := h.waitFor(kind(orchestrator.EvBlocked, first))
	if !strings.Contains(ev.Text, "session cost budget reached") {
		t.Fatalf("blocked with %q\n%s", ev.Text, h.report())
	}
	h.waitIdle()
	snap := h.eng.Snapshot()
	if !snap.Paused {
		t.Fatal("autopilot still running after the session budget")
	}
	if snap.Usage.CostUSD < 0.50 {
		t.Fatalf("session usage %+v", snap.Usage)
	}
	if h.count(orchestrator.EvAssigned) != 1 {
		t.Fatalf("another task started after the session budget\n%s", h.report())
	}
	if tk := h.get(second); tk.Status != beads.StatusOpen {
		t.Fatalf("second task %+v", tk)
	}
	if err := h.eng.Do(context.Background(), orchestrator.Command{Kind: orchestrator.CmdAssign, TaskID: second}); err == nil {
		t.Fatal("a task was assigned after the session budget was spent")
	}
}

// An idle Chorus spends nothing: with agents configured and the model
// server up, an engine with no work makes no model call.
func TestIdleChorusMakesNoModelCalls(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.Mode = config.ModeAutopilot })
	h.start()
	h.waitIdle()
	if err := h.eng.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := h.srv.Requests(); len(r) != 0 {
		t.Fatalf("model requests from an idle Chorus: %+v", r)
	}
	if u := h.eng.Snapshot().Usage; !u.IsZero() {
		t.Fatalf("usage %+v", u)
	}
}
