package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/chorus-dev/chorus/agent/claudetrust"
	"github.com/chorus-dev/chorus/agent/stuck"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
)

// envTweak adds KEY=VALUE pairs to a profile's environment (later ones win).
func envTweak(profile string, kv ...string) func(*config.Config) {
	return func(c *config.Config) { withEnv(c, profile, kv...) }
}

// closedURL is a local address nobody listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// needsHuman waits for the agent of task id to be shown NEEDS_HUMAN for
// cause, in an event and in the snapshot, and returns the snapshot's text.
func (h *harness) needsHuman(id string, cause stuck.Cause) string {
	h.t.Helper()
	ev := h.waitFor(func(e orchestrator.Event) bool { return e.Kind == orchestrator.EvNeedsHuman && e.Task == id })
	if ev.Fields["cause"] != string(cause) {
		h.t.Fatalf("needs human for %v, want %s: %s\n%s", ev.Fields["cause"], cause, ev.Text, h.report())
	}
	var text string
	h.waitSnap("NEEDS_HUMAN in the snapshot", func(s orchestrator.Snapshot) bool {
		a := s.Agents[ev.Agent]
		if a != nil && a.Status == orchestrator.AgentNeedsHuman && a.Stuck != "" && a.Alert == a.Stuck {
			text = a.Stuck
			return true
		}
		return false
	})
	return text
}

// Claude Code without credentials says so on its screen and waits: the
// agent is NEEDS_HUMAN with that reason, not "running" until the timeout.
func TestClaudeNotLoggedInNeedsHuman(t *testing.T) {
	h := newHarness(t, envTweak("claude", "ANTHROPIC_API_KEY="))
	id := h.task("say hello", beads.CreateOptions{})
	h.start()
	h.assign(id, "claude")
	if got := h.needsHuman(id, stuck.Login); !strings.Contains(got, "Not logged in · Please run /login") {
		t.Fatalf("cause %q", got)
	}
}

// A worktree Claude Code was never told to trust opens its trust dialog:
// NEEDS_HUMAN names the dialog and the folder.
func TestClaudeTrustDialogNeedsHuman(t *testing.T) {
	h := newHarness(t, nil)
	h.untrusted = true
	id := h.task("say hello", beads.CreateOptions{})
	h.start()
	h.assign(id, "claude")
	got := h.needsHuman(id, stuck.Dialog)
	if !strings.Contains(got, "trust the folder "+h.worktree("claude", id)) {
		t.Fatalf("cause %q", got)
	}
}

// With trustWorktrees on, the same untrusted setup never shows the dialog
// and the task completes; only the worktree's exact path was trusted.
func TestClaudeTrustWorktreesSkipsDialog(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.QualityCommands = quality
		p := c.Agents.Available["claude"]
		p.TrustWorktrees = true
		c.Agents.Available["claude"] = p
	})
	h.untrusted = true
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("echo hello > hello.txt && " + commit("feat: hello", id) + " && chorus signal COMPLETE")}},
		{Text: "Done."},
	}})
	h.start()
	h.assign(id, "claude")
	h.waitFor(kind(orchestrator.EvCompleted, id))
	if n := h.count(orchestrator.EvNeedsHuman); n != 0 {
		t.Fatalf("NEEDS_HUMAN raised %d times\n%s", n, h.report())
	}
	cfg := filepath.Join(h.home, ".claude.json")
	if !claudetrust.Trusted(cfg, h.worktree("claude", id)) || claudetrust.Trusted(cfg, h.root) || claudetrust.Trusted(cfg, "/") {
		t.Fatalf("trusted: want exactly the worktree")
	}
}

// With default config (no trustWorktrees) in a repository the user trusted
// in Claude Code, autopilot's interactive Claude works in its new worktree
// with no dialog: the repository's trust is carried to the worktree.
func TestClaudeRepositoryTrustInherited(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.QualityCommands = quality
		c.Mode = config.ModeAutopilot
	})
	h.untrusted = true
	h.trustClaude(h.root)
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("echo hello > hello.txt && " + commit("feat: hello", id) + " && chorus signal COMPLETE")}},
		{Text: "Done."},
	}})
	h.start()
	h.waitFor(kind(orchestrator.EvCompleted, id))
	for _, ev := range h.log {
		if ev.Kind == orchestrator.EvNeedsHuman || ev.Kind == orchestrator.EvAlert && ev.Fields["trust"] != nil {
			t.Fatalf("%s: %s\n%s", ev.Kind, ev.Text, h.report())
		}
	}
	if !claudetrust.Trusted(filepath.Join(h.home, ".claude.json"), h.worktree("claude", id)) {
		t.Fatal("the worktree was not trusted")
	}
}

// In a repository Claude Code never trusted, autopilot says so once with
// the fix and starts no interactive Claude into the dialog.
func TestClaudeUntrustedRepositoryPreflight(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.Mode = config.ModeAutopilot })
	h.untrusted = true
	id := h.task("say hello", beads.CreateOptions{})
	h.start()
	ev := h.waitFor(func(e orchestrator.Event) bool { return e.Kind == orchestrator.EvAlert && e.Fields["trust"] != nil })
	if !strings.Contains(ev.Text, "trustWorktrees") {
		t.Fatalf("alert %q", ev.Text)
	}
	h.waitSnap("idle", func(s orchestrator.Snapshot) bool { return s.Idle })
	if n := h.count(orchestrator.EvAssigned); n != 0 {
		t.Fatalf("%d agents started into the dialog\n%s", n, h.report())
	}
	if tk, err := h.store.Get(t.Context(), id); err != nil || tk.Status != beads.StatusOpen {
		t.Fatalf("task %+v %v", tk, err)
	}
}

// The model server answers 500 until told otherwise: NEEDS_HUMAN names the
// status within seconds; once the server recovers, Claude Code's retry
// succeeds, the verdict clears and the task completes.
func TestClaudePersistent500ThenRecovery(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.QualityCommands = quality })
	id := h.task("say hello", beads.CreateOptions{})
	var failing atomic.Bool
	failing.Store(true)
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Gen: func(modelserver.Request) modelserver.Turn {
			if failing.Load() {
				return modelserver.Turn{Status: 500}
			}
			return modelserver.Turn{Tools: []modelserver.Tool{modelserver.Bash("echo hello > hello.txt && " + commit("feat: hello", id) + " && chorus signal COMPLETE")}}
		}},
		{Text: "Done."},
	}})
	h.start()
	h.assign(id, "claude")
	if got := h.needsHuman(id, stuck.APIError); !strings.Contains(got, "500") {
		t.Fatalf("cause %q", got)
	}
	failing.Store(false)
	h.waitFor(kind(orchestrator.EvNeedsHumanCleared, id))
	h.waitFor(kind(orchestrator.EvCompleted, id))
}

// A model endpoint nobody listens on: NEEDS_HUMAN says it is unreachable.
func TestClaudeDeadEndpointNeedsHuman(t *testing.T) {
	h := newHarness(t, envTweak("claude", "ANTHROPIC_BASE_URL="+closedURL(t)))
	id := h.task("say hello", beads.CreateOptions{})
	h.start()
	h.assign(id, "claude")
	if got := h.needsHuman(id, stuck.Unreachable); !strings.Contains(got, "ECONNREFUSED") {
		t.Fatalf("cause %q", got)
	}
}

// Interactive Codex ends its turn on a 500 ("■ We're currently
// experiencing high demand…"): NEEDS_HUMAN with its words.
func TestCodexAPIErrorNeedsHuman(t *testing.T) {
	h := newHarness(t, nil)
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, After: &modelserver.Turn{Status: 500}})
	t.Cleanup(h.killCodexDaemons) // after h.stop, registered by start
	h.start()
	h.assign(id, "codex")
	if got := h.needsHuman(id, stuck.APIError); !strings.Contains(got, "high demand") {
		t.Fatalf("cause %q", got)
	}
}

// Headless Claude Code without credentials: the failure names the CLI's
// own reason instead of "exited with code 1".
func TestClaudeHeadlessFailureReason(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		withEnv(c, "claude-headless", "ANTHROPIC_API_KEY=")
		c.Completion.MaxAgentErrors = 1
	})
	id := h.task("say hello", beads.CreateOptions{})
	h.start()
	h.assign(id, "claude-headless")
	ev := h.waitFor(kind(orchestrator.EvAgentExit, id))
	if !strings.Contains(ev.Text, "Not logged in") {
		t.Fatalf("exit reported as %q\n%s", ev.Text, h.report())
	}
	rel := h.waitFor(kind(orchestrator.EvFailed, id))
	if !strings.Contains(rel.Text, "exited with code 1: Not logged in") {
		t.Fatalf("failed with %q\n%s", rel.Text, h.report())
	}
}

// Interactive Codex in a repository it was never told to trust asks
// first ("Trust this folder?"): NEEDS_HUMAN names the dialog.
func TestCodexTrustDialogNeedsHuman(t *testing.T) {
	h := newHarness(t, nil)
	h.untrusted = true
	id := h.task("say hello", beads.CreateOptions{})
	t.Cleanup(h.killCodexDaemons) // after h.stop, registered by start
	h.start()
	h.assign(id, "codex")
	if got := h.needsHuman(id, stuck.Dialog); !strings.Contains(got, "Codex asks whether to trust the folder "+h.worktree("codex", id)) {
		t.Fatalf("cause %q", got)
	}
}

// With trustWorktrees on, the same untrusted setup never shows Codex's
// dialog and the task completes; no trust is saved in the user's Codex
// config.
func TestCodexTrustWorktreesSkipsDialog(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.QualityCommands = quality
		p := c.Agents.Available["codex"]
		p.TrustWorktrees = true
		c.Agents.Available["codex"] = p
	})
	h.untrusted = true
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Gen: func(r modelserver.Request) modelserver.Turn {
			return codexRuns(r, func(chorus string) string {
				return "echo hello > hello.txt && " + commit("feat: hello", id) + " && " + chorus + " signal COMPLETE"
			})
		}},
		{Text: "Done."},
	}})
	cfgFile := filepath.Join(h.home, ".codex", "config.toml")
	before, _ := os.ReadFile(cfgFile)
	t.Cleanup(h.killCodexDaemons) // after h.stop, registered by start
	h.start()
	h.assign(id, "codex")
	h.waitFor(kind(orchestrator.EvCompleted, id))
	if n := h.count(orchestrator.EvNeedsHuman); n != 0 {
		t.Fatalf("NEEDS_HUMAN raised %d times\n%s", n, h.report())
	}
	// Codex writes its own first-run flags there; no trust was saved.
	if after, _ := os.ReadFile(cfgFile); strings.Contains(string(after), "projects") {
		t.Fatalf("the Codex config changed:\n--- before\n%s\n--- after\n%s", before, after)
	}
}

// killCodexDaemons ends the app-server Codex leaves running from the
// test's home after the CLI exits (it detaches from the agent's process
// group), so tests do not leak it.
func (h *harness) killCodexDaemons() {
	dir := filepath.Join(h.home, ".codex") + string(filepath.Separator)
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.HasPrefix(string(b), dir) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
