package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
)

// withEnv adds variables to a profile's environment.
func withEnv(c *config.Config, profile string, kv ...string) {
	p := c.Agents.Available[profile]
	p.Env = append(append([]string(nil), p.Env...), kv...)
	c.Agents.Available[profile] = p
}

// An agent that crashes mid-task: after one tool call the model server
// answers with errors until the CLI gives up and exits non-zero. With
// maxConsecutiveErrors 1 the task is FAILED with the CLI's reason, its
// worktree (and the half-done work) kept; retried (`r` on the task
// panel), the next run picks up from there with the handover and
// finishes.
func TestClaudeCrashMidTaskThenNextIteration(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.Completion.MaxAgentErrors = 1
		c.QualityCommands = []config.QualityCommand{{Name: "done", Command: "grep -q done partial.txt", Required: true, Order: 1}}
		withEnv(c, "claude-headless", "CLAUDE_CODE_MAX_RETRIES=1")
	})
	id := h.task("two halves", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("echo half > partial.txt")}},
	}, After: &modelserver.Turn{Status: 500}})
	h.srv.Add(modelserver.Script{Match: []string{id, "## Handover (iteration"}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("grep -q half partial.txt && echo done >> partial.txt && " + commit("feat: finish", id))}},
		{Text: "Finished the second half.\n<chorus>COMPLETE</chorus>"},
	}})
	h.start()
	h.assign(id, "claude-headless")
	exit := h.waitFor(kind(orchestrator.EvAgentExit, id))
	if code, _ := exit.Fields["exitCode"].(int); code == 0 {
		t.Fatalf("the CLI exited with %v; want a failure\n%s", exit.Fields, h.report())
	}
	if ev := h.waitFor(kind(orchestrator.EvFailed, id)); !strings.Contains(ev.Text, "exited with code") {
		t.Fatalf("failed with %q\n%s", ev.Text, h.report())
	}
	h.waitIdle()
	if tk := h.get(id); tk.Status != beads.StatusBlocked || !tk.HasLabel(beads.LabelFailed) {
		t.Fatalf("after the crash: %+v", tk)
	}
	errs := 0
	for _, r := range h.srv.Requests() {
		if r.Status == 500 {
			errs++
		}
	}
	if errs < 2 {
		t.Fatalf("the CLI gave up after %d errors; want it to retry once first\n%s", errs, h.report())
	}
	wt := h.worktree("claude-headless", id)
	if b, err := os.ReadFile(filepath.Join(wt, "partial.txt")); err != nil || strings.TrimSpace(string(b)) != "half" {
		t.Fatalf("the crashed iteration's work: %q %v", b, err)
	}
	if log := git(t, wt, "log", "-1", "--format=%s"); !strings.HasPrefix(log, "wip(") {
		t.Fatalf("no WIP commit after the crash: %q", log)
	}
	if err := h.eng.Do(context.Background(), orchestrator.Command{Kind: orchestrator.CmdRetry, TaskID: id}); err != nil {
		t.Fatal(err)
	}
	h.assign(id, "claude-headless")
	h.waitFor(kind(orchestrator.EvCompleted, id))
	h.waitIdle()
	if got := git(t, h.root, "show", "main:partial.txt"); got != "half\ndone" {
		t.Fatalf("main:partial.txt = %q", got)
	}
	last := 0
	for _, ev := range h.log {
		if ev.Kind == orchestrator.EvIteration && ev.Task == id {
			last, _ = ev.Fields["iteration"].(int)
		}
	}
	if last != 1 {
		t.Fatalf("finished in iteration %d; want 1 (a retry starts the count again)", last)
	}
}

// Two real agents change the same lines. The first lands; the second
// conflicts, an agent resolves it in its worktree (keeping both changes),
// and the merged result passes the quality commands before it lands.
func TestConflictResolvedByAgent(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.Agents.MaxParallel = 2
		c.Merge.AgentResolve = true
		c.QualityCommands = []config.QualityCommand{{Name: "no-markers", Command: "! grep -q '^[<>=]\\{7\\}' lines.txt && grep -q start lines.txt", Required: true, Order: 1}}
	})
	os.WriteFile(filepath.Join(h.root, "lines.txt"), []byte("start\n"), 0o644)
	git(t, h.root, "add", "lines.txt")
	git(t, h.root, "commit", "-q", "-m", "lines")
	a := h.task("add alpha", beads.CreateOptions{})
	b := h.task("add beta", beads.CreateOptions{})
	aLanded, bStarted := make(chan struct{}), make(chan struct{})
	h.srv.Add(modelserver.Script{Match: []string{a}, Turns: []modelserver.Turn{
		// Waits until beta's worktree exists, so beta branches before alpha lands.
		{Tools: []modelserver.Tool{modelserver.Bash("echo alpha >> lines.txt && " + commit("feat: alpha", a))}, Hold: bStarted},
		{Text: "<chorus>COMPLETE</chorus>"},
	}})
	h.srv.Add(modelserver.Script{Match: []string{b}, Turns: []modelserver.Turn{
		// Branched before alpha landed; commits after it did.
		{Tools: []modelserver.Tool{modelserver.Bash("echo beta >> lines.txt && " + commit("feat: beta", b))}, Hold: aLanded},
		{Text: "<chorus>COMPLETE</chorus>"},
	}})
	resolver := h.srv.Add(modelserver.Script{Match: []string{"Merge Conflict Resolution Task", b}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("printf 'start\\nalpha\\nbeta\\n' > lines.txt && git add lines.txt && git commit -q --no-edit")}},
		{Text: "Kept both lines.\n<chorus>RESOLVED</chorus>"},
	}})
	h.start()
	h.assign(a, "claude-headless")
	h.assign(b, "claude-headless")
	h.waitFor(kind(orchestrator.EvStarted, b))
	close(bStarted)
	h.waitFor(kind("merge_landed", a))
	close(aLanded)
	h.waitFor(kind("merge_conflict", b))
	h.waitFor(kind("merge_landed", b))
	h.waitIdle()
	if got := git(t, h.root, "show", "main:lines.txt"); got != "start\nalpha\nbeta" {
		t.Fatalf("main:lines.txt = %q\n%s", got, h.report())
	}
	if !h.served(resolver, 1) {
		t.Fatalf("no resolver agent ran\n%s", h.report())
	}
	for _, id := range []string{a, b} {
		if tk := h.get(id); tk.Status != beads.StatusClosed {
			t.Fatalf("%s: %+v", id, tk)
		}
	}
	// Main passes the quality command on the landed tree.
	tmp := t.TempDir()
	git(t, h.root, "worktree", "add", "-q", "--detach", tmp, "main")
	if out, err := runSh(tmp, h.cfg.QualityCommands[0].Command); err != nil {
		t.Fatalf("quality on main: %v %s", err, out)
	}
}
