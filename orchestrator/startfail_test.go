package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// An agent whose command does not exist claims nothing, is not retried
// hot, and holds autopilot naming the command; once the command exists
// the next probe finds it and the run resumes by itself.
func TestMissingAgentCommandHoldsAutopilot(t *testing.T) {
	cmd := filepath.Join(t.TempDir(), "chorus-no-such-agent")
	h := newHarness(t, "write f-$CHORUS_TASK_ID.txt x\ncommit \"feat: work\"\nsignal COMPLETE\n", func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.Available["script"] = config.AgentProfile{Command: cmd, Args: []string{"scripted-agent", "--script", "agent.script"}, Prompt: config.PromptArg}
	})
	h.holdBackoff = 50 * time.Millisecond
	a := h.task("first", beads.CreateOptions{Priority: 1})
	b := h.task("second", beads.CreateOptions{Priority: 1})
	h.start()
	ev := h.waitFor(kind(EvHeld, ""))
	if !strings.Contains(ev.Text, "chorus-no-such-agent") || !strings.Contains(ev.Text, "the agent command is missing") {
		t.Fatalf("hold reason %q does not name the missing command", ev.Text)
	}
	h.waitFor(kind(EvProbe, "")) // a probe looks again, and finds nothing
	h.sync()
	if tk := h.get(a); tk.Status != beads.StatusOpen || tk.Assignee != "" {
		t.Fatalf("task %s was claimed: status %s, assignee %q", a, tk.Status, tk.Assignee)
	}
	if err := os.Symlink(testkit.Chorus(t), cmd); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(EvResumed, ""))
	h.waitFor(kind(EvCompleted, a))
	h.waitFor(kind(EvCompleted, b))
	if n := h.count(EvFailed) + h.count(EvBlocked); n != 0 {
		t.Fatalf("%d tasks failed or blocked\n%s", n, h.report())
	}
}

// An agent that cannot be started (the kernel refuses its executable) is
// retried with back-off, then its task is FAILED with the reason.
func TestUnstartableAgentBlocksTaskAfterRetries(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "not-a-program")
	// Executable bit, but no #! line and not a binary: exec fails.
	if err := os.WriteFile(bad, []byte{0x7f, 'X', 0, 0}, 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, "signal COMPLETE\n", func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Completion.MaxAgentErrors = 3
		c.Agents.Available["script"] = config.AgentProfile{Command: bad, Prompt: config.PromptArg}
	})
	a := h.task("doomed", beads.CreateOptions{Priority: 1})
	h.start()
	ev := h.waitFor(func(e Event) bool { return e.Kind == EvFailed && e.Task == a })
	if !strings.Contains(ev.Text, "cannot start") || !strings.Contains(ev.Text, "3 attempts") {
		t.Fatalf("block reason %q", ev.Text)
	}
	h.waitIdle()
	if n := h.count(EvAssigned); n != 3 {
		t.Fatalf("%d assignments, want 3 (one per allowed attempt)\n%s", n, h.report())
	}
	if tk := h.get(a); tk.Status != beads.StatusBlocked || !tk.HasLabel(beads.LabelFailed) {
		t.Fatalf("task status %s labels %v, want blocked and failed", tk.Status, tk.Labels)
	}
}

// A prompt longer than the kernel allows in one argument, with a NUL in the
// task text, still reaches the agent (through a file) and the task completes.
func TestHugePromptWithNULReachesAgent(t *testing.T) {
	script := `
run "echo done > out.txt"
commit "feat: work"
signal COMPLETE
`
	h := newHarness(t, script, func(c *config.Config) { c.Mode = config.ModeAutopilot })
	desc := strings.Repeat("lorem ipsum dolor sit amet ", 8000) + "\x00 needle-at-the-end"
	a := h.task("huge", beads.CreateOptions{Priority: 1, Description: desc})
	h.start()
	h.waitFor(kind(EvCompleted, a))
	logs, _ := filepath.Glob(filepath.Join(h.dir.Logs(), "*.prompt.md"))
	if len(logs) != 1 {
		t.Fatalf("prompt files %v, want one", logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil || !strings.Contains(string(b), "needle-at-the-end") || strings.ContainsRune(string(b), 0) {
		t.Fatalf("prompt file: %v, has needle %v", err, strings.Contains(string(b), "needle-at-the-end"))
	}
}

// A COMPLETE whose quality check is interrupted (Chorus stopped or killed
// during it) is checked again by the next session without spending an
// iteration; the agent is not asked to do its work again.
func TestCompleteSurvivesInterruptedCheck(t *testing.T) {
	script := `
@ iteration=1
run "echo done > out.txt"
commit "feat: work"
signal COMPLETE
@ *
exit 1
`
	h := newHarness(t, script, func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		// Blocks until the gate file exists: the first session is stopped
		// while it waits.
		c.QualityCommands = []config.QualityCommand{{Name: "gate", Command: `while [ ! -f "$GATE" ]; do sleep 0.05; done`, Required: true, Order: 1}}
	})
	gate := filepath.Join(t.TempDir(), "gate")
	t.Setenv("GATE", gate)
	id := h.task("checked", beads.CreateOptions{Priority: 1})
	h.start()
	for {
		h.sync()
		// The running check is named, with its start, for front ends.
		if a := h.eng.Snapshot().Agents["script-"+id]; a != nil && a.Status == AgentChecking && a.Check == "gate" && !a.CheckStarted.IsZero() {
			break
		}
		<-h.eng.Changed()
	}
	h.stop()
	st, err := LoadState(h.dir.State())
	if err != nil || st.Tasks[id] == nil || !st.Tasks[id].CompleteSignalled || st.Tasks[id].Iterations != 1 {
		t.Fatalf("after the interrupted check: %+v %v", st.Tasks[id], err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.waitFor(kind(EvCompleted, id))
	if n := h.count(EvIteration); n != 0 {
		t.Fatalf("%d iterations started after the restart; want 0 (the COMPLETE stands)\n%s", n, h.report())
	}
	if tk := h.get(id); tk.Status != beads.StatusClosed {
		t.Fatalf("status %s", tk.Status)
	}
}
