package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/agent/claudetrust"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// claudeProfile is the scripted agent under the name "claude" (a link),
// interactive: to the engine an interactive Claude Code with its config
// in home.
func claudeProfile(t *testing.T, home string) config.AgentProfile {
	link := filepath.Join(t.TempDir(), "claude")
	if err := os.Symlink(testkit.Chorus(t), link); err != nil {
		t.Fatal(err)
	}
	return config.AgentProfile{Command: link, Args: []string{"scripted-agent", "--script", "agent.script"},
		Prompt: config.PromptArg, Format: config.FormatTerminal, Env: []string{"HOME=" + home}}
}

// An interactive Claude in a repository Claude Code never trusted: the run
// says so once, with the fix, and autopilot starts no agent into the
// dialog. Once the user trusts the repository, its worktree is trusted for
// the agent (inherited) with no setting, and the task completes.
func TestClaudeTrustInheritedFromRepository(t *testing.T) {
	home := t.TempDir()
	script := "write work.txt done\ncommit \"feat: work\"\nsignal COMPLETE\nhang\n"
	h := newHarness(t, script, func(c *config.Config) {
		c.Agents.Available["claude"] = claudeProfile(t, home)
		c.Agents.Default = "claude"
		c.Mode = config.ModeAutopilot
	})
	id := h.task("needs a trusted claude", beads.CreateOptions{})
	h.start()
	h.waitFor(func(ev Event) bool { return ev.Kind == EvAlert && ev.Fields["trust"] != nil })
	h.waitIdle()
	alerts := 0
	for _, ev := range h.log {
		if ev.Kind == EvAlert && ev.Fields["trust"] == "claude" {
			alerts++
			if !strings.Contains(ev.Text, "has not trusted "+h.root) || !strings.Contains(ev.Text, "trustWorktrees") {
				t.Errorf("alert without the fix: %s", ev.Text)
			}
		}
	}
	if alerts != 1 || h.count(EvAssigned) != 0 {
		t.Fatalf("%d trust alerts, %d agents started\n%s", alerts, h.count(EvAssigned), h.report())
	}
	if tk := h.get(id); tk.Status != beads.StatusOpen || tk.Assignee != "" {
		t.Fatalf("task touched: %+v", tk)
	}
	h.stop()

	file := filepath.Join(home, ".claude.json")
	if err := claudetrust.Trust(file, h.root); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.waitFor(kind(EvCompleted, id))
	wt := filepath.Join(h.root, ".worktrees", "claude-"+id)
	if !claudetrust.Trusted(file, wt) {
		t.Fatalf("the worktree %s was not trusted", wt)
	}
	for _, ev := range h.events.Log {
		if ev.Kind == EvAlert && ev.Fields["trust"] != nil {
			t.Fatalf("a trust alert with the repository trusted: %s", ev.Text)
		}
	}
}

// A task blocked while its agent runs (a front end blocking a stuck agent
// for want of a person) goes straight to blocked: never released, so
// autopilot cannot claim it again in between.
func TestBlockedTaskNotReclaimed(t *testing.T) {
	h := newHarness(t, "signal PROGRESS 5\nhang\n", func(c *config.Config) { c.Mode = config.ModeAutopilot })
	id := h.task("waits for a person", beads.CreateOptions{})
	h.start()
	h.waitFor(kind(EvStarted, id))
	if err := h.eng.Do(context.Background(), Command{Kind: CmdBlock, TaskID: id, Text: "needs a human: trust dialog"}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(EvBlocked, id))
	h.waitIdle()
	if n := h.count(EvAssigned); n != 1 {
		t.Fatalf("assigned %d times\n%s", n, h.report())
	}
	if n := h.count(EvReleased); n != 0 {
		t.Fatalf("released before it was blocked\n%s", h.report())
	}
	if tk := h.get(id); tk.Status != beads.StatusBlocked || !strings.Contains(tk.Notes, "trust dialog") {
		t.Fatalf("task %+v", tk)
	}
}
